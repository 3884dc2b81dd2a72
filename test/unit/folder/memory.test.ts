import { expect, it } from "vitest";
import { RECLAIM_FROM, reclaimAfter } from "../../../provider/folder/memory";

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
