import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { describe, expect, it } from "vitest";
import { planChange, remainingEpochs } from "../../../provider/file/plan";
import { epochsBetween, retentionStartEpochs } from "../../../provider/file/epoch";
import { UNKNOWN } from "../../../provider/engine/markers";

const recorded = {
  blobId: "b1",
  name: "a.png",
  tag: "avatar",
  metadata: { team: "web", owner: { id: 1, email: "x@y" } },
  retentionEpochs: 5,
  expiresAt: "2024-02-15T10:30:00Z",
  url: "https://cdn/b1",
};

describe("planChange: one pure plan for diff, create and update", () => {
  it.each([
    ["nothing declared beyond blobId", { blobId: "b1" }, { replace: false, changedFields: [], patch: undefined, renewEpochs: 0 }],
    [
      "same values",
      { blobId: "b1", name: "a.png", tag: "avatar", retentionEpochs: 5, metadata: { owner: { email: "x@y", id: 1 }, team: "web" } },
      { replace: false, changedFields: [], patch: undefined, renewEpochs: 0 },
    ],
    ["tag only", { blobId: "b1", tag: "logo" }, { replace: false, changedFields: ["tag"], patch: { tag: "logo" }, renewEpochs: 0 }],
    [
      "name and tag",
      { blobId: "b1", name: "b.png", tag: "logo" },
      { replace: false, changedFields: ["name", "tag"], patch: { name: "b.png", tag: "logo" }, renewEpochs: 0 },
    ],
    ["clear a tag with an empty string", { blobId: "b1", tag: "" }, { replace: false, changedFields: ["tag"], patch: { tag: "" }, renewEpochs: 0 }],
    ["epochs up by 7", { blobId: "b1", retentionEpochs: 12 }, { replace: false, changedFields: ["retentionEpochs"], patch: undefined, renewEpochs: 7 }],
    [
      "epochs down is never a negative renew (the declaration changes, nothing is bought)",
      { blobId: "b1", retentionEpochs: 2 },
      { replace: false, changedFields: ["retentionEpochs"], patch: undefined, renewEpochs: 0 },
    ],
    ["blobId changes: replace", { blobId: "b2", tag: "avatar" }, { replace: true, changedFields: ["blobId"], patch: undefined, renewEpochs: 0 }],
    [
      "tag and epochs together",
      { blobId: "b1", tag: "x", retentionEpochs: 6 },
      { replace: false, changedFields: ["tag", "retentionEpochs"], patch: { tag: "x" }, renewEpochs: 1 },
    ],
  ])("%s", (_label, news, expected) => {
    expect(planChange(recorded, news)).toMatchObject({ ...expected, notices: [], keepAliveEpochs: 0 });
  });

  it("treats every unknown preview value as a change, and an unknown blobId as a replace", () => {
    const plan = planChange(recorded, { blobId: UNKNOWN, name: UNKNOWN, metadata: UNKNOWN, retentionEpochs: UNKNOWN });
    expect(plan.replace).toBe(true);
    expect(plan.changedFields).toEqual(["blobId", "name", "metadata", "retentionEpochs"]);
    expect(plan.patch).toBeUndefined();
    expect(plan.renewEpochs).toBe(0);
  });

  it("counts epochs from zero when nothing was bought yet (adoption)", () => {
    expect(planChange({ blobId: "b1" }, { blobId: "b1", retentionEpochs: 5 }).renewEpochs).toBe(5);
    expect(planChange({ blobId: "b1", retentionEpochs: 0 }, { blobId: "b1", retentionEpochs: 0 }).changedFields).toEqual([]);
  });

  it("plans a PATCH when the service drifted from the declared value", () => {
    const drifted = { ...recorded, tag: "edited-out-of-band" };
    expect(planChange(drifted, { blobId: "b1", tag: "avatar" }).patch).toEqual({ tag: "avatar" });
  });
});

