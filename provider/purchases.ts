import { createHash, randomUUID } from "node:crypto";
import type { PatchField } from "../api";
import type { ReceivedFile, RenewResult, TuskrClient, UploadResult } from "./client/client";
import { type TuskrApiError, isTuskrApiError } from "./client/errors";
import { PurchaseStopped, label } from "./stored-file-messages";
import { type PlanClock, planChange, type StoredFilePlan } from "./stored-file-plan";
import type { DeclaredInputs, StoredFileState } from "./stored-file-schema";
import { declaredFields, observed } from "./stored-file-state";

/**
 * Buying epochs safely: each purchase (an upload, a declared renew, a keep-alive renew) has an
 * Idempotency-Key that follows from what it buys, so a run interrupted after the service applied
 * it, then run again, sends the same key; a purchase an earlier run could not settle is settled
 * from the file's expiry; and where the stack cannot tell whether it already paid, it stops and
 * says what to check, rather than pay twice.
 */

type Log = (line: string) => void;
type PurchaseKind = "retention" | "keepAlive";

const sha256hex = (text: string): string => createHash("sha256").update(text).digest("hex");

/**
 * The seed every purchase key of a resource derives from. From its URN and file when known, so
 * that a create interrupted after its purchase and run again later (the engine re-creates a
 * pending create) sends the same key, and a service that honours it does not sell twice.
 */
export function keySeed(urn: string | undefined, blobId: string): string {
  return urn?.startsWith("urn:") ? sha256hex(`create\n${urn}\n${blobId}`).slice(0, 32) : randomUUID();
}

/**
 * The Idempotency-Key of the purchase of one kind that starts from `boughtSoFar` epochs of that
 * kind bought through this resource. The amount is not in it: a run interrupted after the
 * service applied a purchase, then run again, sends the same key whatever the program now
 * declares, and the service replays its answer, or refuses a different amount, instead of
 * selling again.
 */
function purchaseKey(seed: string, blobId: string, kind: PurchaseKind | "upload", boughtSoFar: number): string {
  return `pulumi-tuskr-${sha256hex([seed, blobId, kind, boughtSoFar].join("\n")).slice(0, 40)}`;
}

/** The stop for a key the service refused for another amount: an earlier, interrupted run made this purchase differently. */
function keyReused(e: TuskrApiError, who: string, refusedWhat: string, earlier: string, advice: string): PurchaseStopped {
  return new PurchaseStopped({
    code: e.code,
    status: e.status,
    message:
      `StoredFile ${who}: not ${refusedWhat}: an earlier run of this stack, interrupted, already ${earlier}, and the service refused ` +
      `the same Idempotency-Key for a different amount (${e.message}). Nothing more was bought. ${advice}`,
    retryable: false,
  });
}

const DECLARE_AS_BEFORE =
  "Declare retentionEpochs as that run did (the value before your last change), run `pulumi up` so that purchase is confirmed, then declare the new value.";

/**
 * How many epochs a file was stored for at its upload, if it was never renewed: its period from
 * upload to expiry, rounded up to whole epochs (a service may end a period on an epoch boundary).
 */
function uploadedFor(file: Partial<ReceivedFile>, clock: Pick<PlanClock, "epochMs">): number | undefined {
  const from = Date.parse(file.createdAt ?? "");
  const to = Date.parse(file.expiresAt ?? "");
  if (!Number.isFinite(from) || !Number.isFinite(to) || to <= from) return undefined;
  return Math.ceil((to - from) / clock.epochMs - 1e-9);
}

/** Where a resource's file starts: the record, and what the state knows of it besides. */
export interface Start {
  blobId: string;
  file: Partial<ReceivedFile>;
  state: Partial<StoredFileState>;
}

/** An existing file, by blobId: read, nothing bought yet. */
export async function adopt(client: TuskrClient, blobId: string, urn: string | undefined): Promise<Start> {
  const file = await client.getFile(blobId);
  return { blobId, file, state: { renewKeySeed: keySeed(urn, blobId) } };
}

/**
 * Uploads `source`: one request carrying what the upload form can (the name as the filename, the
 * tag, the declared epochs when there are any), under an Idempotency-Key derived from the
 * resource's URN and the content, so an interrupted upload run again is the same upload.
 */
