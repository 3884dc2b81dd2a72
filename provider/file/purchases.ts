import { type Notice, warning } from "../engine/notice";
import { createHash } from "node:crypto";
import { LIMITS, PATHS, type PatchField } from "../../api";
import type { ReceivedFile, TuskrClient, UploadResult } from "../client/client";
import { filePath } from "../client/urls";
import { isTuskrApiError, TuskrApiError } from "../client/errors";
import { decideRetry, sleep } from "../client/retry";
import { label } from "./messages";
import { sameMediaType } from "./source";
import { type PlanClock, planChange, remainingEpochs, type StoredFilePlan } from "./plan";
import {
  epochLength,
  epochSettingProblem,
  epochsBetween,
  type ExpiryRecord,
  expiryMovedMs,
  fileClock,
  horizonClock,
  LONGEST_EPOCH_MS,
  retentionStartEpochs,
  startMoment,
} from "./epoch";
import type { DeclaredInputs, StoredFileState } from "./schema";
import { declaredFields, observed } from "./state";

/**
 * Purchases converge rather than add up: the expiry is read before buying and only what it lacks of
 * the declared end is bought, so a rerun after a crash buys nothing twice. Idempotency-Keys derive
 * from what is bought.
 */

type Log = (notice: Notice) => void;

const sha256hex = (text: string): string => createHash("sha256").update(text).digest("hex");

/** The Idempotency-Key of a purchase, from what identifies it. */
function purchaseKey(parts: ReadonlyArray<string | number | null | undefined>): string {
  return `pulumi-tuskr-${sha256hex(parts.map((p) => String(p ?? "")).join("\n")).slice(0, 40)}`;
}

/** How far the service's clock may be from this machine's. */
const CLOCK_SKEW_MS = 60_000;

/** Where a resource's file starts: the record (fresh from the service), and what the state knows of it besides. */
export interface Start {
  blobId: string;
  file: Partial<ReceivedFile>;
  state: Partial<StoredFileState>;
}

/** The retention start of a resource created now on `file`: the start of this epoch, so as many epochs before its expiry as are left. */
export function retentionStartOf(file: Partial<ReceivedFile>, clock: Pick<PlanClock, "nowMs" | "epochMs" | "seenEpochMs">): Partial<StoredFileState> {
  const count = remainingEpochs(file.expiresAt, fileClock({}, clock)) ?? 0;
  const created = Date.parse(file.createdAt ?? "");
  // Counted in a guess until a length is seen: the moment lets it be counted again then.
  const guessed = clock.seenEpochMs === undefined && !Number.isNaN(created);
  return { retentionStartEpochs: count, retentionStartMomentMs: guessed ? clock.nowMs - created : undefined };
}

/**
 * Takes a checked service record into `state`. Its expiry must be plausible, and the retention
 * start moves with the expiry, so a purchase made elsewhere or a refresh keeps the count right.
 */
export function observe(state: StoredFileState, file: Partial<ReceivedFile>, managed: ReadonlySet<PatchField>, setting: PlanClock, blobId: string): void {
  checkRecord(file, horizonClock(state, setting), blobId);
  const moved = movedSince(state, file, setting);
  Object.assign(state, observed(file, managed), { ...movedStart(state, moved, setting), retentionStartEpochs: retentionStartEpochs(state, setting) + moved });
}

/**
 * A move counted while no length is seen is a guess: a count that was exact (an upload's, made in
 * its start's epoch) gets its creation as the moment to count from once a length is seen.
 */
export function movedStart(
  state: StoredFileState,
  moved: number,
  setting: Pick<PlanClock, "epochMs" | "seenEpochMs">,
): Pick<StoredFileState, "retentionStartMomentMs"> {
  if (moved === 0 || epochLength(state, setting).seen || startMoment(state) !== undefined || Number.isNaN(Date.parse(state.createdAt ?? ""))) return {};
  return { retentionStartMomentMs: 0 };
}