describe("planChange with a clock: expiry notices, keep-alive and the horizon", () => {
  const DAY = 86_400_000;
  const now = Date.parse("2026-11-22T12:00:00Z");
  const clock = { nowMs: now, epochMs: DAY, epochKnown: true, warnWithinEpochs: 3 };
  const expiringIn = (epochs: number) => new Date(now + epochs * DAY - 3_600_000).toISOString();
  const file = (left: number, extra = {}) => ({ blobId: "b", retentionEpochs: 2, expiresAt: expiringIn(left), ...extra });
  const keepAlive = { minRemainingEpochs: 7, renewEpochs: 30 };

  it("counts whole epochs left, the current one included", () => {
    expect(remainingEpochs(expiringIn(5), clock)).toBe(5);
    expect(remainingEpochs(new Date(now - DAY).toISOString(), clock)).toBe(0);
    expect(remainingEpochs(undefined, clock)).toBeUndefined();
  });

  it.each([
    [10, []],
    [3, [/expiring soon: 3 epoch\(s\) left/]],
    [0, [/already expired/]],
  ])("with %i epochs left notices %j", (left, expected) => {
    const plan = planChange(file(left), { blobId: "b", retentionEpochs: 2 }, clock);
    expect(plan.notices).toHaveLength(expected.length);
    for (const [i, re] of expected.entries()) expect(plan.notices[i].text).toMatch(re);
    expect(plan.renewEpochs).toBe(0);
  });

  it("keep-alive buys renewEpochs once when fewer than minRemainingEpochs are left, apart from retentionEpochs", () => {
    const plan = planChange(file(5, { keepAlive }), { blobId: "b", retentionEpochs: 2, keepAlive }, clock);
    expect(plan).toMatchObject({ retentionIncrease: 0, keepAliveEpochs: 30, renewEpochs: 30, changedFields: [] });
    expect(plan.notices.map((n) => n.text).join()).toMatch(/keep-alive renewal due: 5 epoch\(s\) left .* fewer than 7; buys 30 epoch\(s\)/);
    // Enough left: nothing due.
    expect(planChange(file(8, { keepAlive }), { blobId: "b", retentionEpochs: 2, keepAlive }, clock).renewEpochs).toBe(0);
  });

  it("keep-alive never buys past the horizon, and adds to a declared increase in one renew", () => {
    const policy = { minRemainingEpochs: 20, renewEpochs: 50 };
    const both = planChange(file(5, { keepAlive }), { blobId: "b", retentionEpochs: 12, keepAlive: policy }, clock);
    expect(both).toMatchObject({ retentionIncrease: 10, keepAliveEpochs: 38, renewEpochs: 48, horizonProblem: undefined });
    expect(both.notices.map((n) => n.text).join()).toMatch(/15 epoch\(s\) left after the declared purchase, fewer than 20; buys 38/);
    // A declared purchase that already leaves enough is not topped up.
    expect(planChange(file(5, { keepAlive }), { blobId: "b", retentionEpochs: 4, keepAlive }, clock).keepAliveEpochs).toBe(0);
    expect(both.changedFields).toEqual(["retentionEpochs", "keepAlive"]);
  });

  it("keep-alive on an expired file buys nothing (it cannot be renewed)", () => {
    expect(planChange(file(0, { keepAlive }), { blobId: "b", retentionEpochs: 2, keepAlive }, clock).renewEpochs).toBe(0);
  });

  it("a declared increase past the horizon is a problem with the numbers, planned before any request", () => {
    const plan = planChange(file(10), { blobId: "b", retentionEpochs: 2 + 45 }, clock);
    expect(plan.horizonProblem).toMatch(/buying 45 epoch\(s\) would end the storage 55 epochs ahead.*at most 53.*10 epoch\(s\) left.*at most 43 more/);
  });

  it("an unknown keepAlive during preview counts as a change", () => {
    expect(planChange(file(10), { blobId: "b", keepAlive: UNKNOWN }, clock).changedFields).toEqual(["keepAlive"]);
  });
});

describe("the horizon is a limit on what a plan buys", () => {
  it("a metadata-only update of a file already stored further than the horizon is not refused", () => {
    const clock = { nowMs: Date.parse("2026-11-23T00:00:00Z"), epochMs: 86_400_000, epochKnown: true, warnWithinEpochs: 3 };
    const far = { blobId: "b", tag: "a", retentionEpochs: 2, expiresAt: "2027-11-23T00:00:00Z" };
    const plan = planChange(far, { blobId: "b", tag: "b", retentionEpochs: 2 }, clock);
    expect(plan.horizonProblem).toBeUndefined();
    expect(plan.patch).toEqual({ tag: "b" });
  });
});

