import { type Notice, warning } from "../engine/notice";
import { createHash } from "node:crypto";
import { LIMITS, type PatchField } from "../../api";
import type { ReceivedFile, TuskrClient, UploadResult } from "../client/client";
import { filePath } from "../client/urls";
import { isTuskrApiError, TuskrApiError } from "../client/errors";
import { label } from "./messages";
import { sameMediaType } from "./source";
import { epochStartOnGrid, type PlanClock, planChange, retentionStartMs, type StoredFilePlan } from "./plan";
import type { DeclaredInputs, StoredFileState } from "./schema";
import { declaredFields, observed } from "./state";

/**
 * Buying epochs so that purchases converge: a declaration requires its file to stay stored until
 * an end (retentionEpochs from the resource's retention start, or what keep-alive asks); before
 * buying, the file's expiry is read from the service, and only what it lacks of that end is
 * bought. A run killed after the service applied a purchase, run again (whatever the program
 * declares by then), reads the moved expiry and buys only what is still missing, against any
 * service, keys honoured or not. Each purchase's Idempotency-Key follows from what it buys (the
 * file, the expiry it starts from, the end it reaches), so a resend is the same purchase and a
 * different purchase never reuses a key.
 */

type Log = (notice: Notice) => void;

const sha256hex = (text: string): string => createHash("sha256").update(text).digest("hex");

/** The Idempotency-Key of a purchase, from what identifies it. */
function purchaseKey(parts: ReadonlyArray<string | number | null | undefined>): string {
  return `pulumi-tuskr-${sha256hex(parts.map((p) => String(p ?? "")).join("\n")).slice(0, 40)}`;
}

/** At most this many rounds of read → buy when a purchase's outcome stays unknown. */
const MAX_PURCHASE_ROUNDS = 3;

/** Where a resource's file starts: the record (fresh from the service), and what the state knows of it besides. */
export interface Start {
  blobId: string;
  file: Partial<ReceivedFile>;
  state: Partial<StoredFileState>;
}

/**
 * Where a resource's retention counts from, as the state records it: after the file's createdAt
 * (so it moves with the service's clock), or as a time when the service reports no createdAt.
 */
function anchored(startMs: number, file: Partial<ReceivedFile>): Pick<StoredFileState, "retentionStartAfterCreated" | "retentionStart"> {
  const created = Date.parse(file.createdAt ?? "");
  return Number.isNaN(created)
    ? { retentionStartAfterCreated: undefined, retentionStart: new Date(startMs).toISOString() }
    : { retentionStartAfterCreated: startMs - created, retentionStart: undefined };
}

/** The retention start of a resource created now on `file`: the start of this epoch on the file's grid (its expiry is an epoch boundary). */
export function retentionStartOf(file: Partial<ReceivedFile>, clock: Pick<PlanClock, "nowMs" | "epochMs">): Partial<StoredFileState> {
  const expires = Date.parse(file.expiresAt ?? "");
  return anchored(Number.isNaN(expires) ? clock.nowMs : epochStartOnGrid(expires, clock.nowMs, clock.epochMs), file);
}

/** Fixes the retention start of `state` at `startMs` (a state of an earlier release, from what its purchases imply). */
export function pinRetentionStart(state: StoredFileState, startMs: number | undefined): void {
  if (startMs !== undefined) Object.assign(state, anchored(startMs, state));
}

/**
 * A record read from the service, checked, then taken into `state`. Its expiry must be one a
 * live file can have (not past the horizon); and the retention start never moves later on what
 * it says (a createdAt that moved, a state of an earlier release counted from its expiry): a
 * start that moved later would make this resource buy again what it has.
 */
export function observe(state: StoredFileState, file: Partial<ReceivedFile>, managed: ReadonlySet<PatchField>, clock: PlanClock, blobId: string): void {
  checkRecord(file, clock, blobId);
  const before = retentionStartMs(state, clock.epochMs);
  Object.assign(state, observed(file, managed));
  keepStartNoLater(state, before, clock);
}

/** The retention start of `state` moved no later than `before` (when there was one). */
export function keepStartNoLater(state: StoredFileState, before: number | undefined, clock: Pick<PlanClock, "epochMs">): void {
  const now = retentionStartMs(state, clock.epochMs);
  if (before !== undefined && (now === undefined || now > before)) pinRetentionStart(state, before);
}

/** A record's expiry must be one a live file can have: not past the service's horizon. */
export function checkRecord(file: Partial<ReceivedFile>, clock: PlanClock, blobId: string): void {
  const expires = Date.parse(file.expiresAt ?? "");
  if (!Number.isNaN(expires) && expires > clock.nowMs + (LIMITS.maxEpochsAhead + 1) * clock.epochMs + 60_000) {
    throw new TuskrApiError({
      code: "INVALID_RESPONSE",
      method: "GET",
      path: filePath(blobId),
      message: `GET ${filePath(blobId)}: the record's expiresAt ${file.expiresAt} is past the service's horizon (${LIMITS.maxEpochsAhead} epochs from now): not recorded, nothing bought on it`,
    });
  }
}

