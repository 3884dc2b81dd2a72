import { expect, it } from "vitest";
import { RECLAIM_EVERY, RECLAIM_FROM, reclaimAfter, reclaimWhileSending } from "../../../provider/folder/memory";

/** A phase over a large folder ends with a full collection: what it no longer holds is freed then, not when V8 would choose. */
it("reclaimAfter a large folder's phase collects what nothing holds any more", async () => {
  let dropped: object | undefined = { texts: "x".repeat(1_000_000) };
  const ref = new WeakRef(dropped);
  dropped = undefined;
  // A WeakRef made in this turn keeps its target until the turn ends.
  await new Promise((resolve) => setTimeout(resolve, 0));
  reclaimAfter(RECLAIM_FROM);
  expect(ref.deref()).toBeUndefined();
});

/** A dropped megabyte, and whether it is gone: what a collection frees. */
async function droppedText(): Promise<() => boolean> {
  let dropped: object | undefined = { texts: "y".repeat(1_000_000) };
  const ref = new WeakRef(dropped);
  dropped = undefined;
  await new Promise((resolve) => setTimeout(resolve, 0));
  return () => ref.deref() === undefined;
}

it("the phases of a folder's parts count together: two halves of RECLAIM_FROM collect as one whole does", async () => {
  const gone = await droppedText();
  reclaimAfter(RECLAIM_FROM / 2);
  reclaimAfter(RECLAIM_FROM / 2);
  expect(gone()).toBe(true);
});

it("entries sent count over the process: the RECLAIM_EVERYth collects, whichever folder or part sends it", async () => {
  const gone = await droppedText();
  for (let i = 0; i < RECLAIM_EVERY; i++) reclaimWhileSending();
  expect(gone()).toBe(true);
});
