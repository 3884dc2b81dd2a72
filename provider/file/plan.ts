import { LIMITS, PATCH_FIELDS, isPlainObject, jsonEqual, mergePatchBetween, type UpdateFileBody } from "../../api";
import { ASSET_SIG, SIG_KEY, UNKNOWN } from "../engine/markers";
import { type DeclaredInputs, type InputField, type KeepAlive, REPLACE_FIELDS, type StoredFileState, isUnknown, retainUntilMs } from "./schema";
import { type Reason, shows } from "./reason";
import { sameMediaType, wireAsset } from "./source";
import { type EpochLength, horizonClock, mayLack, retentionStartEpochs, startGuessed } from "./epoch";

/** Time, made explicit so the plan stays a pure function. */
export interface PlanClock extends EpochLength {
  nowMs: number;
  /** Warn when a file has this many epochs left or fewer. */
  warnWithinEpochs: number;
}

/** What is said, once per stack, when a purchase learns the service's epoch (the preview, the up, the pull-request summary). */
export const LEARNS_LENGTH =
  "the service's epoch is not known to this stack (tuskr:epochSeconds unset, no answer has shown it): its first purchase buys 1 epoch, whose record shows it, then the rest; an adopted file that may lack epochs buys that 1 epoch too. `pulumi-tuskr doctor --spend` measures it";

/** Whole epochs left, the current one included; undefined when the expiry is not known. */
export function remainingEpochs(expiresAt: string | null | undefined, clock: Pick<PlanClock, "nowMs" | "epochMs">): number | undefined {
  const at = expiresAt ? Date.parse(expiresAt) : Number.NaN;
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - clock.nowMs) / clock.epochMs));
}

/**
 * The lengths a plan counts a file's epochs left in: the epoch's, and while that is not known the
 * longest an epoch may be (the horizon's, `horizonClock`).
 */
const countedIn = <C extends Pick<PlanClock, "nowMs" | "epochMs" | "epochKnown">>(clock: C): C[] => (clock.epochKnown ? [clock] : [clock, horizonClock(clock)]);

/**
 * Whether a plan of a recorded file made at `then` holds at `now`: time enters it only through the
 * file's epochs left (keep-alive, expiry), in each length it counts them in, and the epoch's length.
 */
export function planHolds(state: StoredFileState, then: PlanClock, now: PlanClock): boolean {
  if (then.epochMs !== now.epochMs || then.epochKnown !== now.epochKnown) return false;
  const [at, later] = [countedIn(then), countedIn(now)];
  return at.every((clock, i) => remainingEpochs(state.expiresAt, clock) === remainingEpochs(state.expiresAt, later[i]));
}

/**
 * The moment from which a plan made at `then` may no longer hold by time alone: when the file's
 * epochs left next drop in a length it counts them in (`planHolds`). Never (Infinity) for a file
 * expired or of unknown expiry.
 */
export function planHoldsUntil(state: StoredFileState, then: Pick<PlanClock, "nowMs" | "epochMs" | "epochKnown">): number {
  let until = Number.POSITIVE_INFINITY;
  for (const clock of countedIn(then)) {
    const left = remainingEpochs(state.expiresAt, clock);
    if (left !== undefined && left > 0) until = Math.min(until, Date.parse(state.expiresAt as string) - (left - 1) * clock.epochMs);
  }
  return until;
}

/**
 * A `retainUntil` the service may not reach: it sells at most `maxEpochsAhead` epochs from the
 * start of its current epoch, unknown before a read, so only a date one epoch inside that is safe.
 * Checked at preview, before any request.
 */
export function retainUntilProblem(until: unknown, clock: Pick<PlanClock, "nowMs" | "epochMs">): Reason | undefined {
  const ms = retainUntilMs(until);
  if (ms === undefined) return undefined;
  const sure = LIMITS.maxEpochsAhead - 1;
  const latestMs = clock.nowMs + sure * clock.epochMs;
  if (ms <= latestMs) return undefined;
  const ahead = (ms - clock.nowMs) / clock.epochMs;
  return [
    `retainUntil must be at most ${sure} epochs from now`,
    shows(` (got ${String(until)}, ${ahead.toFixed(2)} epochs from now)`),
    `: the service sells at most ${LIMITS.maxEpochsAhead} epochs ahead. Declare ${new Date(latestMs).toISOString()} or earlier`,
  ];
}

