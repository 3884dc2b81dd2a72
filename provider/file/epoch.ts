import type { PlanClock } from "./plan";
import type { StoredFileState } from "./schema";

/**
 * The service's epoch: its length as a file's answers showed it (or bounded it), and the counts
 * that rest on it. The setting (`tuskr:epochSeconds`) is only a first guess.
 */

/** Lengths closer than this are one (an answer's times may be whole seconds). */
const SAME_LENGTH_MS = 1000;

/**
 * The longest epoch an answer is believed to show: four weeks, twice Walrus mainnet's. A purchase
 * answered with an expiry moved further than this per epoch bought is not recorded.
 */
export const LONGEST_EPOCH_MS = 28 * 86_400_000;

/**
 * The service's epoch as a state knows it: exact once a renew's answer shows it, bounded by an
 * upload's. The setting is only a first guess, dropped once an answer contradicts it.
 */
export interface EpochLength {
  ms: number;
  seen: boolean;
  contradicted: boolean;
}

export function epochLength(olds: StoredFileState, clock: Pick<PlanClock, "epochMs" | "seenEpochMs">): EpochLength {
  const seen = olds.epochMsSeen ?? clock.seenEpochMs;
  if (typeof seen === "number" && seen > 0) return { ms: seen, seen: true, contradicted: Math.abs(seen - clock.epochMs) >= SAME_LENGTH_MS };
  const atLeast = typeof olds.epochMsAtLeast === "number" ? olds.epochMsAtLeast : undefined;
  const below = typeof olds.epochMsBelow === "number" ? olds.epochMsBelow : undefined;
  if (atLeast !== undefined && clock.epochMs < atLeast - SAME_LENGTH_MS) return { ms: atLeast, seen: false, contradicted: true };
  if (below !== undefined && clock.epochMs >= below + SAME_LENGTH_MS)
    return { ms: Math.max(below - SAME_LENGTH_MS, atLeast ?? 0), seen: false, contradicted: true };
  return { ms: clock.epochMs, seen: false, contradicted: false };
}

/**
 * `clock` with the longest epoch `olds`'s file may have: the length an answer showed, else
 * LONGEST_EPOCH_MS (a guess is no limit to judge an answer by). What a record's horizon is checked in.
 */
export function horizonClock<C extends Pick<PlanClock, "epochMs">>(olds: StoredFileState, clock: C): C {
  const epoch = epochLength(olds, clock);
  return { ...clock, epochMs: epoch.seen ? epoch.ms : Math.max(epoch.ms, LONGEST_EPOCH_MS) };
}

/** `clock` with the epoch's length as `olds` knows it: what every count of that file's epochs uses. */
export function fileClock<C extends Pick<PlanClock, "epochMs">>(olds: StoredFileState, clock: C): C {
  return { ...clock, epochMs: epochLength(olds, clock).ms };
}

/**
 * A moment in the retention start's epoch, when the state names one: the one recorded during a
 * guess, else an earlier release's start time (never before createdAt).
 */
export function startMoment(olds: StoredFileState): number | undefined {
  const created = Date.parse(olds.createdAt ?? "");
  if (typeof olds.retentionStartMomentMs === "number") return Number.isNaN(created) ? undefined : created + olds.retentionStartMomentMs;
  const earlier =
    typeof olds.retentionStartAfterCreated === "number" && !Number.isNaN(created)
      ? created + olds.retentionStartAfterCreated
      : Date.parse(olds.retentionStart ?? "");
  if (Number.isNaN(earlier)) return undefined;
  return Number.isNaN(created) ? earlier : Math.max(earlier, created);
}

/** Epochs of `epochMs` from `moment` (in the start's epoch) to the recorded expiry: the start's epoch counts whole. */
function epochsFromMoment(olds: StoredFileState, moment: number, epochMs: number): number | undefined {
  const expires = Date.parse(olds.expiresAt ?? "");
  return Number.isNaN(expires) ? undefined : Math.max(0, Math.ceil((expires - moment) / epochMs));
}

/**
 * Epochs from the retention start to the recorded expiry. States of earlier releases are counted in
 * the setting's epochs, as they bought, and never below their recorded `retentionEpochs`, so an
 * upgrade buys nothing on an unchanged declaration.
 */
