import { describe, expect, it } from "vitest";
import { Moves } from "../../../provider/folder/moves";
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