/** Epochs `file`'s expiry moved past the one `state` records, counted in the epoch's length as `state` knows it. */
export function movedSince(state: StoredFileState, file: Partial<ReceivedFile>, setting: Pick<PlanClock, "epochMs">): number {
  const epoch = epochLength(state, setting);
  return epochsBetween(state, file, epoch.ms, epoch.seen);
}

/** A record's expiry must be one a live file can have: not past the service's horizon (in epochs of `clock`'s length). */
export function checkRecord(file: Partial<ReceivedFile>, clock: PlanClock, blobId: string): void {
  const expires = Date.parse(file.expiresAt ?? "");
  if (!Number.isNaN(expires) && expires > clock.nowMs + (LIMITS.maxEpochsAhead + 1) * clock.epochMs + 60_000) {
    throw new TuskrApiError({
      code: "INVALID_RESPONSE",
      method: "GET",
      path: filePath(blobId),
      message: `GET ${filePath(blobId)}: the record's expiresAt ${file.expiresAt} is past the service's horizon (${LIMITS.maxEpochsAhead} epochs of ${clock.epochMs / 1000} s): not recorded, nothing bought; a longer epoch? set tuskr:epochSeconds`,
    });
  }
}

/** A purchase's answer moves an expiry by at most the epochs bought, each at most LONGEST_EPOCH_MS: anything further is not recorded. */
function checkPurchase(method: string, path: string, file: Partial<ReceivedFile>, movedMs: number | undefined, epochs: number): void {
  if (movedMs === undefined || !(movedMs > epochs * LONGEST_EPOCH_MS + CLOCK_SKEW_MS)) return;
  throw new TuskrApiError({
    code: "INVALID_RESPONSE",
    method,
    path,
    message: `${method} ${path}: the answer's expiresAt ${file.expiresAt} is past the service's horizon (${LIMITS.maxEpochsAhead} epochs) or more than the ${epochs} epoch(s) bought, of at most ${LONGEST_EPOCH_MS / 86_400_000} days each: not recorded, nothing bought on it`,
  });
}

/**
 * What a new entry's answer shows of the epoch: it ends `epochs` after its creation epoch's start,
 * which bounds the epoch's length from both sides.
 */
function epochBoundsOf(file: Partial<ReceivedFile>, epochs: number): Pick<StoredFileState, "epochMsAtLeast" | "epochMsBelow"> {
  const span = Date.parse(file.expiresAt ?? "") - Date.parse(file.createdAt ?? "");
  if (!(span > 0)) return {};
  return { epochMsAtLeast: span / epochs, epochMsBelow: epochs >= 2 ? span / (epochs - 1) : undefined };
}

/** An existing file, by blobId: read, nothing bought yet. */
export async function adopt(client: TuskrClient, blobId: string, clock: PlanClock): Promise<Start> {
  const file = await client.getFile(blobId);
  checkRecord(file, horizonClock({}, clock), blobId);
  return { blobId, file, state: retentionStartOf(file, clock) };
}

/**
 * Uploads `source` in one request with an Idempotency-Key derived from what it sends, so a rerun is
 * the same upload. An answer that is not a new file is verified by a read, and an expired entry
 * uploaded anew.
 */
