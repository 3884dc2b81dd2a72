import { describe, expect, it } from "vitest";
import { type PlanClock, planHolds, planHoldsUntil } from "../../../provider/file/plan";

/**
 * A plan made at one moment holds later while the file's epochs left are the same (`planHolds`);
 * `planHoldsUntil` names the first moment they are not, which a folder's recorded verdict of
 * "nothing to do" may not outlive (folder/resting.ts).
 */

const DAY = 86_400_000;
const clockAt = (nowMs: number, epochMs = DAY): PlanClock => ({ nowMs, epochMs, epochKnown: true, warnWithinEpochs: 3 });

describe("planHoldsUntil", () => {
  const then = Date.parse("2026-11-29T10:00:00Z");
  it.each([
    ["an hour left", then + 3_600_000, DAY],
    ["exactly one epoch left", then + DAY, DAY],
    ["nine epochs and a minute left", then + 9 * DAY + 60_000, DAY],
    ["40 epochs of 14 days and 1 ms", then + 40 * 14 * DAY + 1, 14 * DAY],
    ["a few seconds in 2-second epochs", then + 5_500, 2_000],
  ])("%s: the plan holds to the millisecond before, not at it", (_, expires, epochMs) => {
    const state = { expiresAt: new Date(expires).toISOString() };
    const until = planHoldsUntil(state, clockAt(then, epochMs));
    expect(until).toBeGreaterThan(then);
    expect(planHolds(state, clockAt(then, epochMs), clockAt(until - 1, epochMs))).toBe(true);
    expect(planHolds(state, clockAt(then, epochMs), clockAt(until, epochMs))).toBe(false);
  });

  it("while the length is not known, also when the epochs left drop in the longest epoch (the horizon's count)", () => {
    const hours = 3_600_000;
    // Epochs of 5 hours, not known: 135 left, the next drop in 5 hours; in 28-day epochs 2 left, the next drop in 3.
    const unknown = { ...clockAt(then, 5 * hours), epochKnown: false };
    const state = { expiresAt: new Date(then + 28 * DAY + 3 * hours).toISOString() };
    const until = planHoldsUntil(state, unknown);
    expect(until).toBe(then + 3 * hours);
    expect(planHolds(state, unknown, { ...unknown, nowMs: until - 1 })).toBe(true);
    expect(planHolds(state, unknown, { ...unknown, nowMs: until })).toBe(false);
    // Known, that length alone counts.
    expect(planHoldsUntil(state, { ...unknown, epochKnown: true })).toBe(then + 5 * hours);
  });

  it.each([
    ["expired", { expiresAt: new Date(then - 1).toISOString() }],
    ["expiring at this very moment", { expiresAt: new Date(then).toISOString() }],
    ["no expiry known", {}],
    ["an unreadable expiry", { expiresAt: "soon" }],
  ])("%s: time alone never changes its plan", (_, state) => {
    expect(planHoldsUntil(state, clockAt(then))).toBe(Number.POSITIVE_INFINITY);
    expect(planHolds(state, clockAt(then), clockAt(then + 1000 * DAY))).toBe(true);
  });
});
