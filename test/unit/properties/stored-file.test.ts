import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyMergePatch, LIMITS } from "../../../api";
import { planChange } from "../../../provider/file/plan";
import { UNKNOWN } from "../../../provider/engine/markers";
import { INPUT_FIELDS, StoredFileInputsSchema } from "../../../provider/file/schema";
import { changeFailures, declaredInputsOf, validateInputs } from "../../../provider/file/validate";
import { recordResult, sized } from "../../helpers/reliability-results";

/**
 * Properties of the two pure functions every preview and every apply go through: `check`
 * (validateInputs) and `planChange`. fast-check generates the inputs; a failure prints the
 * smallest counterexample and the seed to replay it.
 */

const RUNS = sized(1_000, 10_000);
const SEED = 7_396;
const counts: Record<string, number> = {};
const run = async (name: string, property: fc.IProperty<any> | fc.IAsyncProperty<any>, numRuns = RUNS) => {
  await fc.assert(property as fc.IAsyncProperty<any>, { numRuns, seed: SEED });
  counts[name] = numRuns;
  recordResult("properties", { seed: SEED, runs: counts });
};

// ---------------------------------------------------------------------------------------------
// The merge a service applies is the contract's applyMergePatch, itself checked against the
// reference implementation of RFC 7396 (json-merge-patch.test.ts), prototype names included.
// Members here are defined, never assigned, so that "__proto__" is a key like any other.
// ---------------------------------------------------------------------------------------------

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Structural equality over own keys only (so a prototype can never stand in for a key). */
function sameJson(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => sameJson(v, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && sameJson(a[k], b[k]));
  }
  return Object.is(a, b) || a === b;
}

// ---------------------------------------------------------------------------------------------
// Generators.
// ---------------------------------------------------------------------------------------------

/** Keys a user could write, and names that live on Object.prototype. */
const PROTOTYPE_NAMES = ["__proto__", "constructor", "toString", "valueOf", "hasOwnProperty", "isPrototypeOf"];
const plainKey = fc.oneof(
  fc.constantFrom("a", "b", "c", "team", "owner", "nested"),
  fc.string({ maxLength: 6 }),
  fc.string({ unit: "grapheme", maxLength: 4 }),
);
const anyKey = fc.oneof({ weight: 4, arbitrary: plainKey }, { weight: 1, arbitrary: fc.constantFrom(...PROTOTYPE_NAMES) });

/** Builds an object from pairs by definition, as JSON.parse does (so "__proto__" is an own key). */
const objectOf = (entries: Array<[string, unknown]>): Record<string, unknown> => {
  const o: Record<string, unknown> = {};
  for (const [k, v] of entries) define(o, k, v);
  return o;
};

/** JSON values without null (declared metadata may not hold null outside arrays). */
const jsonNoNull = (key: fc.Arbitrary<string>) =>
  fc.letrec<{ value: unknown; object: Record<string, unknown> }>((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.oneof(
        fc.string({ maxLength: 5 }),
        fc.integer(),
        fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Object.is(d, -0)),
        fc.boolean(),
      ),
      fc.array(fc.oneof(fc.constant(null), fc.integer(), fc.string({ maxLength: 3 })), { maxLength: 3 }),
      tie("object"),
    ),
    object: fc.uniqueArray(fc.tuple(key, tie("value")), { maxLength: 5, selector: ([k]) => k }).map(objectOf),
  })).object;

const metadataOf = (key: fc.Arbitrary<string>) => jsonNoNull(key);

const recordedState = (key: fc.Arbitrary<string>) =>
  fc.record(
    {
      blobId: fc.constant("blob-1"),
      name: fc.option(fc.string({ maxLength: 4 }), { nil: undefined }),
      tag: fc.option(fc.oneof(fc.string({ maxLength: 4 }), fc.constant(null)), { nil: undefined }),
      metadata: fc.option(metadataOf(key), { nil: undefined }),
      retentionEpochs: fc.option(fc.integer({ min: 0, max: 500 }), { nil: undefined }),
      expiresAt: fc.option(
        fc.date({ min: new Date("2020-01-01"), max: new Date("2040-01-01"), noInvalidDate: true }).map((d) => d.toISOString()),
        { nil: undefined },
      ),
    },
    { requiredKeys: ["blobId"] },
  );

const declaredInputs = (key: fc.Arbitrary<string>) =>
  fc.record(
    {
      blobId: fc.constant("blob-1"),
      name: fc.option(fc.string({ maxLength: 4 }), { nil: undefined }),
      tag: fc.option(fc.string({ maxLength: 4 }), { nil: undefined }),
      metadata: fc.option(metadataOf(key), { nil: undefined }),
      retentionEpochs: fc.option(fc.integer({ min: 0, max: 500 }), { nil: undefined }),
    },
    { requiredKeys: ["blobId"] },
  );

