import { afterEach, describe, expect, it, vi } from "vitest";
import { Moves, WAIT_MS } from "../../../provider/folder/moves";
import type { StoredFileState } from "../../../provider/file/schema";

/** The pool of entries a folder's resources hand each other, and a taking part's wait for the others. */
afterEach(() => vi.useRealTimers());

const entry = (blobId: string): StoredFileState => ({ blobId }) as StoredFileState;

describe("Moves", () => {
  it("an offered entry is shown to any diff, and taken once", () => {
    const moves = new Moves();
    moves.offer([["h1", entry("b1")]]);
    expect(moves.peek("h1")).toEqual(entry("b1"));
    expect(moves.take("h1")).toEqual(entry("b1"));
    expect(moves.take("h1")).toBeUndefined();
    expect(moves.peek("h2")).toBeUndefined();
  });

  it("a part waits until each other part is checked as new or, having existed, diffed", async () => {
    const moves = new Moves();
    let waited = false;
    const waiting = moves.othersStepped("F", 2, 3).then(() => (waited = true));
    moves.checked("F", 0, true);
    moves.checked("F", 1, false);
    await Promise.resolve();
    expect(waited).toBe(false);
    // Another folder's part is not this one's.
    moves.diffed("G", 0);
    await Promise.resolve();
    expect(waited).toBe(false);
    moves.diffed("F", 0);
    await waiting;
    expect(waited).toBe(true);
  });

  it("a check of a part that existed starts its pass anew: its diff of a pass before does not count", async () => {
    vi.useFakeTimers();
    const moves = new Moves();
    moves.diffed("F", 0);
    moves.checked("F", 0, true);
    let waited = false;
    const waiting = moves.othersStepped("F", 1, 2).then(() => (waited = true));
    await vi.advanceTimersByTimeAsync(WAIT_MS - 1);
    expect(waited).toBe(false);
    // A part that never comes (not declared) holds the others up to the bound, not beyond.
    await vi.advanceTimersByTimeAsync(1);
    await waiting;
    expect(waited).toBe(true);
  });

  it("offers are let go a minute after they are made", () => {
    vi.useFakeTimers();
    const moves = new Moves();
    moves.offer([["h1", entry("b1")]]);
    vi.advanceTimersByTime(60_001);
    expect(moves.take("h1")).toBeUndefined();
  });
});
