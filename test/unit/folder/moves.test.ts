import { afterEach, describe, expect, it, vi } from "vitest";
import { IDLE_MS, Moves, WAIT_MS } from "../../../provider/folder/moves";
import type { StoredFileState } from "../../../provider/file/schema";

/** The pool of entries a folder's resources hand each other, and a new part's wait for the parts that existed. */
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

  it("a new part waits until each part the folder was kept as has been diffed", async () => {
    const moves = new Moves();
    // Parts 0 and 1 of 3 existed (kept as 2 parts); part 2 is new.
    moves.checked("F", 0, true, 2);
    let waited = false;
    const waiting = moves.othersStepped("F", 2, 3).then(() => (waited = true));
    moves.diffed("F", 0);
    // Another folder's part is not this one's.
    moves.diffed("G", 1);
    await Promise.resolve();
    expect(waited).toBe(false);
    moves.diffed("F", 1);
    await waiting;
    expect(waited).toBe(true);
  });

  it("a new part of a new folder waits until the others are checked, or until none comes for a second", async () => {
    vi.useFakeTimers();
    const moves = new Moves();
    moves.checked("F", 0, false, 1);
    let waited = false;
    void moves.othersStepped("F", 1, 3).then(() => (waited = true));
    await vi.advanceTimersByTimeAsync(IDLE_MS / 2);
    moves.checked("F", 2, false, 1);
    await vi.advanceTimersByTimeAsync(0);
    expect(waited).toBe(true);

    // Part 2 never comes (the engine runs no more steps at once): a second after the last check, the wait ends.
    waited = false;
    const idle = new Moves();
    idle.checked("G", 0, false, 1);
    void idle.othersStepped("G", 1, 3).then(() => (waited = true));
    await vi.advanceTimersByTimeAsync(IDLE_MS - 100);
    expect(waited).toBe(false);
    await vi.advanceTimersByTimeAsync(200);
    expect(waited).toBe(true);
  });

  it("a check that shows the folder existed turns the wait to the old parts' diffs", async () => {
    vi.useFakeTimers();
    const moves = new Moves();
    let waited = false;
    void moves.othersStepped("F", 2, 3).then(() => (waited = true));
    moves.checked("F", 0, true, 1);
    await vi.advanceTimersByTimeAsync(IDLE_MS * 2);
    // Part 1 is not checked, but the folder was one part: part 0's diff is all there is to wait for.
    expect(waited).toBe(false);
    moves.diffed("F", 0);
    await vi.advanceTimersByTimeAsync(0);
    expect(waited).toBe(true);
  });

  it("a check of a part that existed starts its pass anew; a part that never comes holds the new one up to the bound", async () => {
    vi.useFakeTimers();
    const moves = new Moves();
    moves.diffed("F", 0);
    moves.checked("F", 0, true, 1);
    let waited = false;
    const waiting = moves.othersStepped("F", 1, 2).then(() => (waited = true));
    await vi.advanceTimersByTimeAsync(WAIT_MS - 1);
    expect(waited).toBe(false);
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
