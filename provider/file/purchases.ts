import { type Notice, warning } from "../engine/notice";
import { createHash } from "node:crypto";
import { LIMITS, PATHS, type PatchField } from "../../api";
import type { ReceivedFile, TuskrClient, UploadResult } from "../client/client";
import { filePath } from "../client/urls";
import { isTuskrApiError, TuskrApiError } from "../client/errors";
import { label } from "./messages";
import { sameMediaType } from "./source";
import { type PlanClock, remainingEpochs } from "./plan";
import { LONGEST_EPOCH_MS } from "../service/facts";
import { epochsBetween, expiryMovedMs, horizonClock, retentionStartEpochs, startMoment } from "./epoch";
import type { StoredFileState } from "./schema";
import { observed } from "./state";

/**
 * Purchases converge rather than add up: the expiry is read before buying and only what it lacks of
 * the declared end is bought, so a rerun after a crash buys nothing twice. Idempotency-Keys derive
 * from what is bought.
 */

type Log = (notice: Notice) => void;

const sha256hex = (text: string): string => createHash("sha256").update(text).digest("hex");

/** The Idempotency-Key of a purchase, from what identifies it. */
export function purchaseKey(parts: ReadonlyArray<string | number | null | undefined>): string {
  return `pulumi-tuskr-${sha256hex(parts.map((p) => String(p ?? "")).join("\n")).slice(0, 40)}`;
}

/**
 * How many expired uploads of one content (each replayed under its key, then stored again under the
 * next) an upload walks past before it gives up: two requests each.
 */
const UPLOAD_GENERATIONS = 32;

/** How far the service's clock may be from this machine's. */
const CLOCK_SKEW_MS = 60_000;

/** Where a resource's file starts: the record (fresh from the service), and what the state knows of it besides. */
export interface Start {
  blobId: string;
  file: Partial<ReceivedFile>;
  state: Partial<StoredFileState>;
}

/**
 * The retention start of a resource created now on `file`: the start of this epoch, so as many
 * epochs before its expiry as are left. Counted in a guess while the length is not known: the
 * moment lets it be counted again once it is.
 */
export function retentionStartOf(file: Partial<ReceivedFile>, clock: Pick<PlanClock, "nowMs" | "epochMs" | "epochKnown">): Partial<StoredFileState> {
  const count = remainingEpochs(file.expiresAt, clock) ?? 0;
  const created = Date.parse(file.createdAt ?? "");
  const guessed = !clock.epochKnown && !Number.isNaN(created);
  return { retentionStartEpochs: count, retentionStartMomentMs: guessed ? clock.nowMs - created : undefined };
}

/**
 * The retention start of an upload an earlier `up` could not confirm, now shown to hold its bytes:
 * a new entry starts in its creation's epoch, its epochs before the expiry (counted again from
 * then once the length is known); an entry it did not make, as content taken when it was sent.
 */
export function confirmedStart(
  file: Partial<ReceivedFile>,
  claim: { sentAt: number; epochs: number },
  checkedBy: "created" | "content" | "record",
  clock: Pick<PlanClock, "nowMs" | "epochMs" | "epochKnown">,
): Partial<StoredFileState> {
  // Made by this upload: its epochs count from its creation's epoch, in any length, as a create's do.
  if (checkedBy === "created") return { retentionStartEpochs: claim.epochs, retentionStartMomentMs: undefined };
  return retentionStartOf(file, { ...clock, nowMs: claim.sentAt });
}

/**
 * What learns the service's epoch from an answer (the stack's facts): the purchase code hands it a
 * length and reads the clock again.
 */
export interface EpochLearner {
  clock(): PlanClock;
  /** A length a renew's answer (or a read-back of one) showed. */
  learn(ms: number): void;
  /** What a new entry's answer shows: the length is at least `atLeastMs` and, from an upload of 2 epochs or more, below `belowMs`. */
  bounded(range: { atLeastMs: number; belowMs?: number }): void;
}