export async function upload(
  client: TuskrClient,
  asset: { path?: string; text?: string; hash: string },
  upload: { filename: string; tag?: string; declaredEpochs: number; urn?: string; source: unknown },
  clock: PlanClock,
  log: Log,
): Promise<Start> {
  const { hash } = asset;
  const { filename, tag } = upload;
  const seed = keySeed(upload.urn, `sha256:${hash}`);
  // The upload buys at least one epoch: the declared ones if any (then no renew is needed), else the service's default.
  const epochs = upload.declaredEpochs >= 1 ? upload.declaredEpochs : undefined;
  let result: UploadResult;
  try {
    result = await client.uploadFile(
      { path: asset.path, text: asset.text, filename },
      { tag, epochs },
      { idempotencyKey: purchaseKey(seed, `sha256:${hash}`, "upload", 0), epochMs: clock.epochMs },
    );
  } catch (e) {
    if (isTuskrApiError(e) && e.code === "IDEMPOTENCY_KEY_REUSED") {
      throw keyReused(e, label({ name: filename }, "(upload)"), "uploading", "uploaded this content with another number of epochs", DECLARE_AS_BEFORE);
    }
    throw e;
  }
  const { blobId } = result.file;
  const common = { renewKeySeed: seed, sourceHash: hash, source: upload.source, idempotencyHonoured: result.keyHonoured || undefined };
  const who = label({ name: filename }, blobId);
  if (!result.created) {
    // The same content was already stored: nothing bought by this request, nothing set.
    const file = await client.getFile(blobId);
    if (result.keyHonoured || epochs === undefined) return { blobId, file, state: common };
    // The key not confirmed, an earlier run of this stack killed mid-upload cannot be told from
    // someone else's upload by the key. A file stored for exactly the declared epochs since its
    // upload is taken as that run's (counted, not bought again); anything else is adopted, and
    // the declared epochs are bought on top of what it has.
    if (uploadedFor(file, clock) === epochs) {
      log(
        `warning: StoredFile ${who}: the service already stored this content, uploaded at ${file.createdAt} for exactly the declared ${epochs} epoch(s), and did not confirm the Idempotency-Key: taken as this stack's own upload from an earlier, interrupted run, and not bought again. If someone else uploaded it, raise retentionEpochs to buy more.`,
      );
      return { blobId, file, state: { ...common, retentionEpochs: epochs } };
    }
    log(
      `warning: StoredFile ${who}: the service already stored this content (uploaded at ${file.createdAt}, expiring at ${file.expiresAt}) and did not confirm the Idempotency-Key: adopted as it stands; the ${epochs} declared epoch(s) are bought on top of its period.`,
    );
    return { blobId, file, state: common };
  }
  if (result.confirmedBy === "replay" && !result.resent) {
    log(
      `warning: StoredFile ${who}: the service already had this upload (its Idempotency-Key was used before): taken as made by an earlier, interrupted run of this stack, and not made again.`,
    );
  } else if (!result.keyHonoured) {
    log(
      `warning: StoredFile ${who}: uploaded, but the service did not confirm the Idempotency-Key: if an earlier run of this stack was interrupted while uploading this content, check on the service that it did not store it twice.`,
    );
  }
  // A new file holds what the upload carried, and nothing else yet.
  const file = { ...result.file, name: filename, tag: tag ?? null, metadata: {} };
  return { blobId, file, state: { ...common, retentionEpochs: epochs ?? 0 } };
}

/**
 * Carries out a plan, step by step. `state` is updated after each confirmed step, so that when
 * a later step fails the caller can record exactly what was done. Declared epochs and
 * keep-alive are bought by separate renews, each with its own key, so that what keep-alive
 * decides on a later run (with more or fewer epochs left) never changes the declared purchase.
 */
export async function applyPlan(
  client: TuskrClient,
  blobId: string,
  state: StoredFileState,
  news: DeclaredInputs,
  plan: StoredFilePlan,
  clock: PlanClock,
  lookedAt: boolean,
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
  // A purchase an earlier run sent and could not settle: if the expiry moved by exactly it since
  // this stack's last purchase, it was made (the read-back rule); not at all, it was not.
  const unsettled = state.unsettledPurchase;
  if (unsettled && state.idempotencyHonoured !== true && state.purchasedExpiresAt) {
    if (!lookedAt) Object.assign(state, observed(await client.getFile(blobId), managed));
    lookedAt = true;
    const moved = Math.round(((state.expiresAt ? Date.parse(state.expiresAt) : NaN) - Date.parse(state.purchasedExpiresAt)) / clock.epochMs);
    if (moved === 0) delete state.unsettledPurchase;
    if (moved === unsettled.epochs) {
      const counter = unsettled.kind === "retention" ? "retentionEpochs" : "keepAliveEpochs";
      state[counter] = (state[counter] ?? 0) + unsettled.epochs;
      state.purchasedExpiresAt = state.expiresAt;
      delete state.unsettledPurchase;
      log(
        `warning: StoredFile ${label(state, blobId)}: the purchase of ${unsettled.epochs} epoch(s) an earlier run could not settle was made: the expiry moved by exactly it. Counted, not bought again.`,
      );
      // What is left to buy, from where the file now stands.
      plan = planChange({ ...state, keepAlive: state.keepAlive }, news, clock);
    }
  }
  const purchases: Array<[PurchaseKind, number]> = [
    ["retention", plan.retentionIncrease],
    ["keepAlive", plan.keepAliveEpochs],
  ];
  for (const [kind, epochs] of purchases) {
    if (epochs <= 0) continue;
    await renew(client, blobId, state, managed, kind, epochs, clock, lookedAt, log);
    lookedAt = true;
  }
}