/** Epochs an upload buys to store its file until `untilMs` (counted from now; the plan renews a rounding short). */
function epochsUntil(untilMs: number | undefined, clock: Pick<PlanClock, "nowMs" | "epochMs">): number {
  return untilMs === undefined ? 0 : Math.max(0, Math.ceil((untilMs - clock.nowMs) / clock.epochMs - 1e-9));
}

/**
 * Epochs an upload carries: the declared count, or what its date needs in the longest plausible
 * epoch length. A guess may overbuy, so what the date still lacks after upload is renewed on the
 * observed length.
 */
export function uploadFormEpochs(news: DeclaredInputs, clock: Pick<PlanClock, "nowMs" | "epochMs" | "epochKnown">): number {
  const declared = typeof news.retentionEpochs === "number" ? news.retentionEpochs : 0;
  return Math.max(declared, epochsUntil(retainUntilMs(news.retainUntil), horizonClock(clock)));
}

/** Epochs the create of `news` buys in all, counted in `clock`'s epochs: what its declared ends need from now (the later of the two), at least 0. */
export function uploadEpochs(news: DeclaredInputs, clock: Pick<PlanClock, "nowMs" | "epochMs">): number {
  const declared = typeof news.retentionEpochs === "number" ? news.retentionEpochs : 0;
  return Math.max(declared, epochsUntil(retainUntilMs(news.retainUntil), clock));
}

/**
 * Whether an upload's epochs come from its `retainUntil`. Counted from now they may fall an epoch
 * short, since the service counts from its current epoch's start (known only after upload); the
 * plan renews the shortfall.
 */
export function uploadEndsAtDate(news: DeclaredInputs, clock: Pick<PlanClock, "nowMs" | "epochMs">): boolean {
  const byDate = epochsUntil(retainUntilMs(news.retainUntil), clock);
  return byDate > 0 && byDate >= (typeof news.retentionEpochs === "number" ? news.retentionEpochs : 0);
}

/** What keep-alive buys with `left` epochs left after the declared purchase: its amount when too few are left, never past the horizon. */
function keepAliveBuys(left: number, policy: KeepAlive): number {
  return left < policy.minRemainingEpochs ? Math.max(0, Math.min(policy.renewEpochs, LIMITS.maxEpochsAhead - left)) : 0;
}

/**
 * What keep-alive buys right after an upload, known unless the upload's own epochs and a date's
 * top-up disagree. Undefined when no keep-alive is declared.
 */
export function keepAliveAfterUpload(news: DeclaredInputs, clock: Pick<PlanClock, "nowMs" | "epochMs">): { epochs: number; known: boolean } | undefined {
  if (!isPlainObject(news.keepAlive)) return undefined;
  const policy = news.keepAlive as KeepAlive;
  const left = Math.max(uploadEpochs(news, clock), 1);
  const buys = keepAliveBuys(left, policy);
  return { epochs: buys, known: !uploadEndsAtDate(news, clock) || keepAliveBuys(left + 1, policy) === buys };
}

/** Whole epochs to buy for an expiry to reach `endMs` (0 when it does already). */
function epochsToReach(expiresAtMs: number, endMs: number, epochMs: number): number {
  // Times are whole milliseconds: an end a millisecond past the expiry lacks an epoch.
  return Math.max(0, Math.ceil((endMs - expiresAtMs - 0.5) / epochMs));
}

/**
 * Moves a file from its recorded state to the declared inputs. Pure, and shared by `diff` and
 * `create`/`update`, so a preview never promises what the apply does not do.
 */
/** What a plan says of a file, by kind: a reader decides by the kind, never by the words. */
interface PlanNotice {
  /** `length-probe` is about the service, not the file: said once per stack, however many files it concerns. */
  kind: "type-kept" | "expired" | "keep-alive-due" | "keep-alive-no-room" | "expiring-soon" | "unconfirmed-renew" | "unconfirmed-upload" | "length-probe";
  text: string;
}

