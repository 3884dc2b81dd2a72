import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { describe, expect, it } from "vitest";
import { planChange, propertyDiffs } from "../../../provider/file/plan";
import { UNKNOWN } from "../../../provider/engine/markers";

/** The plan as property paths: what the provider plugin's preview shows (`~ metadata.team`). */
const diffs = (olds: Record<string, unknown>, news: Record<string, unknown>) => propertyDiffs(olds, news, planChange(olds, news));
const adopted = { blobId: "b1", name: "a.txt", tag: "t", metadata: { team: "web", nested: { a: 1, b: 2 }, "odd.key": 1 }, retentionEpochs: 2 };

describe("property-level diffs", () => {
  it("names each metadata key added, changed or removed, nested ones by their path", () => {
    const news = { blobId: "b1", name: "a.txt", tag: "t", metadata: { team: "ops", nested: { a: 1, c: 3 }, extra: true }, retentionEpochs: 2 };
    expect(diffs(adopted, news)).toEqual({
      "metadata.team": { kind: "update", inputDiff: true },
      "metadata.nested.b": { kind: "delete", inputDiff: true },
      "metadata.nested.c": { kind: "add", inputDiff: true },
      'metadata["odd.key"]': { kind: "delete", inputDiff: true },
      "metadata.extra": { kind: "add", inputDiff: true },
    });
  });

  it("says a changed blobId or content is a replace, a newly managed field an add, more epochs an update", () => {
    expect(diffs(adopted, { ...adopted, blobId: "b2" })).toEqual({ blobId: { kind: "update-replace", inputDiff: true } });
    const uploaded = { ...adopted, sourceHash: "h1" };
    const asset = (hash: string) => ({ [SIG_KEY]: ASSET_SIG, text: "x", hash });
    const { blobId: _b, ...rest } = adopted;
    expect(diffs(uploaded, { ...rest, source: asset("h2") })).toEqual({ source: { kind: "update-replace", inputDiff: true } });
    expect(diffs({ blobId: "b1", retentionEpochs: 0 }, { blobId: "b1", tag: "new", retentionEpochs: 3 })).toEqual({
      tag: { kind: "add", inputDiff: true },
      retentionEpochs: { kind: "update", inputDiff: true },
    });
  });

  it("marks a value not known yet (preview) as an update of the whole field, and nothing when nothing changes", () => {
    expect(diffs(adopted, { ...adopted, metadata: UNKNOWN })).toEqual({ metadata: { kind: "update", inputDiff: true } });
    expect(diffs(adopted, adopted)).toEqual({});
  });
});