describe("purchases converge on the declared end", () => {
  const day = 86_400_000;
  const start = Date.parse("2026-11-01T00:00:00.000Z");
  const clock = { nowMs: start + day / 2, epochMs: day, epochKnown: true, warnWithinEpochs: 0 };
  const at = (epochs: number) => new Date(start + epochs * day).toISOString();
  const state = (expiresAfter: number, declared: number) => ({
    blobId: "b1",
    retentionEpochs: declared,
    createdAt: at(0),
    retentionStartAfterCreated: 0,
    expiresAt: at(expiresAfter),
  });

  it.each([
    ["the end reached: nothing", 5, 5, 5, 0],
    ["raised 5 → 8 on a file ending at 5: 3", 5, 5, 8, 3],
    ["raised 5 → 8 on a file someone renewed to 7: 1", 7, 5, 8, 1],
    ["raised 5 → 8 on a file an interrupted run renewed to 8: nothing", 8, 5, 8, 0],
    ["lowered 8 → 3: nothing", 8, 8, 3, 0],
  ])("%s", (_label, expiresAfter, recordedEpochs, declared, renew) => {
    const plan = planChange(state(expiresAfter, recordedEpochs), { blobId: "b1", retentionEpochs: declared }, clock);
    expect(plan.renewEpochs).toBe(renew);
    expect(plan.changedFields.includes("retentionEpochs")).toBe(declared !== recordedEpochs);
  });

  it("a state of an earlier release (no retention start): counted from the expiry its last purchase reached, so nothing is bought again", () => {
    const old = { blobId: "b1", retentionEpochs: 4, expiresAt: at(9), purchasedExpiresAt: at(9) };
    expect(planChange(old, { blobId: "b1", retentionEpochs: 4 }, clock).renewEpochs).toBe(0);
    expect(planChange(old, { blobId: "b1", retentionEpochs: 6 }, clock).renewEpochs).toBe(2);
  });

  it("a content whose entry expired is uploaded anew (a replace), said in the preview", () => {
    const source = { [SIG_KEY]: ASSET_SIG, hash: "abc", text: "x" };
    const expired = { blobId: "b1", sourceHash: "abc", retentionEpochs: 1, createdAt: at(-3), retentionStartAfterCreated: 0, expiresAt: at(-2) };
    const plan = planChange(expired, { source, retentionEpochs: 1 }, clock);
    expect(plan.replaceFields).toEqual(["source"]);
    expect(plan.notices.map((n) => n.text).join("\n")).toMatch(/expired .*its content is uploaded anew/);
    expect(plan.expiredProblem).toBeUndefined();
  });
});