/** What the engine can hand to check: any JSON, fields of the right name with values of any kind. */
const anyJson = fc.jsonValue({ maxDepth: 4 });
const fieldValue = fc.oneof(
  anyJson,
  fc.constant(UNKNOWN),
  fc.string({ maxLength: 600 }),
  fc.integer(),
  fc.double(),
  fc.constantFrom(".", "..", "", "a/b", "%2F", "\u0000", "x".repeat(LIMITS.blobIdMaxLength + 1), Number.MAX_SAFE_INTEGER, -0, 1e308),
  metadataOf(anyKey),
);
const anyNews = fc.oneof(
  fc.dictionary(fc.oneof(fc.constantFrom(...INPUT_FIELDS, "__provider", "url", "expiresAt"), anyKey), fieldValue, { maxKeys: 8 }),
  fc.record(
    { blobId: fieldValue, name: fieldValue, tag: fieldValue, metadata: fieldValue, retentionEpochs: fieldValue, keepAlive: fieldValue },
    { requiredKeys: [] },
  ),
);
const anyOlds = fc.oneof(fc.constant(undefined), anyNews, fc.record({ retentionEpochs: fc.oneof(fc.integer(), fc.double(), anyJson) }));

const withoutUnknowns = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== UNKNOWN));

// ---------------------------------------------------------------------------------------------

describe("check (validateInputs): any JSON in, valid inputs or named failures out, never a throw", () => {
  it("never throws, and answers either clean inputs or one failure per bad property", async () => {
    await run(
      "check: any JSON",
      fc.property(anyOlds, anyNews, (olds, news) => {
        const checked = validateInputs(news as Record<string, unknown>);
        const clock = { nowMs: Date.now(), epochMs: 86_400_000 };
        const { inputs } = checked;
        const failures = [...checked.failures, ...changeFailures(declaredInputsOf(olds as Record<string, unknown> | undefined), inputs, [], clock)];
        expect(Array.isArray(failures)).toBe(true);
        for (const f of failures) {
          expect(typeof f.property).toBe("string");
          expect(f.reason.length).toBeGreaterThan(0);
        }
        if (failures.length === 0) {
          // Accepted: only input fields, each of which the schema accepts (unknowns pass untouched).
          for (const key of Object.keys(inputs)) expect(INPUT_FIELDS as readonly string[]).toContain(key);
          expect(StoredFileInputsSchema.partial().safeParse(withoutUnknowns(inputs)).success).toBe(true);
          // Exactly one of blobId and source (which may still be unknown at preview).
          expect(inputs.blobId ?? inputs.source).toBeDefined();
          // Nothing declared was dropped on the way.
          for (const [k, v] of Object.entries(news)) {
            if (k !== "__provider" && v !== undefined && v !== null) expect(Object.hasOwn(inputs, k)).toBe(true);
          }
        }
      }),
    );
  });

  it("an accepted declaration is accepted again as is (check of its own output changes nothing)", async () => {
    await run(
      "check: idempotent",
      fc.property(declaredInputs(plainKey), (news) => {
        const first = validateInputs(news);
        fc.pre(first.failures.length === 0);
        const second = validateInputs(first.inputs);
        expect(second.failures).toEqual([]);
        expect(sameJson(second.inputs, first.inputs)).toBe(true);
      }),
    );
  });

  it("never throws on hostile shapes: huge numbers, prototype-named keys, too many keys", () => {
    // A metadata key named "__proto__" pollutes nothing, and is refused by name (see below).
    const proto = validateInputs({ blobId: "a", metadata: JSON.parse('{"__proto__": {"polluted": true}}') });
    expect(proto.failures.map((f) => f.reason)).toEqual([expect.stringMatching(/metadata\.__proto__/)]);
    // Each of these is refused with a failure, never a throw.
    const hostile: Record<string, unknown>[] = [
      JSON.parse('{"blobId": "a", "__proto__": {"retentionEpochs": -5}}'),
      { blobId: "a", retentionEpochs: 1e308 },
      { blobId: "a", retentionEpochs: Number.MAX_SAFE_INTEGER + 2 },
      { blobId: "a", metadata: Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, i])) },
      { blobId: { toString: () => "x" } as unknown as string },
    ];
    for (const news of hostile) {
      expect(() => validateInputs(news)).not.toThrow();
      expect(validateInputs(news).failures.length).toBeGreaterThan(0);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    counts["check: hostile shapes"] = hostile.length + 1;
    recordResult("properties", { runs: counts });
  });

  // zod builds a parsed record by assignment: a key "__proto__" would become its prototype.
  it('a metadata key named "__proto__" is kept or refused by check, not silently dropped', () => {
    const { inputs, failures } = validateInputs({ blobId: "a", metadata: JSON.parse('{"__proto__": {"x": 1}, "k": 2}') });
    const kept = Object.keys((inputs.metadata as object | undefined) ?? {});
    expect(failures.length > 0 || kept.includes("__proto__")).toBe(true);
  });

  // zod validates JSON recursively: deep enough nesting, still under the size limit, would overflow the stack.
  it("metadata nested up to 2,700 deep (16 KB of JSON, under the size limit) is a failure or accepted, never a throw", () => {
    const outcomes: Record<string, string> = {};
    for (const depth of [500, 1_000, 1_500, 2_000, 2_700]) {
      let deep: unknown = 1;
      for (let i = 0; i < depth; i++) deep = { d: deep };
      try {
        const { failures } = validateInputs({ blobId: "a", metadata: deep });
        outcomes[depth] = failures.length ? `failure: ${failures[0].reason.slice(0, 120)}` : "accepted";
      } catch (e) {
        outcomes[depth] = `threw ${String(e)}`;
      }
    }
    expect(Object.values(outcomes).filter((o) => o.startsWith("threw"))).toEqual([]);
  });
});