/** One renew of `epochs` of one kind, recorded in `state` once confirmed. */
async function renew(
  client: TuskrClient,
  blobId: string,
  state: StoredFileState,
  managed: ReadonlySet<PatchField>,
  kind: PurchaseKind,
  epochs: number,
  clock: PlanClock,
  lookedAt: boolean,
  log: Log,
): Promise<void> {
  const who = label(state, blobId);
  const honoured = state.idempotencyHonoured === true;
  // A service not known to honour Idempotency-Key cannot protect a purchase an interrupted run
  // may have made: look first, and stop if the expiry moved past what this stack bought.
  if (!honoured && state.purchasedExpiresAt) {
    if (!lookedAt) Object.assign(state, observed(await client.getFile(blobId), managed));
    const now = state.expiresAt;
    const moved = (now ? Date.parse(now) : NaN) - Date.parse(state.purchasedExpiresAt);
    if (moved >= clock.epochMs / 2) {
      const movedBy = Math.round(moved / clock.epochMs);
      const from = state.purchasedExpiresAt;
      const recordedEpochs = state.retentionEpochs ?? 0;
      // Recorded, with the partial state: the move is seen, and the next up's declaration says whose it was.
      state.purchasedExpiresAt = now;
      state.unconfirmedEpochs = movedBy;
      throw new PurchaseStopped({
        code: "RENEW_OUTCOME_UNKNOWN",
        message:
          `StoredFile ${who}: not buying ${epochs} epoch(s): the file's expiry moved ${movedBy} epoch(s) past what this stack ` +
          `bought (from ${from} to ${now}), and the service has not confirmed that it honours Idempotency-Key, so this stack ` +
          "cannot tell whether an interrupted run of its own bought them. Nothing was bought. Check the file's purchases on the " +
          `service. If those ${movedBy} epoch(s) were this stack's, declare retentionEpochs: ${recordedEpochs + movedBy} for the next ` +
          "`pulumi up`: they are then counted, not bought again (raise it afterwards to buy more). With any other value, the " +
          `next \`pulumi up\` buys the difference from ${recordedEpochs} as usual.`,
        retryable: false,
      });
    }
  }
  const counter = kind === "retention" ? "retentionEpochs" : "keepAliveEpochs";
  const bought = state[counter] ?? 0;
  let result: RenewResult;
  try {
    result = await client.renewFile(blobId, epochs, {
      idempotencyKey: purchaseKey(state.renewKeySeed ?? blobId, blobId, kind, bought),
      expiresAtBefore: state.expiresAt,
      epochMs: clock.epochMs,
      keyHonoured: honoured,
    });
  } catch (e) {
    // Sent, and perhaps made: recorded (with the partial state) so the next run can settle it.
    if (isTuskrApiError(e) && e.code === "RENEW_OUTCOME_UNKNOWN") state.unsettledPurchase = { kind, epochs };
    if (isTuskrApiError(e) && e.code === "IDEMPOTENCY_KEY_REUSED") {
      const earlier = `made this purchase (${kind === "retention" ? `retentionEpochs from ${bought}` : `keep-alive after ${bought} epoch(s)`}) for another number of epochs`;
      throw keyReused(e, who, `buying ${epochs} epoch(s)`, earlier, kind === "retention" ? DECLARE_AS_BEFORE : "Run `pulumi refresh` and `pulumi up` again.");
    }
    throw e;
  }
  state[counter] = bought + epochs;
  delete state.unsettledPurchase;
  if (result.keyHonoured) state.idempotencyHonoured = true;
  // A replay of this run's own resend is the key doing its job; on a first send it is an earlier run's purchase.
  if (result.confirmedBy === "replay" && !result.resent) {
    log(
      `warning: StoredFile ${who}: the service already had this purchase of ${epochs} epoch(s) (its Idempotency-Key was used before): ` +
        "taken as bought by an earlier, interrupted run of this stack, and not bought again. If this resource was destroyed and declared " +
        "again with the same file and values, that earlier purchase was its previous life's: raise retentionEpochs to buy more.",
    );
  } else if (!result.keyHonoured && result.confirmedBy === "response") {
    log(
      `warning: StoredFile ${who}: bought ${epochs} epoch(s), but the service did not confirm the Idempotency-Key, so this purchase ` +
        "cannot be told apart from an earlier attempt's: if an earlier run of this stack was interrupted while buying epochs for this " +
        "file, check on the service that it did not sell them twice.",
    );
  }
  // Where the expiry is after this purchase: the answer, unless it is a replay (as of its first
  // request) or says nothing; then ask once rather than record a stale expiry.
  const after = result.confirmedBy !== "replay" && result.file?.expiresAt ? result.file : await client.getFile(blobId);
  Object.assign(state, observed(after, managed));
  state.purchasedExpiresAt = result.file?.expiresAt ?? after.expiresAt ?? undefined;
}
