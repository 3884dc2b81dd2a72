import { describe, expect, it } from "vitest";
import { HANDED_OVER_KEPT_MS, Moves, handedOverKept } from "../../../provider/folder/moves";
import type { StoredFileState } from "../../../provider/file/schema";

/** The pool of entries a stack's folder resources hand each other. */
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

  it("an entry offered again (handed over at an earlier `up`) never replaces one dropped now, which replaces it", () => {
    const moves = new Moves();
    moves.offer([["h1", entry("now")]]);
    moves.offer([["h1", entry("earlier")]], true);
    expect(moves.peek("h1")).toEqual(entry("now"));
    moves.offer([["h2", entry("earlier")]], true);
    moves.offer([["h2", entry("now")]]);
    expect(moves.take("h2")).toEqual(entry("now"));
  });
});

describe("handedOverKept", () => {
  const at = Date.parse("2026-11-30T06:00:00.000Z");
  const stamp = new Date(at).toISOString();
  const hour = 60 * 60_000;

  it("keeps what a part handed over for a day from its stamp, then forgets it", () => {
    expect(handedOverKept(stamp, at)).toBe(true);
    expect(handedOverKept(stamp, at + HANDED_OVER_KEPT_MS - 1)).toBe(true);
    expect(handedOverKept(stamp, at + HANDED_OVER_KEPT_MS)).toBe(false);
    expect(HANDED_OVER_KEPT_MS).toBe(24 * hour);
  });

  it("forgets it when no time was recorded (an earlier release's state), the time is unreadable, or more than an hour ahead", () => {
    for (const unread of [undefined, null, 42, "", "yesterday"]) expect(handedOverKept(unread, at)).toBe(false);
    expect(handedOverKept(new Date(at + hour / 2).toISOString(), at)).toBe(true);
    expect(handedOverKept(new Date(at + hour).toISOString(), at)).toBe(false);
  });
});
