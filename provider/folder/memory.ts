import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/**
 * V8 lets the heap grow to several times what is live before it collects, so a folder of 100,000
 * entries held each finished phase's texts and maps (hundreds of MB) into the next. From this many
 * entries a phase ends with a full collection (some 0.1 s at 100,000), keeping the peak near what
 * is live.
 */
export const RECLAIM_FROM = 10_000;

/** A phase that sends also collects after each this many entries: V8 let 100,000 uploads' garbage reach 400 MB. */
export const RECLAIM_EVERY = 5_000;

let collect: (() => void) | null | undefined;

/** A full collection, after a phase over `entries` entries, if they are that many. */
export function reclaimAfter(entries: number): void {
  if (entries < RECLAIM_FROM) return;
  if (collect === undefined) {
    // The collector is exposed to a new context only: the process's own globals stay as they are.
    try {
      setFlagsFromString("--expose-gc");
      collect = runInNewContext("gc") as () => void;
    } catch {
      collect = null;
    }
  }
  collect?.();
}
