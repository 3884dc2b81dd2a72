import { createHash } from "node:crypto";
import type { ReceivedFile, TuskrClient, UploadResult } from "./client/client";
import { isTuskrApiError } from "./client/errors";
import { label } from "./stored-file-messages";
import { epochStartOnGrid, type PlanClock, planChange, type StoredFilePlan } from "./stored-file-plan";
import type { DeclaredInputs, StoredFileState } from "./stored-file-schema";
import { declaredFields, observed } from "./stored-file-state";

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

type Log = (line: string) => void;

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
 * Where the retention of a resource created now on `file` counts from: the start of this epoch
 * on the file's grid (its expiry is an epoch boundary), as milliseconds after its createdAt.
 */
export function retentionStartOf(file: Partial<ReceivedFile>, clock: Pick<PlanClock, "nowMs" | "epochMs">): number | undefined {
  const expires = Date.parse(file.expiresAt ?? "");
  const created = Date.parse(file.createdAt ?? "");
  if (Number.isNaN(expires) || Number.isNaN(created)) return undefined;
  return epochStartOnGrid(expires, clock.nowMs, clock.epochMs) - created;
}

/** An existing file, by blobId: read, nothing bought yet. */
export async function adopt(client: TuskrClient, blobId: string, clock: PlanClock): Promise<Start> {
  const file = await client.getFile(blobId);
  return { blobId, file, state: { retentionStartAfterCreated: retentionStartOf(file, clock) } };
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
  asset: { path?: string; text?: string; hash: string },
  upload: { filename: string; tag?: string; declaredEpochs: number; source: unknown },
  clock: PlanClock,
  log: Log,
): Promise<Start> {
  const { hash } = asset;
  const { filename, tag } = upload;
  // The upload buys at least one epoch: the declared ones if any (then no renew is needed), else the service's default.
  const epochs = upload.declaredEpochs >= 1 ? upload.declaredEpochs : undefined;
  const send = (key: string) =>
    client.uploadFile({ path: asset.path, text: asset.text, filename }, { tag, epochs }, { idempotencyKey: key, epochMs: clock.epochMs });
  const firstKey = purchaseKey(["upload", hash, epochs, filename, tag]);
  let result: UploadResult;
  try {
    result = await send(firstKey);
  } catch (e) {
    // The key was used for another request: not this upload's, so not a reason to stop.
    if (!(isTuskrApiError(e) && e.code === "IDEMPOTENCY_KEY_REUSED")) throw e;
    result = await send(purchaseKey([firstKey, "refused"]));
  }
  const common = { sourceHash: hash, source: upload.source };
  let file: Partial<ReceivedFile> = result.file;
  if (!result.created || result.confirmedBy === "replay") {
    const who = label({ name: filename }, result.file.blobId);
    try {
      file = await client.getFile(result.file.blobId);
    } catch (e) {
      if (!(isTuskrApiError(e) && e.isGone)) throw e;
      // A replayed answer of an entry that has expired since: this content is stored again.
      log(`warning: StoredFile ${who}: the service answered with an earlier upload of this content, which has expired since: uploaded anew.`);
      result = await send(purchaseKey([firstKey, "after", result.file.expiresAt]));
      file = result.created && result.confirmedBy !== "replay" ? result.file : await client.getFile(result.file.blobId);
    }
    if (!result.created) {
      log(
        `warning: StoredFile ${who}: the service already stored this content (uploaded at ${file.createdAt}, expiring at ${file.expiresAt}): one content is one entry, shared; this resource buys only what it lacks of the declared end.`,
      );
    }
  }
  const fresh = result.created && result.confirmedBy !== "replay" ? { ...file, name: filename, tag: tag ?? null, metadata: {} } : file;
  return { blobId: result.file.blobId, file: fresh, state: { ...common, retentionStartAfterCreated: retentionStartOf(file, clock) } };
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
      Object.assign(state, observed(file, managed));
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
          `warning: StoredFile ${label(state, blobId)}: the service already had this purchase (to ${reaches}): made by an earlier, interrupted run; not bought again.`,
        );
      }
      // A replay answers as of its first request; an empty answer says nothing: read instead.
      const after = result.confirmedBy !== "replay" && result.file?.expiresAt ? result.file : await client.getFile(blobId);
      Object.assign(state, observed(after, managed));
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
}