export async function upload(
  client: TuskrClient,
  asset: { path?: string; text?: string; bytes?: Buffer; hash: string; size: number; unverified?: boolean },
  upload: { filename: string; tag?: string; contentType: string; declaredEpochs: number; source: unknown },
  clock: PlanClock,
  log: Log,
): Promise<Start> {
  const { hash } = asset;
  const { filename, tag, contentType } = upload;
  // The upload buys at least one epoch: the declared ones if any (then no renew is needed), else the service's default.
  const epochs = upload.declaredEpochs >= 1 ? upload.declaredEpochs : undefined;
  const send = (key: string) =>
    client.uploadFile(
      // A file sent from where it is must be read as the content its key names.
      { path: asset.path, text: asset.text, bytes: asset.bytes, sha256: asset.unverified ? hash : undefined, filename },
      { tag, epochs, contentType },
      // The epoch's length is what the answer is to show: its expiry is checked on it below.
      { idempotencyKey: key, epochMs: LONGEST_EPOCH_MS, contentSha256: hash },
    );
  const firstKey = purchaseKey(["upload", hash, epochs, filename, tag, contentType]);
  let result: UploadResult;
  try {
    result = await send(firstKey);
  } catch (e) {
    if (!isTuskrApiError(e)) throw e;
    if (e.code === "IDEMPOTENCY_KEY_REUSED") {
      // The key was used for another request: not this upload's, so not a reason to stop.
      result = await send(purchaseKey([firstKey, "refused"]));
    } else if (e.isGone) {
      // The client reads every answer back: an earlier upload of this content, replayed or named
      // as already stored, has expired since. This content is stored again.
      log(
        warning(`StoredFile ${JSON.stringify(filename)}: the service answered with an earlier upload of this content, which has expired since: uploaded anew.`),
      );
      result = await send(purchaseKey([firstKey, "after", e.goneBlobId]));
    } else throw e;
  }
  const common = { sourceHash: hash, source: upload.source };
  // The service's record, read back by the client's gate.
  const file: Partial<ReceivedFile> = result.file;
  // Only an entry this upload created (now, not a replay) tells us its span; an older or replayed
  // entry, or one ending later than the setting allows, is read rather than assumed and says
  // nothing of the epoch's length.
  const createdNow = (r: UploadResult) => r.created && r.confirmedBy !== "replay" && !(Date.parse(r.file.createdAt ?? "") < clock.nowMs - CLOCK_SKEW_MS);
  const span = (r: UploadResult) => Date.parse(r.file.expiresAt ?? "") - Date.parse(r.file.createdAt ?? "");
  const isNew = (r: UploadResult) => createdNow(r) && !(span(r) > (epochs ?? 1) * clock.epochMs + 1000);
  if (createdNow(result)) checkPurchase("POST", PATHS.files, result.file, span(result), epochs ?? 1);
  if (!isNew(result)) {
    const who = label({ name: filename }, result.file.blobId);
    if (!createdNow(result)) checkRecord(file, horizonClock({}, clock), result.file.blobId);
    // One content is one entry: its type is the one its first upload recorded.
    if (file.mimeType && !sameMediaType(file.mimeType, contentType)) {
      log(
        warning(
          `StoredFile ${who}: the service already stored this content with the type ${file.mimeType}, which it keeps (a stored type cannot be changed): it is served as that, not as ${contentType}.`,
        ),
      );
    }
    if (!result.created) {
      log(
        warning(
          `StoredFile ${who}: the service already stored this content (uploaded at ${file.createdAt}, expiring at ${file.expiresAt}): one content is one entry, shared; this resource buys only what it lacks of the declared end.`,
        ),
      );
    }
  }
  // A new entry is recorded as the service holds it (read back): a name or tag the form had to
  // escape differs from the declared one, and the same `up` PATCHes it.
  const fresh = isNew(result) ? { ...file, metadata: file.metadata ?? {}, mimeType: file.mimeType ?? contentType } : file;
  if (!createdNow(result)) return { blobId: result.file.blobId, file: fresh, state: { ...common, ...retentionStartOf(file, clock) } };
  // Created now: its start is the start of this epoch, the epochs it was uploaded for before its expiry.
  const shown = epochBoundsOf(file, epochs ?? 1);
  checkRecord(file, fileClock(shown, clock), result.file.blobId);
  const bounds = isNew(result) ? shown : {};
  const problem = clock.seenEpochMs === undefined ? epochSettingProblem(bounds, clock) : undefined;
  if (problem) log(warning(`StoredFile ${label({ name: filename }, result.file.blobId)}: ${problem}`));
  return { blobId: result.file.blobId, file: fresh, state: { ...common, retentionStartEpochs: epochs ?? 1, ...bounds } };
}

/**
 * The epoch length a renew's answer shows, and what to say when it contradicts the setting. A
 * length the upload answer ruled out, or differing from an earlier answer, is not trusted on this
 * answer alone.
 */