export function retentionStartEpochs(olds: StoredFileState, setting?: Pick<PlanClock, "epochMs" | "seenEpochMs">): number {
  const seen = olds.epochMsSeen ?? setting?.seenEpochMs;
  const moment = startMoment(olds);
  const fromMoment = seen && moment !== undefined ? epochsFromMoment(olds, moment, seen) : undefined;
  const declared = typeof olds.retentionEpochs === "number" ? olds.retentionEpochs : 0;
  if (fromMoment !== undefined) return typeof olds.retentionStartEpochs === "number" ? fromMoment : Math.max(declared, fromMoment);
  if (typeof olds.retentionStartEpochs === "number") return olds.retentionStartEpochs;
  const expires = Date.parse(olds.expiresAt ?? "");
  if (!setting || Number.isNaN(expires)) return declared;
  const created = Date.parse(olds.createdAt ?? "");
  const reached = Date.parse(olds.purchasedExpiresAt ?? "");
  const start =
    typeof olds.retentionStartAfterCreated === "number" && !Number.isNaN(created)
      ? created + olds.retentionStartAfterCreated
      : !Number.isNaN(Date.parse(olds.retentionStart ?? ""))
        ? Date.parse(olds.retentionStart ?? "")
        : reached - declared * setting.epochMs;
  return Number.isNaN(start) ? declared : Math.max(declared, Math.round((expires - start) / setting.epochMs));
}

/**
 * Where a state's retention start is, for a state written now: the count (`retentionStartEpochs`),
 * and while no length is seen the moment it can be counted from once one is (earlier releases'
 * start times become that moment).
 */
export function startFields(
  olds: StoredFileState,
  setting: Pick<PlanClock, "epochMs" | "seenEpochMs">,
): Pick<StoredFileState, "retentionStartEpochs" | "retentionStartMomentMs"> {
  const moment = startMoment(olds);
  const created = Date.parse(olds.createdAt ?? "");
  const offset = moment === undefined || Number.isNaN(created) ? undefined : moment - created;
  return { retentionStartEpochs: retentionStartEpochs(olds, setting), retentionStartMomentMs: offset };
}

/**
 * Whether a file's epoch count rests on a guess that may leave it short: no length seen, and
 * `declared` exceeds what the file is known to have from the start's moment.
 */
export function mayLack(olds: StoredFileState, declared: number, epoch: EpochLength, longestMs: number): boolean {
  if (epoch.seen) return false;
  const moment = startMoment(olds);
  const fewest = moment === undefined ? undefined : epochsFromMoment(olds, moment, longestMs);
  if (fewest === undefined) return false;
  return declared > Math.max(typeof olds.retentionEpochs === "number" ? olds.retentionEpochs : 0, fewest);
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
 * What to tell when the answers contradict `tuskr:epochSeconds` (undefined when they do not):
 * the length seen, the setting, and what to run.
 */
export function epochSettingProblem(olds: StoredFileState, clock: Pick<PlanClock, "epochMs">): string | undefined {
  const epoch = epochLength(olds, clock);
  if (!epoch.contradicted) return undefined;
  const seconds = (ms: number) => String(Math.round(ms / 1000));
  const setting = `tuskr:epochSeconds ${seconds(clock.epochMs)}`;
  if (epoch.seen) {
    return `the service's epoch is ${seconds(epoch.ms)} s (a renew's answer moved expiresAt by that per epoch), not ${setting}: purchases count its epochs; run \`pulumi config set tuskr:epochSeconds ${seconds(epoch.ms)}\``;
  }
  const seen = clock.epochMs < epoch.ms ? `at least ${seconds(epoch.ms)} s` : `shorter than ${seconds(olds.epochMsBelow ?? epoch.ms)} s`;
  return `the upload's answer shows the service's epoch is ${seen}, not ${setting}: no purchase rests on that setting; set tuskr:epochSeconds to the service's epoch`;
}

/**
 * Epochs an expiry moved later between two records. With a guessed length a move counts at least
 * one epoch; a move earlier (a clock, not a purchase) counts none, so it never pushes the retention
 * start later.
 */
export function epochsBetween(before: ExpiryRecord, after: ExpiryRecord, epochMs: number, exact: boolean): number {
  const moved = expiryMovedMs(before, after) ?? 0;
  if (moved < SAME_LENGTH_MS) return 0;
  return exact ? Math.round(moved / epochMs) : Math.max(1, Math.round(moved / epochMs));
}
