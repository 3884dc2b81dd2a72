import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { type PlanClock, planChange, planner } from "../../../provider/file/plan";
import type { DeclaredInputs, StoredFileState } from "../../../provider/file/schema";

/**
 * A folder plans its 100,000 entries with one planner, which makes a plan once for the entries that
 * hold the same values in every field a plan reads: each entry must get exactly the plan
 * planChange makes for it alone, whatever entries came before it.
 */

const DAY = 86_400_000;
const NOW = Date.parse("2026-11-27T12:00:00Z");
const iso = (ms: number) => new Date(ms).toISOString();
const clock = (known: boolean): PlanClock => ({ nowMs: NOW, epochMs: DAY, epochKnown: known, warnWithinEpochs: 2 });

const hash = fc.constantFrom("a".repeat(64), "b".repeat(64), "c".repeat(64));
const name = fc.constantFrom("a.txt", "b.txt", "dir/c.txt");
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const recordedFile = fc.record(
  {
    blobId: fc.constantFrom("blob-1", "blob-2"),
    url: fc.constantFrom("https://cdn/1", "https://cdn/2"),
    size: fc.constantFrom(1, 1024),
    name: maybe(name),
    sourceHash: maybe(hash),
    tag: maybe(fc.constantFrom("v1", "v2")),
    metadata: maybe(fc.constantFrom({ team: "web" }, { team: "ops" }, {})),
    mimeType: maybe(fc.constantFrom("text/plain", "image/png")),
    contentType: maybe(fc.constantFrom("text/plain", "image/png")),
    createdAt: fc.integer({ min: 0, max: 3 }).map((d) => iso(NOW - d * DAY - 3_600_000)),
    expiresAt: maybe(fc.integer({ min: -1, max: 60 }).map((d) => iso(NOW + d * DAY))),
    retentionEpochs: maybe(fc.integer({ min: 0, max: 10 })),
    retentionStartEpochs: maybe(fc.integer({ min: 0, max: 10 })),
    retentionStartMomentMs: maybe(fc.constantFrom(0, 3_600_000)),
    retentionStartAfterCreated: maybe(fc.constantFrom(0, -1000)),
    keepAlive: maybe(fc.constantFrom({ minRemainingEpochs: 3, renewEpochs: 5 }, { minRemainingEpochs: 1, renewEpochs: 2 })),
    unconfirmedRenew: maybe(fc.constant({ epochs: 2, fromExpiresAt: iso(NOW) })),
  },
  { requiredKeys: ["blobId", "url", "size", "createdAt"] },
) as fc.Arbitrary<StoredFileState>;
const declared = fc.record(
  {
    name: maybe(name),
    source: maybe(hash.map((h) => ({ [SIG_KEY]: ASSET_SIG, path: `/site/${h.slice(0, 3)}`, hash: h }))),
    tag: maybe(fc.constantFrom("v1", "v2")),
    metadata: maybe(fc.constantFrom({ team: "web" }, { team: "ops" })),
    contentType: maybe(fc.constantFrom("text/plain", "image/png")),
    retentionEpochs: maybe(fc.integer({ min: 0, max: 10 })),
    retainUntil: maybe(fc.integer({ min: 1, max: 30 }).map((d) => iso(NOW + d * DAY))),
    keepAlive: maybe(fc.constantFrom({ minRemainingEpochs: 3, renewEpochs: 5 })),
  },
  { requiredKeys: [] },
) as fc.Arbitrary<DeclaredInputs>;

/** A file whose name and content are its own, as each of a folder's entries is, declared as recorded or not. */
const entry = fc.tuple(recordedFile, declared, fc.boolean(), fc.boolean(), fc.integer({ min: 0, max: 999 })).map(([olds, news, sameName, sameContent, i]) => {
  const own = `file-${i}.bin`;
  const content = `${i}`.padStart(64, "0");
  const o: StoredFileState = { ...olds, name: sameName ? own : olds.name, sourceHash: sameContent ? content : olds.sourceHash };
  const n: DeclaredInputs = { ...news, name: sameName ? own : news.name };
  if (sameContent) n.source = { [SIG_KEY]: ASSET_SIG, path: `/site/${own}`, hash: content };
  return [o, n] as const;
});

