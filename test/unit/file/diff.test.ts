import fc from "fast-check";
import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { describe, expect, it } from "vitest";
import { planChange, propertyDiffs } from "../../../provider/file/plan";
import { UNKNOWN } from "../../../provider/engine/markers";
import { readPropertyPath } from "../../helpers/property-paths";

/** The plan as property paths: what the provider plugin's preview shows (`~ metadata.team`). */
const diffs = (olds: Record<string, unknown>, news: Record<string, unknown>, secrets: readonly string[] = []) =>
  propertyDiffs(olds, news, planChange(olds, news), secrets);
const adopted = { blobId: "b1", name: "a.txt", tag: "t", metadata: { team: "web", nested: { a: 1, b: 2 }, "odd.key": 1 }, retentionEpochs: 2 };

describe("property-level diffs", () => {
  it("names each metadata key added, changed or removed, nested ones by their path", () => {
    const news = { blobId: "b1", name: "a.txt", tag: "t", metadata: { team: "ops", nested: { a: 1, c: 3 }, extra: true }, retentionEpochs: 2 };
    expect(diffs(adopted, news)).toEqual({
      "metadata.team": { field: "metadata", kind: "update", inputDiff: true },
      "metadata.nested.b": { field: "metadata", kind: "delete", inputDiff: true },
      "metadata.nested.c": { field: "metadata", kind: "add", inputDiff: true },
      'metadata["odd.key"]': { field: "metadata", kind: "delete", inputDiff: true },
      "metadata.extra": { field: "metadata", kind: "add", inputDiff: true },
    });
  });

  it("says a changed blobId or content is a replace, a newly managed field an add, more epochs an update", () => {
    expect(diffs(adopted, { ...adopted, blobId: "b2" })).toEqual({ blobId: { field: "blobId", kind: "update-replace", inputDiff: true } });
    const uploaded = { ...adopted, sourceHash: "h1" };
    const asset = (hash: string) => ({ [SIG_KEY]: ASSET_SIG, text: "x", hash });
    const { blobId: _b, ...rest } = adopted;
    expect(diffs(uploaded, { ...rest, source: asset("h2") })).toEqual({ source: { field: "source", kind: "update-replace", inputDiff: true } });
    expect(diffs({ blobId: "b1", retentionEpochs: 0 }, { blobId: "b1", tag: "new", retentionEpochs: 3 })).toEqual({
      tag: { field: "tag", kind: "add", inputDiff: true },
      retentionEpochs: { field: "retentionEpochs", kind: "update", inputDiff: true },
    });
  });

  it("says a secret metadata's change of the field alone: its keys are data, never a path", () => {
    const olds = { ...adopted, metadata: { "patient-jane.doe@example.com": "x" } };
    const news = { ...adopted, metadata: { "patient-john.roe@example.com": "y" } };
    expect(diffs(olds, news, ["metadata"])).toEqual({ metadata: { field: "metadata", kind: "update", inputDiff: true } });
    expect(diffs({ ...adopted, metadata: undefined }, news, ["metadata"])).toEqual({ metadata: { field: "metadata", kind: "add", inputDiff: true } });
  });

  it("marks a value not known yet (preview) as an update of the whole field, and nothing when nothing changes", () => {
    expect(diffs(adopted, { ...adopted, metadata: UNKNOWN })).toEqual({ metadata: { field: "metadata", kind: "update", inputDiff: true } });
    expect(diffs(adopted, adopted)).toEqual({});
  });

  // A folder decides by a change's field (a rename, a keep-alive, a value handed back) and the
  // plugin lists the fields the engine shows: a key written from another field would mislead both.
  it("writes each key as a path under the field its change names, to a key the metadata has", () => {
    const key = fc.oneof(fc.constantFrom("team", "name", "odd.key", "a[b]", 'q"x', "0", "", "é"), fc.string({ maxLength: 4 }));
    const { value } = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: "small" }, fc.integer(), fc.string({ maxLength: 3 }), fc.boolean(), tie("object")),
      object: fc.dictionary(key, tie("value"), { maxKeys: 3 }),
    }));
    const metadata = fc.option(fc.dictionary(key, value, { maxKeys: 4 }), { nil: undefined });
    const tag = fc.constantFrom(undefined, "t", "u");
    const at = (root: unknown, below: string[]) =>
      below.reduce<unknown>((v, k) => (v !== null && typeof v === "object" && Object.hasOwn(v, k) ? (v as Record<string, unknown>)[k] : undefined), root);
    fc.assert(
      fc.property(metadata, metadata, tag, tag, (before, after, tagBefore, tagAfter) => {
        const olds = { blobId: "b1", tag: tagBefore, metadata: before, retentionEpochs: 0 };
        const news = { blobId: "b1", tag: tagAfter, metadata: after, retentionEpochs: 0 };
        for (const [path, change] of Object.entries(diffs(olds, news))) {
          const read = readPropertyPath(path);
          expect(read?.field, path).toBe(change.field);
          if (read && read.below.length > 0) expect(at(before, read.below) ?? at(after, read.below), path).not.toBeUndefined();
        }
      }),
      { numRuns: 500 },
    );
  });
});