describe("planChange: only what changed, never a negative renew, metadata exact under RFC 7396", () => {
  const check = (olds: Record<string, unknown>, news: Record<string, unknown>) => {
    const plan = planChange(olds, news);
    const patch = (plan.patch ?? {}) as Record<string, unknown>;
    // Never a PATCH field for a field that is unchanged or not declared.
    for (const field of ["name", "tag"] as const) {
      const changes = news[field] !== undefined && news[field] !== olds[field];
      expect(Object.hasOwn(patch, field)).toBe(changes);
      if (changes) expect(patch[field]).toBe(news[field]);
    }
    const metadataChanges = news.metadata !== undefined && !(isObject(olds.metadata) && sameJson(olds.metadata, news.metadata));
    expect(Object.hasOwn(patch, "metadata")).toBe(metadataChanges);
    for (const key of Object.keys(patch)) expect(["name", "tag", "metadata"]).toContain(key);
    if (plan.patch !== undefined) expect(Object.keys(patch).length).toBeGreaterThan(0);
    // The stored metadata after the merge is exactly the declared one.
    if (metadataChanges) expect(sameJson(applyMergePatch(olds.metadata ?? {}, patch.metadata), news.metadata)).toBe(true);
    // Renews: never negative; with no clock (no expiry to measure from), exactly the declared increase.
    const bought = typeof olds.retentionEpochs === "number" ? olds.retentionEpochs : 0;
    const declared = typeof news.retentionEpochs === "number" ? news.retentionEpochs : undefined;
    expect(Number.isInteger(plan.renewEpochs)).toBe(true);
    expect(plan.renewEpochs).toBeGreaterThanOrEqual(0);
    expect(plan.renewEpochs).toBe(declared === undefined ? 0 : Math.max(0, declared - bought));
    // Nothing named as changed that is not.
    for (const field of plan.changedFields) {
      // A declared count that differs from the recorded one is a change (a lowering buys nothing).
      if (field === "retentionEpochs") expect(declared).not.toBe(typeof olds.retentionEpochs === "number" ? olds.retentionEpochs : 0);
      if (field === "name" || field === "tag" || field === "metadata") expect(Object.hasOwn(patch, field)).toBe(true);
    }
    return plan;
  };

  it("for user keys: the planned PATCH and renew are exactly what differs", async () => {
    await run(
      "planChange: user keys",
      fc.property(recordedState(plainKey), declaredInputs(plainKey), (olds, news) => {
        check(olds, news);
      }),
    );
  });

  it("planning again from the state the plan produces finds nothing to do", async () => {
    await run(
      "planChange: converges in one step",
      fc.property(recordedState(plainKey), declaredInputs(plainKey), (olds, news) => {
        const plan = planChange(olds, news);
        const after: Record<string, unknown> = { ...olds };
        if (plan.patch?.name !== undefined) after.name = plan.patch.name;
        if (plan.patch?.tag !== undefined) after.tag = plan.patch.tag;
        if (plan.patch?.metadata !== undefined) after.metadata = applyMergePatch(olds.metadata ?? {}, plan.patch.metadata);
        after.retentionEpochs = (typeof olds.retentionEpochs === "number" ? olds.retentionEpochs : 0) + plan.renewEpochs;
        const again = planChange(after, news);
        expect(again.patch).toBeUndefined();
        expect(again.renewEpochs).toBe(0);
      }),
    );
  });

  it("with a clock and no keep-alive, the renew is still exactly the declared increase", async () => {
    await run(
      "planChange: with a clock",
      fc.property(
        recordedState(plainKey),
        declaredInputs(plainKey),
        fc.record({
          nowMs: fc.integer({ min: Date.parse("2019-01-01"), max: Date.parse("2041-01-01") }),
          epochMs: fc.integer({ min: 1_000, max: 14 * 86_400_000 }),
          epochKnown: fc.boolean(),
          warnWithinEpochs: fc.integer({ min: 0, max: 60 }),
        }),
        (olds, news, clock) => {
          const plan = planChange(olds, news, clock);
          const bought = typeof olds.retentionEpochs === "number" ? olds.retentionEpochs : 0;
          expect(plan.renewEpochs).toBeGreaterThanOrEqual(0);
          expect(plan.renewEpochs).toBe(typeof news.retentionEpochs === "number" ? Math.max(0, news.retentionEpochs - bought) : 0);
        },
      ),
    );
  });

  // `key in declared` would see Object.prototype: a removed key named "constructor" must still be sent as null.
  it("for keys named like Object.prototype members, too (counterexample: recorded {constructor: 1}, declared {})", () => {
    fc.assert(
      fc.property(recordedState(anyKey), declaredInputs(anyKey), (olds, news) => {
        check(olds, news);
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });
});
