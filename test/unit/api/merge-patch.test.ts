import fc from "fast-check";
import jsonMergePatch from "json-merge-patch";
import { describe, expect, it } from "vitest";
import { applyMergePatch, jsonEqual, mergePatchBetween } from "../../../api";

/**
 * The contract's JSON Merge Patch (api/json.ts), checked against an independent implementation
 * of RFC 7396 (the `json-merge-patch` package), never against a copy of our own code.
 */
const reference = (target: unknown, patch: unknown): unknown => jsonMergePatch.apply(structuredClone(target), structuredClone(patch));

// Keys the reference refuses on purpose (prototype pollution) are left out of its comparisons;
// ours treats them as data, tested apart below.
const key = fc.string({ maxLength: 4 }).filter((k) => !["__proto__", "constructor", "prototype"].includes(k));
const { json: jsonValue } = fc.letrec((tie) => ({
  json: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom(null, true, false),
    fc.integer(),
    fc.string({ maxLength: 6 }),
    fc.array(tie("json"), { maxLength: 3 }),
    tie("object"),
  ),
  object: fc.dictionary(key, tie("json"), { maxKeys: 4 }),
}));
const object = fc.dictionary(key, jsonValue, { maxKeys: 5 });
/** Declared metadata: no nulls inside objects (check refuses them), arrays may hold anything. */
const withoutNulls = (v: unknown): unknown =>
  v !== null && typeof v === "object" && !Array.isArray(v)
    ? Object.fromEntries(
        Object.entries(v)
          .filter(([, x]) => x !== null)
          .map(([k, x]) => [k, withoutNulls(x)]),
      )
    : v;

describe("applyMergePatch agrees with the reference implementation of RFC 7396", () => {
  it("on random targets and patches", () => {
    fc.assert(
      fc.property(jsonValue, jsonValue, (target, patch) => {
        expect(applyMergePatch(target, patch)).toEqual(reference(target, patch));
      }),
      { numRuns: 2000 },
    );
  });

  it("leaves both arguments as they were", () => {
    const target = { a: { b: 1 } };
    const patch = { a: { b: null, c: 2 } };
    expect(applyMergePatch(target, patch)).toEqual({ a: { c: 2 } });
    expect(target).toEqual({ a: { b: 1 } });
    expect(patch).toEqual({ a: { b: null, c: 2 } });
  });

  it("keeps keys named like Object.prototype members as data", () => {
    // JSON.parse makes "__proto__" an own key, as a request body would.
    const out = applyMergePatch({ constructor: 1 }, JSON.parse('{"__proto__": {"polluted": true}, "toString": "x"}')) as Record<string, unknown>;
    expect(Object.keys(out).sort()).toEqual(["__proto__", "constructor", "toString"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("mergePatchBetween: the stored object ends exactly equal to the declared one", () => {
  it("the reference, applying our patch to the recorded object, yields the declared one", () => {
    fc.assert(
      fc.property(object, object.map(withoutNulls), (recorded, declared) => {
        const patch = mergePatchBetween(recorded, declared as Record<string, unknown>);
        expect(reference(recorded, patch ?? {})).toEqual(declared);
        expect(patch === undefined).toBe(jsonEqual(recorded, declared));
      }),
      { numRuns: 2000 },
    );
  });

  it("adds, changes and removes keys (removed ones as null)", () => {
    expect(mergePatchBetween({ keep: 1, change: "a", drop: true }, { keep: 1, change: "b", add: [1] })).toEqual({
      keep: 1,
      change: "b",
      add: [1],
      drop: null,
    });
  });
  it("removes nested keys too, since the service merges nested objects", () => {
    expect(mergePatchBetween({ o: { a: 1, b: 2 } }, { o: { a: 1 } })).toEqual({ o: { a: 1, b: null } });
  });
  it("replaces a nested non-object by an object without nulls", () => {
    expect(mergePatchBetween({ o: 5 }, { o: { a: 1 } })).toEqual({ o: { a: 1 } });
  });
  it("is undefined when equal, whatever the key order", () => {
    expect(mergePatchBetween({ a: 1, b: { c: 2, d: 3 } }, { b: { d: 3, c: 2 }, a: 1 })).toBeUndefined();
  });
  it("sends the full object when nothing was recorded, and clears with {}", () => {
    expect(mergePatchBetween(undefined, { a: 1 })).toEqual({ a: 1 });
    expect(mergePatchBetween({ a: 1, b: 2 }, {})).toEqual({ a: null, b: null });
  });
  it("applying the patch under RFC 7396 yields the declared object", () => {
    const cases: Array<[Record<string, unknown>, Record<string, unknown>]> = [
      [{ a: 1, b: { c: 1, d: { e: 1 } } }, { b: { d: { f: 2 } } }],
      [{ a: [1, 2] }, { a: [2] }],
      [{}, { x: { y: { z: 1 } } }],
      [{ x: { y: 1 } }, { x: "flat" }],
    ];
    for (const [before, declared] of cases) {
      expect(reference(before, mergePatchBetween(before, declared))).toEqual(declared);
    }
  });
});
