import { describe, expect, it } from "vitest";
import { LIMITS } from "../../../api";
import { UNKNOWN } from "../../../provider/engine/markers";
import { changeFailures, declaredInputsOf, validateInputs } from "../../../provider/file/validate";

/** What check refuses of `news` declared over `olds`: the declaration's own failures, then those of the change. */
const failuresFor = (news: Record<string, unknown>, olds?: Record<string, unknown>) => {
  const checked = validateInputs(news);
  const clock = { nowMs: Date.now(), epochMs: 86_400_000 };
  return [...checked.failures, ...changeFailures(declaredInputsOf(olds), checked.inputs, [], clock)];
};
const reasonsFor = (news: Record<string, unknown>, olds?: Record<string, unknown>) => failuresFor(news, olds).map((f) => `${f.property}: ${f.reason}`);

describe("check: validation before any request", () => {
  it("accepts a minimal and a full declaration unchanged", () => {
    expect(validateInputs({ blobId: "abc" })).toEqual({ inputs: { blobId: "abc" }, failures: [] });
    const full = { blobId: "abc", name: "a.png", tag: "avatar", metadata: { a: 1, b: { c: [1, null] } }, retentionEpochs: 5 };
    expect(validateInputs(full)).toEqual({ inputs: full, failures: [] });
  });

  it.each([
    [{}, "blobId", /blobId or source is required/],
    [{ blobId: "" }, "blobId", /must not be empty/],
    [{ blobId: ".." }, "blobId", /must not be '\.' or '\.\.'/],
    [{ blobId: "a\nb" }, "blobId", /control characters/],
    [
      { blobId: "x".repeat(LIMITS.blobIdMaxLength + 1) },
      "blobId",
      new RegExp(`at most ${LIMITS.blobIdMaxLength} characters \\(got ${LIMITS.blobIdMaxLength + 1}\\)`),
    ],
    [{ blobId: 42 }, "blobId", /must be a string/],
    [{ blobId: "a", name: "n".repeat(257) }, "name", /name must be at most 256 characters \(got 257\)/],
    [{ blobId: "a", name: 5 }, "name", /name must be a string/],
    [{ blobId: "a", tag: "t".repeat(300) }, "tag", /tag must be at most 256 characters \(got 300\)/],
    [{ blobId: "a", metadata: [1, 2] }, "metadata", /must be a JSON object/],
    [{ blobId: "a", metadata: "x" }, "metadata", /must be a JSON object/],
    [{ blobId: "a", metadata: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i])) }, "metadata", /at most 64 keys \(got 65\)/],
    [{ blobId: "a", metadata: { big: "x".repeat(LIMITS.metadataMaxBytes) } }, "metadata", /at most 16384 bytes as JSON \(got \d+\)/],
    [{ blobId: "a", metadata: { gone: null } }, "metadata", /metadata\.gone is null/],
    [{ blobId: "a", metadata: { deep: { gone: null } } }, "metadata", /metadata\.deep\.gone is null/],
    [{ blobId: "a", metadata: { n: Number.NaN } }, "metadata", /^metadata\.n is NaN, not a JSON value: numbers must be finite$/],
    [{ blobId: "a", metadata: { list: [1, Number.POSITIVE_INFINITY] } }, "metadata", /^metadata\.list\[1\] is Infinity, not a JSON value/],
    [{ blobId: "a", retentionEpochs: -1 }, "retentionEpochs", /must be >= 0 \(got -1\)/],
    [{ blobId: "a", retentionEpochs: 1.5 }, "retentionEpochs", /whole number of epochs \(got 1\.5\)/],
    [{ blobId: "a", retentionEpochs: "5" }, "retentionEpochs", /must be a number/],
    [{ blobId: "a", retentionEpochs: 54 }, "retentionEpochs", /at most 53 epochs in one update.*increase of 54/],
  ])("rejects %j naming %s and the limit", (news, property, reason) => {
    const failures = failuresFor(news as Record<string, unknown>);
    expect(failures).toHaveLength(1);
    expect(failures[0].property).toBe(property);
    expect(failures[0].reason).toMatch(reason);
  });

  it("lets retentionEpochs go down (the declared end moves earlier: nothing bought, nothing returned)", () => {
    expect(reasonsFor({ blobId: "a", retentionEpochs: 3 }, { blobId: "a", retentionEpochs: 5 })).toEqual([]);
    expect(reasonsFor({ blobId: "a" }, { blobId: "a", retentionEpochs: 5 })).toEqual([]);
    // Raising by up to the horizon is fine, measured from what was declared before.
    expect(reasonsFor({ blobId: "a", retentionEpochs: 60 }, { blobId: "a", retentionEpochs: 10 })).toEqual([]);
  });

  it("reports every bad field at once", () => {
    const failures = validateInputs({ blobId: "a", name: 1, tag: 2, retentionEpochs: -2 }).failures;
    expect(failures.map((f) => f.property).sort()).toEqual(["name", "retentionEpochs", "tag"]);
  });

  it("tolerates preview's unknown sentinel in any field and passes it through", () => {
    const news = { blobId: UNKNOWN, name: UNKNOWN, tag: "ok", metadata: UNKNOWN, retentionEpochs: UNKNOWN };
    expect(validateInputs(news)).toEqual({ inputs: news, failures: [] });
    expect(reasonsFor(news, { blobId: "a", retentionEpochs: 9 })).toEqual([]);
  });

  it("refuses fields that are not inputs (outputs, typos) instead of ignoring them", () => {
    const { inputs, failures } = validateInputs({ blobId: "a", url: "http://x", nmae: "typo" });
    expect(inputs).toEqual({ blobId: "a" });
    expect(failures.map((f) => f.property)).toEqual(["url", "nmae"]);
    expect(failures[1].reason).toMatch(
      /nmae is not an input of StoredFile \(inputs: source, blobId, name, tag, metadata, contentType, retentionEpochs, retainUntil, keepAlive\)/,
    );
  });
});

describe("check: keepAlive", () => {
  it("accepts a policy and names each bad field with its limit", () => {
    expect(validateInputs({ blobId: "a", keepAlive: { minRemainingEpochs: 7, renewEpochs: 30 } }).failures).toEqual([]);
    const reasons = (keepAlive: unknown) => validateInputs({ blobId: "a", keepAlive }).failures.map((f) => `${f.property}: ${f.reason}`);
    expect(reasons({ minRemainingEpochs: 0, renewEpochs: 30 })[0]).toMatch(/keepAlive: keepAlive\.minRemainingEpochs must be >= 1 \(got 0\)/);
    expect(reasons({ minRemainingEpochs: 7, renewEpochs: 60 })[0]).toMatch(/keepAlive\.renewEpochs must be at most 53/);
    expect(reasons({ minRemainingEpochs: 7, renewEpochs: 2.5 })[0]).toMatch(/whole number of epochs \(got 2\.5\)/);
    expect(reasons({ minRemainingEpochs: 7 })[0]).toMatch(/keepAlive\.renewEpochs must be a number/);
    expect(reasons("daily")[0]).toMatch(/keepAlive must be an object/);
  });
});