/**
 * Takes a checked service record into `state`. Its expiry must be plausible, and the retention
 * start moves with the expiry, so a purchase made elsewhere or a refresh keeps the count right. A
 * renew this stack sent whose outcome was unknown is settled here: its move counts as its epochs,
 * and, the length not known, shows it (a probe buys one epoch, so the move is at least one).
 */
export function observe(state: StoredFileState, file: Partial<ReceivedFile>, managed: ReadonlySet<PatchField>, epochs: EpochLearner, blobId: string): void {
  settleUnconfirmed(state, file, epochs);
  const clock = epochs.clock();
  checkRecord(file, horizonClock(clock), blobId);
  const moved = epochsBetween(state, file, clock);
  Object.assign(state, observed(file, managed), { ...movedStart(state, moved, clock), retentionStartEpochs: retentionStartEpochs(state, clock) + moved });
}

/** A renew recorded as unconfirmed, judged by the record read now: its move shows the length when none is known. */
export function settleUnconfirmed(state: StoredFileState, file: Partial<ReceivedFile>, epochs: EpochLearner): void {
  const sent = state.unconfirmedRenew;
  if (!sent) return;
  state.unconfirmedRenew = undefined;
  const moved = expiryMovedMs({ expiresAt: sent.fromExpiresAt, createdAt: state.createdAt }, file) ?? 0;
  if (!epochs.clock().epochKnown && moved > 0 && moved <= sent.epochs * LONGEST_EPOCH_MS) epochs.learn(moved / sent.epochs);
}

/**
 * A move counted while the length is not known is a guess: a count that was exact (an upload's,
 * made in its start's epoch) gets its creation as the moment to count from once it is known.
 */
