import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/**
 * V8 lets the heap grow to several times what is live before it collects, so a folder of 100,000
 * entries held each finished phase's texts and maps (hundreds of MB) into the next. Once phases
 * over this many entries have ended, counted over the process (every folder and part together: 20
 * parts of 5,000 make as much garbage as one folder of 100,000, in 20 times the phases), the next
 * ends with a full collection (some 0.1 s at 100,000), keeping the peak near what is live.
 */
export const RECLAIM_FROM = 100_000;

/** Sending also collects after each this many entries sent by the process: V8 let 100,000 uploads' garbage reach 400 MB. */
export const RECLAIM_EVERY = 5_000;

let collect: (() => void) | null | undefined;
/** Entries of the phases ended since the last collection, and entries sent. */
let ended = 0;
let sent = 0;

function collectNow(): void {
  ended = 0;
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

/** Once a phase over `entries` entries has ended: a full collection, if the phases since the last reach `RECLAIM_FROM` entries. */
export function reclaimAfter(entries: number): void {
  ended += entries;
  if (ended >= RECLAIM_FROM) collectNow();
}

/** Once an entry is sent (its upload's garbage outlives the young generation while requests wait): every `RECLAIM_EVERY`th collects. */
export function reclaimWhileSending(): void {
  if (++sent % RECLAIM_EVERY === 0) collectNow();
}