function epochShown(
  state: StoredFileState,
  before: ExpiryRecord,
  after: ExpiryRecord,
  epochs: number,
  setting: Pick<PlanClock, "epochMs">,
): { epochMsSeen?: number; problem?: string; ruledOut?: boolean } {
  const moved = expiryMovedMs(before, after);
  if (moved === undefined || !(moved > 0) || epochs < 1) return {};
  const seen = moved / epochs;
  const seconds = (ms: number) => String(Math.round(ms / 1000));
  const shown = `a renew's answer moved expiresAt by ${seconds(seen)} s per epoch`;
  const { epochMsAtLeast: least, epochMsBelow: below, epochMsSeen: known } = state;
  if ((typeof least === "number" && seen < least - 1000) || (typeof below === "number" && seen >= below + 1000)) {
    const bounds = `${typeof least === "number" ? `at least ${seconds(least)} s` : ""}${typeof least === "number" && typeof below === "number" ? ", " : ""}${typeof below === "number" ? `under ${seconds(below)} s` : ""}`;
    return { ruledOut: true, problem: `${shown}, which the upload's answer rules out (${bounds}): not taken as the service's epoch` };
  }
  // Another purchase made between the read and this renew lengthens a move, never shortens it: the shorter length stands.
  if (typeof known === "number" && seen >= known + 1000) return {};
  if (typeof known === "number" && seen <= known - 1000)
    return {
      epochMsSeen: seen,
      problem: `${shown}, less than the ${seconds(known)} s seen before (which another purchase at the same time lengthened): the shorter is taken`,
    };
  return { epochMsSeen: seen, problem: known === undefined ? epochSettingProblem({ epochMsSeen: seen }, setting) : undefined };
}

/**
 * Takes a checked renew answer into `state`: its record (or a read for a replay or empty answer),
 * the epoch length it shows unless contradicted, and the retention start kept in place.
 */
async function takeRenewAnswer(
  client: TuskrClient,
  blobId: string,
  state: StoredFileState,
  renew: { result: Awaited<ReturnType<TuskrClient["renewFile"]>>; before: ExpiryRecord; epochs: number; managed: ReadonlySet<PatchField> },
  clock: PlanClock,
  log: Log,
): Promise<void> {
  const { result, before, epochs } = renew;
  const say = (text: string) => log(warning(`StoredFile ${label(state, blobId)}: ${text}`));
  // A replay answers as of its first request; an empty answer says nothing: read instead.
  let after = result.confirmedBy !== "replay" && result.file?.expiresAt ? result.file : await client.getFile(blobId);
  // This purchase's own answer shows the service's epoch: the expiry moved by exactly its epochs.
  // A read-back after a lost answer shows the move as well, and so does one after a replay of
  // this call's own resend (its key names the expiry it started from); another replay's is not ours.
  const ours = result.confirmedBy !== "replay" || result.resent;
  let shown = ours ? epochShown(state, before, after, epochs, clock) : {};
  if (shown.ruledOut && after === result.file) {
    // An answer whose move nothing else agrees with: the service's record decides what moved.
    if (shown.problem) say(shown.problem);
    after = await client.getFile(blobId);
    shown = epochShown(state, before, after, epochs, clock);
  }
  if (result.confirmedBy === "response") checkPurchase("POST", filePath(blobId, "renew"), after, expiryMovedMs(before, after), epochs);
  checkRecord(after, horizonClock({ ...state, ...shown }, clock), blobId);
  if (shown.epochMsSeen !== undefined) state.epochMsSeen = shown.epochMsSeen;
  if (shown.problem) say(shown.problem);
  // The start stays where it is: as many more epochs before the expiry as it moved (this purchase's at least).
  // A read-back was taken only on a move this purchase alone explains: never more than its epochs.
  const moved = result.confirmedBy === "read-back" ? epochs : Math.max(epochs, movedSince(state, after, clock));
  Object.assign(state, observed(after, renew.managed), { retentionStartEpochs: retentionStartEpochs(state, clock) + moved });
}