export interface StoredFilePlan {
  /** Another file (another blobId, other content, adopting ↔ uploading): replace. */
  replace: boolean;
  /** The inputs whose change makes the replace. */
  replaceFields: InputField[];
  /** Input fields whose declared value differs from the recorded one (or is not known yet). */
  changedFields: InputField[];
  /** The PATCH body (only fields that change), or undefined when nothing is to be patched. */
  patch?: UpdateFileBody;
  /** Epochs to buy with one renew (what the declared end lacks + keep-alive); 0 when none. Never negative. */
  renewEpochs: number;
  /** Of renewEpochs, what the file lacks of the declared end (`retentionEpochs`, `retainUntil`: the later). */
  retentionIncrease: number;
  /**
   * Set (to 1) when the plan buys while the service's epoch is not known: the first renew buys one
   * epoch, its answer shows the length, and the rest is planned in it (a guess never buys more).
   */
  lengthProbe?: number;
  /** Of renewEpochs, what keep-alive buys because too few epochs are left. */
  keepAliveEpochs: number;
  /** Epochs left before this plan, as of the recorded expiry. */
  remainingBefore?: number;
  /** Set when the renew would pass the service's horizon: the plan must not be applied. */
  horizonProblem?: string;
  /** Set when the plan would write to a file recorded as expired: the service refuses that, so it must not be applied. */
  expiredProblem?: string;
  /** Things a reviewer must see in the preview: expired, expiring soon, keep-alive due. */
  notices: PlanNotice[];
}

/**
 * What identifies the file a replacing input declares, as declared and as recorded: the content
 * hash for `source`, the id for an adopted `blobId`, otherwise the value.
 */
function identities(field: InputField, olds: StoredFileState, news: DeclaredInputs): { declared: unknown; recorded: unknown } {
  if (isUnknown(news[field])) return { declared: UNKNOWN, recorded: undefined };
  if (field === "source") return { declared: wireAsset(news.source)?.hash, recorded: olds.sourceHash };
  if (field === "blobId") return { declared: news.blobId, recorded: olds.sourceHash ? undefined : olds.blobId };
  return { declared: news[field], recorded: (olds as Record<string, unknown>)[field] };
}

type Clock = PlanClock | undefined;

/** Another file: another blobId declared, other content (another hash), or a content whose entry expired (uploaded anew). */
function replacement(olds: StoredFileState, news: DeclaredInputs, clock: Clock) {
  const replaceFields: InputField[] = [];
  for (const field of REPLACE_FIELDS) {
    if (news[field] === undefined || news[field] === null) continue;
    const { declared, recorded } = identities(field, olds, news);
    if (declared === UNKNOWN || declared === undefined || !jsonEqual(declared, recorded)) replaceFields.push(field);
  }
  const expiredContent =
    clock !== undefined && !replaceFields.includes("source") && wireAsset(news.source) !== undefined && remainingEpochs(olds.expiresAt, clock) === 0;
  if (expiredContent) replaceFields.push("source");
  return { replaceFields, expiredContent };
}

/** The PATCH: each declared field that differs from the recorded one (metadata as an RFC 7396 body). */
function patchOf(olds: StoredFileState, news: DeclaredInputs) {
  const fields: InputField[] = [];
  const patch: Record<string, unknown> = {};
  for (const field of PATCH_FIELDS) {
    const declared = news[field];
    // An omitted field is unmanaged: whatever the service holds is left alone.
    if (declared === undefined || declared === null) continue;
    if (isUnknown(declared)) {
      fields.push(field);
      continue;
    }
    const recorded = olds[field];
    if (field === "metadata") {
      const body = mergePatchBetween(recorded, declared as Record<string, unknown>);
      if (body !== undefined) {
        fields.push(field);
        patch.metadata = body;
      }
    } else if (declared !== recorded) {
      fields.push(field);
      patch[field] = declared;
    }
  }
  return { fields, patch };
}