/** An existing file, by blobId: read, nothing bought yet. */
export async function adopt(client: TuskrClient, blobId: string, clock: PlanClock): Promise<Start> {
  const file = await client.getFile(blobId);
  checkRecord(file, clock, blobId);
  return { blobId, file, state: retentionStartOf(file, clock) };
}

/**
 * Uploads `source`: one request carrying what the upload form can (the name as the filename, the
 * tag, the declared epochs when there are any). Its Idempotency-Key follows from what it sends,
 * so an interrupted upload run again is the same upload, and another upload never reuses it. An
 * answer that is not a new file (the content was stored already, or the service replayed an
 * earlier answer) is checked by reading the file: an entry that expired since is uploaded anew.
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
      { idempotencyKey: key, epochMs: clock.epochMs },
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
  // A new entry ends the upload's epochs after the start of the epoch it was created in; one that
  // ends later already existed (a service that takes a second upload as a purchase on the entry it
  // has adds the epochs to its end), as does a replayed answer.
  const isNew = (r: UploadResult) =>
    r.created &&
    r.confirmedBy !== "replay" &&
    !(Date.parse(r.file.expiresAt ?? "") - (epochs ?? 1) * clock.epochMs > Date.parse(r.file.createdAt ?? "") + 1000);
  if (!isNew(result)) {
    const who = label({ name: filename }, result.file.blobId);
    checkRecord(file, clock, result.file.blobId);
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
  return { blobId: result.file.blobId, file: fresh, state: { ...common, ...retentionStartOf(file, clock) } };
}

/**
 * Carries out a plan. `state` is updated after each confirmed step, so that when a later step
 * fails the caller can record exactly what was done. Before buying, the file's expiry is read
 * (unless `fresh`: read or created in this very operation) and the plan made again from it: what
 * an earlier, interrupted run bought, or anyone else, is not bought again.
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
  if (plan.patch) {
    const updated = await client.updateFile(blobId, plan.patch);
    if (updated && updated.blobId !== undefined) {
      Object.assign(state, observed(updated, managed));
    } else {
      // 204 or empty body (tolerated): the merge patch makes the declared fields exact.
      for (const field of managed) if (plan.patch[field] !== undefined) (state as Record<string, unknown>)[field] = news[field];
    }
  }
  let unknown: unknown;
  for (let round = 1; plan.renewEpochs > 0; round++) {
    if (!fresh) {
      // After a purchase whose outcome is unknown, a file that cannot be read leaves it unknown: said as such.
      const file = await client.getFile(blobId).catch((e: unknown) => Promise.reject(unknown ?? e));
      observe(state, file, managed, clock, blobId);
      plan = planChange({ ...state, keepAlive: state.keepAlive }, news, clock);
      if (plan.horizonProblem) throw new Error(`StoredFile ${label(state, blobId)}: ${plan.horizonProblem}`);
      if (plan.renewEpochs === 0) break;
    }
    const from = state.expiresAt ?? "";
    const reaches = new Date(Date.parse(from) + plan.renewEpochs * clock.epochMs).toISOString();
    try {
      const result = await client.renewFile(blobId, plan.renewEpochs, {
        idempotencyKey: purchaseKey(["renew", blobId, from, reaches]),
        expiresAtBefore: state.expiresAt,
        epochMs: clock.epochMs,
      });
      state.keepAliveEpochs = (state.keepAliveEpochs ?? 0) + plan.keepAliveEpochs;
      if (result.confirmedBy === "replay") {
        log(
          warning(
            `StoredFile ${label(state, blobId)}: the service already had this purchase (to ${reaches}): made by an earlier, interrupted run; not bought again.`,
          ),
        );
      }
      // A replay answers as of its first request; an empty answer says nothing: read instead.
      const after = result.confirmedBy !== "replay" && result.file?.expiresAt ? result.file : await client.getFile(blobId);
      observe(state, after, managed, clock, blobId);
      break;
    } catch (e) {
      // Sent, perhaps made: read the file again and buy only what is still missing, a few times at most.
      if (!(isTuskrApiError(e) && e.code === "RENEW_OUTCOME_UNKNOWN") || round >= MAX_PURCHASE_ROUNDS) throw e;
      unknown = e;
      fresh = false;
    }
  }
  // The declaration is met: what is recorded is what is declared.
  state.retentionEpochs = typeof news.retentionEpochs === "number" ? news.retentionEpochs : 0;
  state.retainUntil = typeof news.retainUntil === "string" ? news.retainUntil : undefined;
}