/** Sends the plan's PATCH and records what the service then holds of the managed fields. */
async function applyPatch(
  client: TuskrClient,
  blobId: string,
  state: StoredFileState,
  news: DeclaredInputs,
  patch: NonNullable<StoredFilePlan["patch"]>,
  managed: ReadonlySet<PatchField>,
): Promise<void> {
  const updated = await client.updateFile(blobId, patch);
  if (updated && updated.blobId !== undefined) {
    Object.assign(state, observed(updated, managed));
    return;
  }
  // 204 or empty body (tolerated): the merge patch makes the declared fields exact.
  for (const field of managed) if (patch[field] !== undefined) (state as Record<string, unknown>)[field] = news[field];
}

/** The plan remade on what the state now knows; a purchase past the horizon fails here, before it is sent. */
function replanned(state: StoredFileState, news: DeclaredInputs, clock: PlanClock, blobId: string): StoredFilePlan {
  const plan = planChange({ ...state, keepAlive: state.keepAlive }, news, clock);
  if (plan.horizonProblem) throw new Error(`StoredFile ${label(state, blobId)}: ${plan.horizonProblem}`);
  return plan;
}

/**
 * The plan after a renew: none once the length was known before it (or no answer has shown one:
 * the setting's count was bought). The first length an answer showed counts what the declaration
 * still lacks (the rest after a renew bought to learn it, or what a guess of a longer epoch left short).
 */
function afterRenew(
  state: StoredFileState,
  news: DeclaredInputs,
  plan: StoredFilePlan,
  renew: { epochs: number; seenBefore: boolean },
  clock: PlanClock,
  blobId: string,
): StoredFilePlan | undefined {
  if (renew.seenBefore) return undefined;
  if (!epochLength(state, clock).seen) {
    if (plan.lengthProbe === undefined) return undefined;
    // Bought to learn the length, which it did not show: the rest is not bought on a guess, nor the declaration recorded as met.
    throw new Error(
      `StoredFile ${label(state, blobId)}: the renew of ${renew.epochs} epoch(s) bought to learn the service's epoch showed no length, so the rest is not bought on tuskr:epochSeconds; run \`pulumi up\` again`,
    );
  }
  // Keep-alive buys once an `up`: not again when this renew carried its epochs.
  const keptAlive = plan.lengthProbe === undefined && plan.keepAliveEpochs > 0;
  return replanned(state, keptAlive ? { ...news, keepAlive: undefined } : news, clock, blobId);
}

/**
 * Per provider process (one client): the turn for a length probe, so one is in flight at a time,
 * and the shortest length a renew's answer showed. Files waiting their turn count in that length
 * rather than each buying an epoch to learn it.
 */
const probes = new WeakMap<TuskrClient, { turn: Promise<void>; seenMs?: number }>();

function probeGate(client: TuskrClient): { turn: Promise<void>; seenMs?: number } {
  let gate = probes.get(client);
  if (!gate) {
    gate = { turn: Promise.resolve() };
    probes.set(client, gate);
  }
  return gate;
}

/** Waits for the probes before this one to end; the returned function ends this one's turn. */
async function probeTurn(gate: { turn: Promise<void> }): Promise<() => void> {
  const before = gate.turn;
  let release: () => void = () => undefined;
  gate.turn = new Promise<void>((resolve) => {
    release = resolve;
  });
  await before;
  return release;
}

/**
 * Carries out a plan, updating `state` after each confirmed step so a later failure records exactly
 * what was done. The expiry is reread and the plan remade before buying, so nothing bought earlier
 * is bought again.
 */