/** Every field of either side a file may have, by side. */
const FIELDS = {
  ...Object.fromEntries(
    [
      "blobId",
      "url",
      "size",
      "name",
      "sourceHash",
      "tag",
      "metadata",
      "mimeType",
      "contentType",
      "createdAt",
      "expiresAt",
      "retentionEpochs",
      "retentionStartEpochs",
      "retentionStartMomentMs",
      "retentionStartAfterCreated",
      "keepAlive",
      "unconfirmedRenew",
    ].map((f) => [`olds.${f}`, f]),
  ),
  ...Object.fromEntries(["name", "source", "tag", "metadata", "contentType", "retentionEpochs", "retainUntil", "keepAlive"].map((f) => [`news.${f}`, f])),
};

/** The first file with `fields` taken from the other. */
function mixed(olds: StoredFileState, news: DeclaredInputs, otherOlds: StoredFileState, otherNews: DeclaredInputs, fields: string[]) {
  const o: Record<string, unknown> = { ...olds };
  const n: Record<string, unknown> = { ...news };
  for (const at of fields) {
    const [side, field] = at.split(".");
    if (side === "olds") o[field] = (otherOlds as Record<string, unknown>)[field];
    else n[field] = (otherNews as Record<string, unknown>)[field];
  }
  return [o as StoredFileState, n as DeclaredInputs] as const;
}

describe("a planner: one plan for the files a plan cannot tell apart", () => {
  it("plans each file exactly as planChange plans it alone, whatever files came before it", () => {
    fc.assert(
      fc.property(fc.boolean(), fc.array(entry, { minLength: 1, maxLength: 20 }), (known, files) => {
        const plan = planner(clock(known));
        for (const [olds, news] of files) expect(plan(olds, news)).toEqual(planChange(olds, news, clock(known)));
      }),
      { numRuns: 500 },
    );
  });

  it("so too for files alike but in a field or two (a folder's are): any one field may change the plan", () => {
    // Each file is the first one with a few of its fields taken from another.
    const alike = fc.tuple(entry, fc.array(fc.tuple(entry, fc.subarray(Object.keys({ ...FIELDS }), { maxLength: 2 })), { maxLength: 12 }));
    fc.assert(
      fc.property(fc.boolean(), alike, (known, [[baseOlds, baseNews], others]) => {
        const plan = planner(clock(known));
        const files = [[baseOlds, baseNews] as const, ...others.map(([[o, n], fields]) => mixed(baseOlds, baseNews, o, n, fields))];
        for (const [olds, news] of files) expect(plan(olds, news)).toEqual(planChange(olds, news, clock(known)));
      }),
      { numRuns: 1000 },
    );
  });

  it("files that differ only in their own names, contents and creation get one plan (made once)", () => {
    const plan = planner(clock(true));
    const file = (i: number) =>
      [
        {
          blobId: `blob-${i}`,
          url: `https://cdn/blob-${i}`,
          size: 1024,
          name: `file-${i}.bin`,
          sourceHash: `${i}`.padStart(64, "0"),
          createdAt: iso(NOW - i * 1000),
          expiresAt: iso(NOW + 3 * DAY),
          tag: "v1",
          retentionEpochs: 3,
          retentionStartEpochs: 3,
        },
        { name: `file-${i}.bin`, tag: "v1", retentionEpochs: 3, source: { [SIG_KEY]: ASSET_SIG, path: `/site/file-${i}.bin`, hash: `${i}`.padStart(64, "0") } },
      ] as const;
    const first = plan(...file(1));
    expect(plan(...file(2))).toBe(first);
    expect(Object.isFrozen(first) && Object.isFrozen(first.notices)).toBe(true);
    // Another name declared: a PATCH of its own.
    const renamed = plan(file(3)[0], { ...file(3)[1], name: "other.bin" });
    expect(renamed.patch).toEqual({ name: "other.bin" });
  });
});
