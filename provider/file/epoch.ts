import { LONGEST_EPOCH_MS, SAME_LENGTH_MS } from "../service/facts";
import type { StoredFileState } from "./schema";

/**
 * A file's epochs, counted in the service's epoch as the stack knows it (service/facts.ts): the
 * retention start as epochs before the expiry, exact for an upload, a guess for a file adopted
 * while the length was not known (then a moment in the start's epoch is kept to count it again).
 */

/** The service's epoch as a count uses it: its length, and whether the stack knows it (service/facts.ts). */
export interface EpochLength {
  epochMs: number;
  /**
   * Whether an answer or the stack's setting gave that length. Otherwise it is the contract's
   * "about a day", and a purchase whose count depends on it buys one epoch first to learn it.
   */
  epochKnown: boolean;
}

/**
 * A moment in the retention start's epoch, when the state names one: the one recorded while the
 * count was a guess, else an earlier release's start time (never before createdAt).
 */
export function startMoment(olds: StoredFileState): number | undefined {
  // createdAt is read only when a moment is recorded: a plan then depends on it only where it counts (plan.ts, `planner`).
  const moment = olds.retentionStartMomentMs;
  const after = olds.retentionStartAfterCreated;
  const earlierStart = olds.retentionStart;
  if (typeof moment !== "number" && typeof after !== "number" && earlierStart === undefined) return undefined;
  const created = Date.parse(olds.createdAt ?? "");
  if (typeof moment === "number") return Number.isNaN(created) ? undefined : created + moment;
  const earlier = typeof after === "number" && !Number.isNaN(created) ? created + after : Date.parse(earlierStart ?? "");
  if (Number.isNaN(earlier)) return undefined;
  return Number.isNaN(created) ? earlier : Math.max(earlier, created);
}

/** Whether the retention start's count is a guess: made while the length was not known (an adoption, or a move someone else made). */
export const startGuessed = (olds: StoredFileState): boolean => typeof olds.retentionStartMomentMs === "number";

/** Epochs of `epochMs` from `moment` (in the start's epoch) to the recorded expiry: the start's epoch counts whole. */
function epochsFromMoment(olds: StoredFileState, moment: number, epochMs: number): number | undefined {
  const expires = Date.parse(olds.expiresAt ?? "");
  return Number.isNaN(expires) ? undefined : Math.max(0, Math.ceil((expires - moment) / epochMs - 1e-9));
}

/**
 * Epochs from the retention start to the recorded expiry. Once the length is known a start with a
 * moment is counted from it; states of earlier releases are counted in the setting's epochs, as
 * they bought, and never below their recorded `retentionEpochs`, so an upgrade buys nothing on an
 * unchanged declaration.
 */
export function retentionStartEpochs(olds: StoredFileState, clock: EpochLength): number {
  const declared = typeof olds.retentionEpochs === "number" ? olds.retentionEpochs : 0;
  const moment = startMoment(olds);
  const counted = typeof olds.retentionStartEpochs === "number" ? olds.retentionStartEpochs : undefined;
  if (clock.epochKnown && moment !== undefined) {
    const fromMoment = epochsFromMoment(olds, moment, clock.epochMs);
    if (fromMoment !== undefined) return counted !== undefined ? fromMoment : Math.max(declared, fromMoment);
  }
  if (counted !== undefined) return counted;
  const expires = Date.parse(olds.expiresAt ?? "");
  if (Number.isNaN(expires)) return declared;
  // A release before counts: its last purchase reached `purchasedExpiresAt`, `declared` epochs from the start.
  const start = moment ?? Date.parse(olds.purchasedExpiresAt ?? "") - declared * clock.epochMs;
  return Number.isNaN(start) ? declared : Math.max(declared, Math.round((expires - start) / clock.epochMs));
}

/**
 * Whether a guessed count may leave the file short: the declaration exceeds the epochs it has
 * from the start's moment in the longest epoch a service may have.
 */
export function mayLack(olds: StoredFileState, declared: number): boolean {
  const moment = startMoment(olds);
  const fewest = moment === undefined ? undefined : epochsFromMoment(olds, moment, LONGEST_EPOCH_MS);
  return fewest !== undefined && declared > fewest;
}

/** What a record says of a file's expiry. */
export interface ExpiryRecord {
  expiresAt?: string | null;
  createdAt?: string | null;
}

/**
 * How far an expiry moved between two records (ms). A createdAt moved earlier means an emulated
 * clock moved back, so it is measured after it; one moved later is ignored.
 */
export function expiryMovedMs(before: ExpiryRecord, after: ExpiryRecord): number | undefined {
  const b = Date.parse(before.expiresAt ?? "");
  const a = Date.parse(after.expiresAt ?? "");
  if (Number.isNaN(a) || Number.isNaN(b)) return undefined;
  const cb = Date.parse(before.createdAt ?? "");
  const ca = Date.parse(after.createdAt ?? "");
  return !Number.isNaN(cb) && !Number.isNaN(ca) && ca < cb ? a - ca - (b - cb) : a - b;
}

/**
 * Epochs an expiry moved later between two records. With the length not known a move counts at
 * least one epoch (the count is then a guess); a move earlier (a clock, not a purchase) counts none.
 */
export function epochsBetween(before: ExpiryRecord, after: ExpiryRecord, clock: EpochLength): number {
  const moved = expiryMovedMs(before, after) ?? 0;
  if (moved < SAME_LENGTH_MS) return 0;
  return clock.epochKnown ? Math.round(moved / clock.epochMs) : Math.max(1, Math.round(moved / clock.epochMs));
}

/** `clock` with the longest epoch a service may have when the length is not known: what a record's horizon is checked in, never refused on a guess. */
export function horizonClock<C extends EpochLength>(clock: C): C {
  return clock.epochKnown ? clock : { ...clock, epochMs: Math.max(clock.epochMs, LONGEST_EPOCH_MS) };
}