export function movedStart(state: StoredFileState, moved: number, clock: Pick<PlanClock, "epochKnown">): Pick<StoredFileState, "retentionStartMomentMs"> {
  if (moved === 0 || clock.epochKnown || startMoment(state) !== undefined || Number.isNaN(Date.parse(state.createdAt ?? ""))) return {};
  return { retentionStartMomentMs: 0 };
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
export function checkPurchase(method: string, path: string, file: Partial<ReceivedFile>, movedMs: number | undefined, epochs: number): void {
  if (movedMs === undefined || !(movedMs > epochs * LONGEST_EPOCH_MS + CLOCK_SKEW_MS)) return;
  throw new TuskrApiError({
    code: "INVALID_RESPONSE",
    method,
    path,
    message: `${method} ${path}: the answer's expiresAt ${file.expiresAt} is past the service's horizon (${LIMITS.maxEpochsAhead} epochs) or more than the ${epochs} epoch(s) bought, of at most ${LONGEST_EPOCH_MS / 86_400_000} days each: not recorded, nothing bought on it`,
  });
}

/** An existing file, by blobId: read, nothing bought yet. */
export async function adopt(client: TuskrClient, blobId: string, clock: PlanClock): Promise<Start> {
  const file = await client.getFile(blobId);
  checkRecord(file, horizonClock(clock), blobId);
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
  // owner: the resource's URN, in the key, so a replay under it answers this resource's own earlier upload.
  upload: { filename: string; tag?: string; contentType: string; declaredEpochs: number; source: unknown; owner?: string },
  learner: EpochLearner,
  log: Log,
): Promise<Start> {
  const clock = learner.clock();
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
  const firstKey = purchaseKey(["upload", hash, epochs, filename, tag, contentType, ...(upload.owner ? [upload.owner] : [])]);
  let result: UploadResult | undefined;
  let key = firstKey;
  let refused = false;
  for (let generation = 0; result === undefined; ) {
    try {
      result = await send(key);
    } catch (e) {
      if (!isTuskrApiError(e)) throw e;
      if (e.code === "IDEMPOTENCY_KEY_REUSED" && !refused) {
        // The key was used for another request: not this upload's, so not a reason to stop.
        refused = true;
        key = purchaseKey([firstKey, "refused"]);
      } else if (e.isGone && generation < UPLOAD_GENERATIONS) {
        // The client reads every answer back: an earlier upload of this content, replayed or named
        // as already stored, has expired since. Stored again under the next key of the chain: the
        // upload made after each expiry has a key of its own, so a later expiry leads to the next.
        if (generation === 0) {
          log(
            warning(
              `StoredFile ${JSON.stringify(filename)}: the service answered with an earlier upload of this content, which has expired since: uploaded anew.`,
            ),
          );
        }
        generation++;
        key = purchaseKey([key, "after", e.goneBlobId]);
      } else throw e;
    }
  }
  const common = { sourceHash: hash, source: upload.source };
  const k = epochs ?? 1;
  // The service's record, read back by the client's gate.
  const file: Partial<ReceivedFile> = result.file;
  // An entry this upload created starts in its creation's epoch: made now, or answered as a replay
  // of this resource's own key (an earlier run killed after the service applied it). Another entry
  // is taken as any stored content is, from the moment it is taken.
  const replayed = result.confirmedBy === "replay" && upload.owner !== undefined && result.created ? replayedStart(result, k, learner.clock()) : undefined;
  const ownReplay = replayed !== undefined;
  const createdNow = ownReplay || (result.created && result.confirmedBy !== "replay" && !(Date.parse(file.createdAt ?? "") < clock.nowMs - CLOCK_SKEW_MS));
  const span = Date.parse(file.expiresAt ?? "") - Date.parse(file.createdAt ?? "");
  // A new entry, answered now, ends k epochs after its creation epoch's start: its span bounds the epoch's length.
  const answeredNow = createdNow && !ownReplay;
  if (answeredNow) checkPurchase("POST", PATHS.files, file, span, k);
  else checkRecord(file, horizonClock(clock), result.file.blobId);
  if (answeredNow && span > 0) learner.bounded({ atLeastMs: span / k, belowMs: k >= 2 ? span / (k - 1) : undefined });
  if (result.checkedBy === "record") {
    log({
      ...warning(
        "the service's download links want the key (a gateway): content it already stored is taken on its record, read through the API (blobId and size), not on its bytes; `pulumi-tuskr doctor` shows it",
      ),
      once: "url-wants-key",
    });
  }
  if (!createdNow) {
    const who = label({ name: filename }, result.file.blobId);
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
    return { blobId: result.file.blobId, file, state: { ...common, ...retentionStartOf(file, learner.clock()) } };
  }
  // A new entry is recorded as the service holds it (read back): a name or tag the form had to
  // escape differs from the declared one, and the same `up` PATCHes it. Its start is the start of
  // this epoch, the epochs it was uploaded for before its expiry.
  const fresh = { ...file, metadata: file.metadata ?? {}, mimeType: file.mimeType ?? contentType };
  return { blobId: result.file.blobId, file: fresh, state: { ...common, ...(replayed ?? { retentionStartEpochs: k }) } };
}

/**
 * The start of an entry a replay of this resource's key names, if its earlier upload made it: the
 * record read back is that entry (created when the answer said; an answer without a creation,
 * created before the answer's expiry, since one stored again after an expiry is created later:
 * both times the service's), and it spans one upload's epochs (a service selling a second upload
 * of stored bytes answers an older entry, whose span is longer; with the length not known, in the
 * longest epoch). It starts `k` epochs before the answer's expiry: what was bought since moved the
 * expiry, not the start, and counts as `observe` counts it.
 */
function replayedStart(result: UploadResult, k: number, clock: PlanClock): Partial<StoredFileState> | undefined {
  const expires = Date.parse(result.answer?.expiresAt ?? "");
  const created = Date.parse(result.file.createdAt ?? "");
  const answeredCreated = Date.parse(result.answer?.createdAt ?? "");
  if (Number.isNaN(expires) || Number.isNaN(created)) return undefined;
  const same = Number.isNaN(answeredCreated) ? created < expires : answeredCreated === created;
  if (!same || expires - created > k * horizonClock(clock).epochMs + CLOCK_SKEW_MS) return undefined;
  const answered = { expiresAt: result.answer?.expiresAt ?? undefined, createdAt: result.file.createdAt ?? undefined };
  const since = epochsBetween(answered, result.file, clock);
  return { ...movedStart(answered, since, clock), retentionStartEpochs: k + since };
}