describe("ends counted in the service's epochs, whatever their length", () => {
  const day = 86_400_000;
  const hour = 3_600_000;
  const now = Date.parse("2026-11-01T12:00:00.000Z");
  /** The provider at its default setting: a day. */
  const setting = { nowMs: now, epochMs: day, epochKnown: false, warnWithinEpochs: 0 };
  const inHours = (h: number) => new Date(now + h * hour).toISOString();
  const inDays = (d: number) => new Date(now + d * day).toISOString();

  const known = (epochMs: number) => ({ ...setting, epochMs, epochKnown: true });
  it.each([
    // label, recorded state, declared, the clock (the service's epoch as the stack knows it), epochs bought in all, of them by a first renew (to learn the length)
    [
      "6 declared, the start 6 epochs before an expiry hours away: nothing",
      { retentionEpochs: 6, retentionStartEpochs: 6, expiresAt: inHours(5) },
      { retentionEpochs: 6 },
      setting,
      0,
      undefined,
    ],
    [
      "6 → 8, the length not known: 2, of them 1 first to learn it",
      { retentionEpochs: 6, retentionStartEpochs: 6, expiresAt: inHours(5) },
      { retentionEpochs: 8 },
      setting,
      2,
      1,
    ],
    [
      "6 → 8, epochs of two weeks known: 2 in one renew",
      { retentionEpochs: 6, retentionStartEpochs: 6, expiresAt: inDays(70) },
      { retentionEpochs: 8 },
      known(14 * day),
      2,
      undefined,
    ],
    [
      "6 → 8 on an expiry someone moved 1 epoch on: 1",
      { retentionEpochs: 6, retentionStartEpochs: 7, expiresAt: inDays(6) },
      { retentionEpochs: 8 },
      known(day),
      1,
      undefined,
    ],
    ["lowered 8 → 3: nothing", { retentionEpochs: 8, retentionStartEpochs: 8, expiresAt: inDays(7) }, { retentionEpochs: 3 }, setting, 0, undefined],
    [
      "a date 5.5 h past the expiry, an hour known: 6",
      { retentionStartEpochs: 3, expiresAt: inHours(2) },
      { retainUntil: inHours(7.5) },
      known(hour),
      6,
      undefined,
    ],
    [
      "a date 20 days past the expiry, the length not known: 20 by a day, 1 first",
      { retentionStartEpochs: 1, expiresAt: inDays(1) },
      { retainUntil: inDays(21) },
      setting,
      20,
      1,
    ],
    [
      "a count that reaches further than the date, not known: 29, 1 first",
      { retentionEpochs: 1, retentionStartEpochs: 1, expiresAt: inDays(1) },
      { retentionEpochs: 30, retainUntil: inDays(21) },
      setting,
      29,
      1,
    ],
    [
      "an adopted file, 8 declared, 70 days left, not known: 1 to learn the length (three epochs of four weeks would lack)",
      { retentionEpochs: 0, retentionStartEpochs: 70, createdAt: inDays(-1), retentionStartMomentMs: day, expiresAt: inDays(70) },
      { retentionEpochs: 8 },
      setting,
      1,
      1,
    ],
    [
      "an adopted file, 1 declared, 20 days left, not known: nothing (no epoch of four weeks or less lacks)",
      { retentionEpochs: 0, retentionStartEpochs: 20, createdAt: inDays(-1), retentionStartMomentMs: day, expiresAt: inDays(20) },
      { retentionEpochs: 1 },
      setting,
      0,
      undefined,
    ],
    [
      "an adopted file, 20 declared, 10 days left, not known: 10 by a day, 1 first",
      { retentionEpochs: 0, retentionStartEpochs: 10, createdAt: inDays(-1), retentionStartMomentMs: day, expiresAt: inDays(10) },
      { retentionEpochs: 20 },
      setting,
      10,
      1,
    ],
    [
      "the same, a day known: 10 in one renew",
      { retentionEpochs: 0, retentionStartEpochs: 10, createdAt: inDays(-1), retentionStartMomentMs: day, expiresAt: inDays(10) },
      { retentionEpochs: 20 },
      known(day),
      10,
      undefined,
    ],
    [
      "the same, two weeks known: counted again from the moment, 6",
      { retentionEpochs: 0, retentionStartEpochs: 20, createdAt: inDays(-1), retentionStartMomentMs: day, expiresAt: inDays(20) },
      { retentionEpochs: 8 },
      known(14 * day),
      6,
      undefined,
    ],
  ])("%s", (_label, olds, news, clock, renew, first) => {
    const plan = planChange({ blobId: "b1", ...olds }, { blobId: "b1", ...news }, clock);
    expect(plan.renewEpochs).toBe(renew);
    expect(plan.lengthProbe).toBe(first);
  });

  it("a purchase that learns the length is said as one notice about the service, naming what settles it", () => {
    const adopted = { blobId: "b1", retentionEpochs: 0, retentionStartEpochs: 20, createdAt: inDays(-1), retentionStartMomentMs: day, expiresAt: inDays(20) };
    const said = planChange(adopted, { blobId: "b1", retentionEpochs: 8 }, setting).notices.filter((n) => n.kind === "length-probe");
    expect(said.map((n) => n.text)).toEqual([
      expect.stringMatching(
        /its first purchase buys 1 epoch, whose record shows it.*an adopted file that may lack epochs buys that 1 epoch too.*pulumi-tuskr doctor/,
      ),
    ]);
    expect(planChange(adopted, { blobId: "b1", retentionEpochs: 8 }, known(day)).notices).toEqual([]);
  });

  it.each([
    ["a purchase of 2 of an hour", { expiresAt: inHours(3), createdAt: inHours(-1) }, { expiresAt: inHours(5), createdAt: inHours(-1) }, hour, true, 2],
    [
      "time passing on an emulated clock (both times moved back)",
      { expiresAt: inDays(5), createdAt: inDays(-1) },
      { expiresAt: inDays(2), createdAt: inDays(-4) },
      day,
      true,
      0,
    ],
    [
      "a createdAt that moved later, the expiry where it was",
      { expiresAt: inDays(5), createdAt: inDays(-3) },
      { expiresAt: inDays(5), createdAt: inDays(-1) },
      day,
      true,
      0,
    ],
    ["a move of 2 hours counted in a guessed day: at least one", { expiresAt: inHours(3) }, { expiresAt: inHours(5) }, day, false, 1],
    ["an expiry that moved earlier: none", { expiresAt: inDays(5) }, { expiresAt: inDays(4) }, day, false, 0],
  ])("epochs between two records: %s", (_label, before, after, epochMs, exact, epochs) => {
    expect(epochsBetween(before, after, { epochMs, epochKnown: exact })).toBe(epochs);
  });

  it("a state of the previous release: its start as a time, counted in the setting's epochs and never fewer than it recorded as reached", () => {
    const created = inDays(-2);
    const start = Date.parse(created) + 3_600_000;
    const old = {
      blobId: "b1",
      retentionEpochs: 3,
      createdAt: created,
      retentionStartAfterCreated: 3_600_000,
      expiresAt: new Date(start + 3 * day).toISOString(),
    };
    expect(retentionStartEpochs(old, setting)).toBe(3);
    expect(planChange(old, { blobId: "b1", retentionEpochs: 3 }, setting).renewEpochs).toBe(0);
    expect(planChange(old, { blobId: "b1", retentionEpochs: 4 }, setting).renewEpochs).toBe(1);
    // Written against a service of hour-long epochs, its expiry hours past its start: never fewer than the 3 it recorded.
    expect(retentionStartEpochs({ ...old, expiresAt: new Date(start + 5 * hour).toISOString() }, setting)).toBe(3);
  });
});