/** The declared values besides the PATCH's that changed: the end, the type, keep-alive. */
function declaredChanges(olds: StoredFileState, news: DeclaredInputs) {
  const fields: InputField[] = [];
  const declaredEpochs = news.retentionEpochs;
  const recordedEpochs = typeof olds.retentionEpochs === "number" ? olds.retentionEpochs : 0;
  if (isUnknown(declaredEpochs) || (typeof declaredEpochs === "number" && declaredEpochs !== recordedEpochs)) fields.push("retentionEpochs");
  // The type is recorded at upload; a stored one cannot be changed (a notice says what is served).
  const typeChanged = isUnknown(news.contentType) || (news.contentType ?? undefined) !== (olds.contentType ?? undefined);
  if (typeChanged) fields.push("contentType");
  if (isUnknown(news.retainUntil) || (news.retainUntil ?? undefined) !== (olds.retainUntil ?? undefined)) fields.push("retainUntil");
  const keepAlive = news.keepAlive;
  // A policy no longer declared is a change too: nothing is sent, the state (which the expiry report reads) drops it.
  const keepAliveDropped = (keepAlive === undefined || keepAlive === null) && isPlainObject(olds.keepAlive);
  if (isUnknown(keepAlive) || keepAliveDropped || (keepAlive !== undefined && keepAlive !== null && !jsonEqual(keepAlive, olds.keepAlive))) {
    fields.push("keepAlive");
  }
  return { fields, typeChanged };
}

/**
 * What the file lacks of the declared end (the later of retentionEpochs and retainUntil), counted
 * in the service's own epochs so purchases converge. While the length is not known, a guessed
 * count that buys nothing may still lack in a longer epoch: one epoch then learns it.
 */
function endPurchase(olds: StoredFileState, news: DeclaredInputs, clock: Clock): { retentionIncrease: number; fewest: number } {
  const declaredEpochs = news.retentionEpochs;
  const start = clock ? retentionStartEpochs(olds, clock) : (olds.retentionStartEpochs ?? olds.retentionEpochs ?? 0);
  const byCount = typeof declaredEpochs === "number" ? Math.max(0, declaredEpochs - start) : 0;
  const expires = Date.parse(olds.expiresAt ?? "");
  const untilMs = clock ? retainUntilMs(news.retainUntil) : undefined;
  const byDate = clock && untilMs !== undefined && !Number.isNaN(expires) ? epochsToReach(expires, untilMs, clock.epochMs) : 0;
  const retentionIncrease = Math.max(byCount, byDate);
  // What is bought whatever the length, for the horizon: a count (from a guessed start, its end as
  // many epochs ahead in any length as in the guess), a date in the longest epoch.
  const sure = !clock || clock.epochKnown;
  const fewest = sure
    ? retentionIncrease
    : Math.max(byCount, untilMs !== undefined && !Number.isNaN(expires) ? epochsToReach(expires, untilMs, horizonClock(clock).epochMs) : 0);
  const unsure = !sure && retentionIncrease === 0 && typeof declaredEpochs === "number" && mayLack(olds, declaredEpochs);
  // More epochs left than the service sells ahead: a day is too short a guess, and an earlier
  // release's count in it no count (a declaration it recorded as met stands, as it bought).
  const refuted = !sure && (remainingEpochs(olds.expiresAt, clock) ?? 0) > LIMITS.maxEpochsAhead + 1 && declaredEpochs !== undefined;
  const met = typeof olds.retentionEpochs === "number" ? olds.retentionEpochs : 0;
  if (unsure && (startGuessed(olds) || (refuted && (declaredEpochs as number) > met))) return { retentionIncrease: 1, fewest: 1 };
  return { retentionIncrease, fewest };
}