export async function applyPlan(
  client: TuskrClient,
  blobId: string,
  state: StoredFileState,
  news: DeclaredInputs,
  plan: StoredFilePlan,
  clock: PlanClock,
  fresh: boolean,
  log: Log,
): Promise<void> {
  const managed = declaredFields(news);
  if (plan.patch) await applyPatch(client, blobId, state, news, plan.patch, managed);
  const gate = probeGate(client);
  let endTurn: (() => void) | undefined;
  try {
    await buyRounds();
  } finally {
    endTurn?.();
  }
  // The declaration is met: what is recorded is what is declared.
  state.retentionEpochs = typeof news.retentionEpochs === "number" ? news.retentionEpochs : 0;
  state.retainUntil = typeof news.retainUntil === "string" ? news.retainUntil : undefined;

  async function buyRounds(): Promise<void> {
    let unknown: unknown;
    for (let round = 1; plan.renewEpochs > 0; round++) {
      if (!fresh) {
        // After a purchase whose outcome is unknown, a file that cannot be read leaves it unknown: said as such.
        const file = await client.getFile(blobId).catch((e: unknown) => Promise.reject(unknown ?? e));
        observe(state, file, managed, clock, blobId);
        plan = replanned(state, news, clock, blobId);
        if (plan.renewEpochs === 0) break;
      }
      if (plan.lengthProbe !== undefined && !epochLength(state, clock).seen) {
        endTurn ??= await probeTurn(gate);
        if (gate.seenMs !== undefined) {
          // Another file's probe showed the length while this one waited: counted in it, not probed again.
          clock = { ...clock, seenEpochMs: gate.seenMs };
          state.epochMsSeen ??= gate.seenMs;
          endTurn();
          endTurn = undefined;
          plan = replanned(state, news, clock, blobId);
          if (plan.renewEpochs === 0) break;
        }
      }
      const from = state.expiresAt ?? "";
      const epoch = epochLength(state, clock);
      // Bought to learn the length first (the rest is counted in it), else all the plan buys.
      const epochs = plan.lengthProbe ?? plan.renewEpochs;
      const reaches = new Date(Date.parse(from) + epochs * epoch.ms).toISOString();
      const before = { expiresAt: state.expiresAt, createdAt: state.createdAt };
      try {
        const result = await client.renewFile(blobId, epochs, {
          idempotencyKey: purchaseKey(["renew", blobId, from, reaches]),
          expiresAtBefore: state.expiresAt,
          // A length no answer has shown is not one to judge a move by exactly (the answer's expiry
          // is checked against the epochs bought, by checkPurchase).
          epochMs: epoch.seen ? epoch.ms : undefined,
          // Without it, a read-back is judged by what the upload's answer bounded.
          epochMsAtLeast: typeof state.epochMsAtLeast === "number" ? state.epochMsAtLeast : undefined,
          epochMsBelow: typeof state.epochMsBelow === "number" ? state.epochMsBelow : undefined,
        });
        if (plan.lengthProbe === undefined) state.keepAliveEpochs = (state.keepAliveEpochs ?? 0) + plan.keepAliveEpochs;
        if (result.confirmedBy === "replay" && !result.resent) {
          log(
            warning(
              `StoredFile ${label(state, blobId)}: the service already had this purchase (to ${reaches}): made by an earlier, interrupted run; not bought again.`,
            ),
          );
        }
        await takeRenewAnswer(client, blobId, state, { result, before, epochs, managed }, clock, log);
        const seen = state.epochMsSeen;
        if (typeof seen === "number" && seen > 0) {
          gate.seenMs = Math.min(seen, gate.seenMs ?? seen);
          // The length is known: the files waiting for it need not wait for this one's other purchases.
          endTurn?.();
          endTurn = undefined;
        }
        const remade = afterRenew(state, news, plan, { epochs, seenBefore: epoch.seen }, clock, blobId);
        if (!remade) break;
        plan = remade;
        fresh = true;
      } catch (e) {
        // Refused past the horizon on a count no answer has confirmed: the guess was the setting's.
        // One epoch shows the length; the rest is counted in it (nothing was bought by the refusal).
        const probe = isTuskrApiError(e) && e.code === "VALIDATION_ERROR" && !epoch.seen && epochs > 1;
        // Sent, perhaps made: read the file again and buy only what is still missing. Only under a
        // key the service honours: else a renew it applies after that read would be bought twice.
        const reread = isTuskrApiError(e) && e.code === "RENEW_OUTCOME_UNKNOWN" && client.keysHonoured("renew");
        const next = decideRetry(client.policy, { kind: "round", attempt: round });
        if (!(probe || reread) || "stop" in next) throw e;
        await sleep(next.wait);
        if (probe) {
          plan = { ...plan, lengthProbe: 1 };
          fresh = true;
        } else {
          unknown = e;
          fresh = false;
        }
      }
    }
  }
}
