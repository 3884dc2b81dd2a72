import { type Notice, warning } from "../engine/notice";
import { createHash } from "node:crypto";
import { LIMITS, PATHS, type PatchField } from "../../api";
import type { ReceivedFile, TuskrClient, UploadResult } from "../client/client";
import { filePath } from "../client/urls";
import { isTuskrApiError, TuskrApiError } from "../client/errors";
import { label } from "./messages";
import { sameMediaType } from "./source";
import { type PlanClock, remainingEpochs } from "./plan";
import { epochLength, epochSettingProblem, epochsBetween, fileClock, horizonClock, LONGEST_EPOCH_MS, retentionStartEpochs, startMoment } from "./epoch";
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
export function checkPurchase(method: string, path: string, file: Partial<ReceivedFile>, movedMs: number | undefined, epochs: number): void {
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