/** Keep-alive's purchase, measured after the declared one, and what the plan says of an expired or expiring file. */
function keepAliveAndNotices(olds: StoredFileState, news: DeclaredInputs, clock: Clock, retentionIncrease: number, expiredContent: boolean) {
  const notices: PlanNotice[] = [];
  const remainingBefore = clock ? remainingEpochs(olds.expiresAt, clock) : undefined;
  let keepAliveEpochs = 0;
  if (clock && remainingBefore !== undefined) {
    const left = `${remainingBefore} epoch(s) left (expires ${olds.expiresAt})`;
    if (remainingBefore === 0) {
      notices.push({
        kind: "expired",
        text: expiredContent
          ? `expired (${olds.expiresAt}): its content is uploaded anew`
          : `already expired (${olds.expiresAt}): an expired file cannot be renewed or updated`,
      });
    }
    const policy = isPlainObject(news.keepAlive) ? (news.keepAlive as KeepAlive) : undefined;
    // Measured after this plan's declared purchase: keep-alive only tops up what is still short.
    const leftAfterDeclared = remainingBefore + retentionIncrease;
    if (policy && remainingBefore > 0 && leftAfterDeclared < policy.minRemainingEpochs) {
      keepAliveEpochs = keepAliveBuys(leftAfterDeclared, policy);
      const short = retentionIncrease > 0 ? `${leftAfterDeclared} epoch(s) left after the declared purchase` : left;
      notices.push(
        keepAliveEpochs > 0
          ? { kind: "keep-alive-due", text: `keep-alive renewal due: ${short}, fewer than ${policy.minRemainingEpochs}; buys ${keepAliveEpochs} epoch(s)` }
          : {
              kind: "keep-alive-no-room",
              text: `keep-alive renewal due (${short}) but the ${LIMITS.maxEpochsAhead}-epoch horizon leaves no room; nothing bought`,
            },
      );
    }
  }
  const renewEpochs = retentionIncrease + keepAliveEpochs;
  // Only a file that will still be short after what this plan buys is about to lapse: one that a
  // declared purchase or keep-alive renews past the window is not (the reviewer sees the purchase).
  if (clock && remainingBefore !== undefined && remainingBefore > 0 && remainingBefore + renewEpochs <= clock.warnWithinEpochs) {
    const after = renewEpochs > 0 ? `, ${remainingBefore + renewEpochs} after this plan's purchase` : "";
    notices.push({ kind: "expiring-soon", text: `expiring soon: ${remainingBefore} epoch(s) left (expires ${olds.expiresAt})${after}` });
  }
  return { keepAliveEpochs, remainingBefore, renewEpochs, notices };
}

/** Why applying the plan would fail: past the service's horizon, or to an expired file. */
function planProblems(olds: StoredFileState, remainingBefore: number | undefined, renewEpochs: number, writes: boolean, replace: boolean) {
  let horizonProblem: string | undefined;
  if (remainingBefore !== undefined && remainingBefore > 0 && renewEpochs > 0 && remainingBefore + renewEpochs > LIMITS.maxEpochsAhead) {
    horizonProblem =
      `buying ${renewEpochs} epoch(s) would end the storage ${remainingBefore + renewEpochs} epochs ahead; the service sells at most ` +
      `${LIMITS.maxEpochsAhead}, and the file has ${remainingBefore} epoch(s) left (expires ${olds.expiresAt}): at most ` +
      `${LIMITS.maxEpochsAhead - remainingBefore} more now`;
  }
  const expiredProblem =
    !replace && writes && remainingBefore === 0
      ? `it expired at ${olds.expiresAt} (as last read), and an expired file cannot be updated or renewed: nothing is sent. ` +
        "Upload it again, remove the resource, or `pulumi refresh` if it was renewed elsewhere"
      : undefined;
  return { horizonProblem, expiredProblem };
}

export function planChange(olds: StoredFileState, news: DeclaredInputs, clock?: PlanClock): StoredFilePlan {
  const { replaceFields, expiredContent } = replacement(olds, news, clock);
  const replace = replaceFields.length > 0;
  const patched = patchOf(olds, news);
  const declared = declaredChanges(olds, news);
  const changedFields: InputField[] = [...replaceFields, ...patched.fields, ...declared.fields];
  const { retentionIncrease, fewest } = endPurchase(olds, news, clock);
  const kept = keepAliveAndNotices(olds, news, clock, retentionIncrease, expiredContent);
  const notices = kept.notices;
  const declaredType = news.contentType;
  if (declared.typeChanged && !replace && typeof declaredType === "string" && olds.mimeType && !sameMediaType(declaredType, olds.mimeType)) {
    notices.unshift({
      kind: "type-kept",
      text: `contentType ${declaredType}: the service keeps the type these bytes were uploaded with and no request changes it: nothing is sent, it stays served as ${olds.mimeType}`,
    });
  }
  if (olds.unconfirmedUpload) {
    notices.push({
      kind: "unconfirmed-upload",
      text: "an earlier up uploaded it, but the entry the service named was not shown to hold these bytes: the up checks it again before anything is sent on it",
    });
  }
  const sent = olds.unconfirmedRenew;
  if (sent) {
    notices.push({
      kind: "unconfirmed-renew",
      text: `a renew of ${sent.epochs} epoch(s) an earlier up sent may have been bought (its answer was lost): the up reads the file first and buys only what is still lacking`,
    });
  }
  // Bought while the length is not known: one epoch first, whose answer shows it.
  const lengthProbe = clock && !clock.epochKnown && kept.renewEpochs > 0 ? 1 : undefined;
  if (lengthProbe !== undefined) notices.push({ kind: "length-probe", text: LEARNS_LENGTH });
  const hasPatch = Object.keys(patched.patch).length > 0;
  // Not known, the length is no basis for a refusal: the horizon is counted in the longest epoch, for what is bought whatever the length.
  const horizonLeft = clock && !clock.epochKnown ? remainingEpochs(olds.expiresAt, horizonClock(clock)) : kept.remainingBefore;
  const problems = planProblems(olds, horizonLeft, lengthProbe ? Math.max(1, fewest) : kept.renewEpochs, hasPatch || kept.renewEpochs > 0, replace);
  return {
    replace,
    replaceFields,
    changedFields,
    patch: hasPatch ? (patched.patch as UpdateFileBody) : undefined,
    renewEpochs: kept.renewEpochs,
    retentionIncrease,
    lengthProbe,
    keepAliveEpochs: kept.keepAliveEpochs,
    remainingBefore: kept.remainingBefore,
    ...problems,
    notices,
  };
}

