import { describe, expect, it } from "vitest";
import { drifted, refreshedState } from "../../../provider/file/refresh";

const DAY = 86_400_000;
const clock = { nowMs: Date.parse("2026-11-20T12:00:00Z"), epochMs: DAY, epochKnown: true, warnWithinEpochs: 0 };
const before = { blobId: "b1", tag: "mine", createdAt: "2026-11-20T01:00:00.000Z", expiresAt: "2026-11-25T00:00:00.000Z", retentionStartEpochs: 5 };
const where = { blobId: "b1", serviceUrl: "http://127.0.0.1:1" };
const managed = new Set(["tag"] as const);

describe("a value another writer sets, found again, is another declaration", () => {
  it("the first difference is recorded by fingerprint, and the same value again is said as another stack's", () => {
    const first = refreshedState(before, { ...before, tag: "theirs" }, managed, clock, where);
    expect(first.driftSeen).toEqual({ tag: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(drifted(before, { tag: "theirs" }, managed, "b1")[0]).toMatch(/differs from what this stack set/);
    const afterUp = { ...first, tag: "mine" };
    expect(drifted(afterUp, { tag: "theirs" }, managed, "b1")[0]).toMatch(
      /tag is "theirs" again after this stack's last up set "mine": another stack declares it/,
    );
    expect(drifted(afterUp, { tag: "a third" }, managed, "b1")[0]).toMatch(/differs from what this stack set/);
  });

  it("a secret input's value leaves no fingerprint in state (a short secret's hash could be guessed back)", () => {
    const secret = { ...before, secretInputs: ["tag"] };
    expect(refreshedState(secret, { ...secret, tag: "theirs" }, managed, clock, where).driftSeen).toBeUndefined();
  });

  it("a fingerprint goes at the refresh after its field stops being managed or becomes secret; one still managed stays while the value matches", () => {
    const seen = refreshedState(before, { ...before, tag: "theirs" }, managed, clock, where);
    expect(refreshedState(seen, seen, managed, clock, where).driftSeen).toEqual(seen.driftSeen);
    expect(refreshedState(seen, seen, new Set(), clock, where).driftSeen).toBeUndefined();
    expect(refreshedState({ ...seen, secretInputs: ["tag"] }, seen, managed, clock, where).driftSeen).toBeUndefined();
  });
});
