import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compact, parseState, stateReader } from "../../../provider/file/state";

/**
 * A folder reads its 100,000 entries with one reader that judges a value once for the entries
 * holding it in turn: each entry must read exactly as parseState reads it alone.
 */

/** Values of the shapes a recorded entry has, and some it must refuse. */
const value = fc.oneof(
  fc.constantFrom("2026-11-27T21:47:37.365Z", "v1", "", "application/octet-stream"),
  fc.constantFrom(0, 1, 1024, 1.5, -3, 86_400_000),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom({ minRemainingEpochs: 2, renewEpochs: 5 }, { minRemainingEpochs: "2" }, { team: "web" }, ["a"]),
);
const field = fc.constantFrom(
  "blobId",
  "name",
  "tag",
  "metadata",
  "retentionEpochs",
  "size",
  "createdAt",
  "expiresAt",
  "keepAlive",
  "retentionStartEpochs",
  "epochMsSeen",
  "retentionDeclared",
  "serviceUrl",
  "somethingNew",
  "__secretInputs",
);
const entry = fc.dictionary(field, value, { maxKeys: 8 });

describe("reading many recorded states with one reader", () => {
  it("reads each state as parseState reads it alone, whatever came before it", () => {
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 12 }), (states) => {
        const read = stateReader();
        for (const state of states) expect(read(state)).toEqual(parseState(state));
      }),
      { numRuns: 400 },
    );
  });

  it("a value refused for one state is refused for the next that holds it, and a valid one is taken again", () => {
    const read = stateReader();
    expect(read({ blobId: "b1", size: "big" })).toEqual({});
    expect(read({ blobId: "b2", size: "big" })).toEqual({});
    expect(read({ blobId: "b3", size: 5 })).toEqual({ blobId: "b3", size: 5 });
  });
});

describe("compact", () => {
  it("drops null and undefined, keeps the rest in order, a key named __proto__ as a key", () => {
    const out = compact(JSON.parse('{"b":1,"a":null,"__proto__":{"x":1},"c":false,"d":0}') as Record<string, unknown>);
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe('{"b":1,"__proto__":{"x":1},"c":false,"d":0}');
    expect(compact({ a: undefined, b: "x" })).toEqual({ b: "x" });
  });
});