/** How one property changes, in the engine's terms (a provider plugin's detailed diff). */
type PropertyDiffKind = "add" | "add-replace" | "delete" | "delete-replace" | "update" | "update-replace";
export interface PropertyDiff {
  /** The top-level property the change is under (`metadata` for `metadata.team`): what a reader decides by, not the key. */
  field: string;
  kind: PropertyDiffKind;
  /** Between the old and the new inputs (true), or between the old outputs and the new inputs. */
  inputDiff: boolean;
}

/** A key below a field: written `.key` when it is an identifier, else `["key"]`; `{ quoted }` is always written `["key"]`. */
export type PathStep = string | { quoted: string };

const stepped = (parent: string, step: PathStep): string =>
  typeof step === "string" && /^[A-Za-z_][A-Za-z0-9_]*$/.test(step)
    ? `${parent}.${step}`
    : `${parent}[${JSON.stringify(typeof step === "string" ? step : step.quoted)}]`;

/**
 * Records `change` under the property path the engine shows (`metadata.team`, `files["a.html"].name`),
 * written from its field and the keys below: the one place a key is made, so a key always agrees with its field.
 */
export function putChange(out: Record<string, PropertyDiff>, change: PropertyDiff, below: readonly PathStep[] = []): void {
  out[below.reduce(stepped, change.field)] = change;
}

/** The keys a merge patch of metadata changes (each below `metadata`), against the object it applies to. */
function patchPaths(below: readonly string[], before: unknown, patch: Record<string, unknown>, out: Record<string, PropertyDiff>): void {
  const old = isPlainObject(before) ? (before as Record<string, unknown>) : {};
  for (const [key, value] of Object.entries(patch)) {
    const path = [...below, key];
    const had = Object.hasOwn(old, key);
    // A merge patch may repeat a value unchanged (inside a nested object it rewrites).
    if (had && jsonEqual(old[key], value)) continue;
    if (value === null) putChange(out, { field: "metadata", kind: "delete", inputDiff: true }, path);
    else if (had && isPlainObject(value) && isPlainObject(old[key])) patchPaths(path, old[key], value as Record<string, unknown>, out);
    else putChange(out, { field: "metadata", kind: had ? "update" : "add", inputDiff: true }, path);
  }
}

/**
 * The plan as property-level changes (`~ metadata.team`, `+ tag`, `blobId` replaced): what a
 * provider plugin answers in its diff, so a preview names each changed key. Derived from the
 * same plan the apply follows. A secret input's change is one entry for the field, never a path inside it.
 */
export function propertyDiffs(olds: StoredFileState, news: DeclaredInputs, plan: StoredFilePlan, secrets: readonly string[]): Record<string, PropertyDiff> {
  const out: Record<string, PropertyDiff> = {};
  for (const field of plan.replaceFields) {
    const had = field === "source" ? Boolean(olds.sourceHash) : olds.blobId !== undefined && !olds.sourceHash;
    putChange(out, { field, kind: had ? "update-replace" : "add-replace", inputDiff: true });
  }
  for (const field of plan.changedFields) {
    if (plan.replaceFields.includes(field)) continue;
    // Secret metadata's keys are data too (a path names them): its change is said of the field alone.
    if (field === "metadata" && plan.patch?.metadata && !isUnknown(news.metadata) && !secrets.includes("metadata")) {
      if (olds.metadata === undefined || olds.metadata === null) putChange(out, { field: "metadata", kind: "add", inputDiff: true });
      else patchPaths([], olds.metadata, plan.patch.metadata as Record<string, unknown>, out);
      continue;
    }
    const had = olds[field as keyof StoredFileState] !== undefined && olds[field as keyof StoredFileState] !== null;
    const has = news[field as keyof DeclaredInputs] !== undefined && news[field as keyof DeclaredInputs] !== null;
    putChange(out, { field, kind: !had ? "add" : has ? "update" : "delete", inputDiff: true });
  }
  // Keep-alive due changes no input: said on the output it moves.
  if (plan.keepAliveEpochs > 0) putChange(out, { field: "keepAliveEpochs", kind: "update", inputDiff: false });
  return out;
}

/** What a planner puts in place of a name or a content that the file holds as declared (its value is then no matter to the plan). */
const AS_DECLARED = "\u0000as declared";
const AS_DECLARED_SOURCE = Object.freeze({ [SIG_KEY]: ASSET_SIG, hash: AS_DECLARED });

/**
 * The file as a plan sees it: a name or a content it holds as declared compared, not named (each
 * file of a folder has its own, and a plan only compares them).
 */
function planView(olds: StoredFileState, news: DeclaredInputs): [StoredFileState, DeclaredInputs] {
  const sameName = typeof news.name === "string" && news.name === olds.name;
  const hash = wireAsset(news.source)?.hash;
  const sameContent = hash !== undefined && hash === olds.sourceHash;
  if (!sameName && !sameContent) return [olds, news];
  const o: StoredFileState = { ...olds };
  const n: DeclaredInputs = { ...news };
  if (sameName) o.name = n.name = AS_DECLARED;
  if (sameContent) {
    o.sourceHash = AS_DECLARED;
    n.source = AS_DECLARED_SOURCE;
  }
  return [o, n];
}

const sameRead = (a: unknown, b: unknown): boolean => Object.is(a, b) || (typeof a === "object" && a !== null && typeof b === "object" && jsonEqual(a, b));

/** A value no caller may change (a plan a planner hands to every file it fits). */
function frozen<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) frozen(inner);
    Object.freeze(value);
  }
  return value;
}

/**
 * Plans for many files at one clock (a folder's entries), each exactly as planChange plans it,
 * made once for the files that hold the same values in every field a plan read: each plan is kept
 * with the fields its making read (recorded and declared) and their values. A plan whose making
 * looked at the fields otherwise (which there are, whether one is there) is not kept. The plans
 * handed out are frozen.
 */
export function planner(clock: PlanClock): (olds: StoredFileState, news: DeclaredInputs) => StoredFilePlan {
  type Read = { from: 0 | 1; key: PropertyKey; value: unknown };
  const kept: Array<{ reads: Read[]; plan: StoredFilePlan }> = [];
  return (olds, news) => {
    const seen = planView(olds, news);
    for (const { reads, plan } of kept) if (reads.every((r) => sameRead(Reflect.get(seen[r.from], r.key), r.value))) return plan;
    const reads = new Map<string, Read>();
    let keepable = true;
    const watched = <T extends object>(target: T, from: 0 | 1): T =>
      new Proxy(target, {
        get(t, key, receiver) {
          const value = Reflect.get(t, key, receiver);
          const id = `${from}:${String(key)}`;
          if (!reads.has(id)) reads.set(id, { from, key, value });
          return value;
        },
        has(t, key) {
          keepable = false;
          return Reflect.has(t, key);
        },
        ownKeys(t) {
          keepable = false;
          return Reflect.ownKeys(t);
        },
        getOwnPropertyDescriptor(t, key) {
          keepable = false;
          return Reflect.getOwnPropertyDescriptor(t, key);
        },
      });
    const plan = frozen(planChange(watched(seen[0], 0), watched(seen[1], 1), clock));
    // A few kinds of file at most (those uploaded in one epoch, with one declaration, are one).
    if (keepable && kept.length < 16) kept.unshift({ reads: [...reads.values()], plan });
    return plan;
  };
}
