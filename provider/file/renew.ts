import { type Notice, warning } from "../engine/notice";
import type { PatchField } from "../../api";
import type { TuskrClient } from "../client/client";
import { filePath } from "../client/urls";
import { isTuskrApiError } from "../client/errors";
import { decideRetry, sleep } from "../client/retry";
import { SAME_LENGTH_MS } from "../service/facts";
import { label } from "./messages";
import { planChange, type StoredFilePlan } from "./plan";
import { type ExpiryRecord, epochsBetween, expiryMovedMs, horizonClock, retentionStartEpochs } from "./epoch";
import type { DeclaredInputs, StoredFileState } from "./schema";
import { declaredFields, observed } from "./state";
import { checkPurchase, checkRecord, type EpochLearner, observe, purchaseKey } from "./purchases";

/**
 * Renewals: the plan carried out against the file's expiry as read, each answer checked and taken
 * in before the next purchase. While the service's epoch is not known the first renew buys one
 * epoch, one such at a time per provider process, and its answer teaches every file the length.
 */

type Log = (notice: Notice) => void;

/** The facts a renewal reads and teaches, with the turn of a purchase bought to learn the length. */
export interface RenewFacts extends EpochLearner {
  probeTurn(): Promise<() => void>;
}

/**
 * Takes a renew's answer into `state`. An answer whose move is not exactly the epochs bought in the
 * known length is not taken on its word: the service's record is read, and decides. A move of this
 * purchase shows the length (a replay of another request's answer does not).
 */
async function takeRenewAnswer(
  client: TuskrClient,
  blobId: string,
  state: StoredFileState,
  renew: { result: Awaited<ReturnType<TuskrClient["renewFile"]>>; before: ExpiryRecord; epochs: number; managed: ReadonlySet<PatchField> },
  facts: RenewFacts,
  log: Log,
): Promise<void> {
  const { result, before, epochs } = renew;
  const path = filePath(blobId, "renew");
  const clock = facts.clock();
  const exact = (record: ExpiryRecord) => {
    const moved = expiryMovedMs(before, record);
    return clock.epochKnown && moved !== undefined && Math.abs(moved - epochs * clock.epochMs) < SAME_LENGTH_MS;
  };
  // A replay answers as of its first request and an empty answer says nothing: the record is read.
  const answered = result.confirmedBy !== "replay" && result.file?.expiresAt ? result.file : undefined;
  if (answered && result.confirmedBy === "response") checkPurchase("POST", path, answered, expiryMovedMs(before, answered), epochs);
  const after = answered && exact(answered) ? answered : await client.getFile(blobId);
  if (answered && after !== answered && after.expiresAt !== answered.expiresAt) {
    log(
      warning(
        `StoredFile ${label(state, blobId)}: the renew's answer said expiresAt ${answered.expiresAt}, the file's record says ${after.expiresAt}: the record counts`,
      ),
    );
  }
  // This purchase's move (a read-back after its lost answer, or a replay of its own resend) shows the length.
  const ours = result.confirmedBy !== "replay" || result.resent;
  const moved = expiryMovedMs(before, after);
  if (ours && moved !== undefined && moved >= SAME_LENGTH_MS) facts.learn(moved / epochs);
  const now = facts.clock();
  checkRecord(after, horizonClock(now), blobId);
  // The start stays where it is: as many more epochs before the expiry as it moved, this purchase's at least.
  const counted = now.epochKnown ? epochsBetween(before, after, now) : epochs;
  Object.assign(state, observed(after, renew.managed), { retentionStartEpochs: retentionStartEpochs(state, now) + Math.max(epochs, counted) });
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
function replanned(state: StoredFileState, news: DeclaredInputs, facts: RenewFacts, blobId: string): StoredFilePlan {
  const plan = planChange(state, news, facts.clock());
  if (plan.horizonProblem) throw new Error(`StoredFile ${label(state, blobId)}: ${plan.horizonProblem}`);
  return plan;
}

/** Whether a plan's probe is keep-alive's first epoch (nothing lacks of the declared end): the rest of keep-alive follows it. */
const probeIsKeepAlive = (plan: StoredFilePlan): boolean => plan.lengthProbe !== undefined && plan.retentionIncrease === 0 && plan.keepAliveEpochs > 0;

/** One renew of `epochs`, its answer taken into `state`; one whose outcome stays unknown is recorded as sent. */
async function renewNow(
  client: TuskrClient,
  blobId: string,
  state: StoredFileState,
  buy: { plan: StoredFilePlan; epochs: number; managed: ReadonlySet<PatchField> },
  facts: RenewFacts,
  log: Log,
): Promise<void> {
  const { plan, epochs } = buy;
  const clock = facts.clock();
  const from = state.expiresAt ?? "";
  const reaches = new Date(Date.parse(from) + epochs * clock.epochMs).toISOString();
  const before = { expiresAt: state.expiresAt, createdAt: state.createdAt };
  let result: Awaited<ReturnType<TuskrClient["renewFile"]>>;
  try {
    result = await client.renewFile(blobId, epochs, {
      idempotencyKey: purchaseKey(["renew", blobId, from, reaches]),
      expiresAtBefore: state.expiresAt,
      // A length not known is no measure of a read-back: only a probe (one epoch) is sent then.
      epochMs: clock.epochKnown ? clock.epochMs : undefined,
    });
  } catch (e) {
    // Sent, and perhaps bought: recorded, so the next `up` settles it by the file's record instead of buying again.
    if (isTuskrApiError(e) && e.mayHaveBeenApplied) state.unconfirmedRenew = { epochs, fromExpiresAt: from };
    throw e;
  }
  // Keep-alive's epochs, counted apart: all of them, or the one a probe bought on its behalf.
  const keptAlive = plan.lengthProbe === undefined ? plan.keepAliveEpochs : probeIsKeepAlive(plan) ? 1 : 0;
  state.keepAliveEpochs = (state.keepAliveEpochs ?? 0) + keptAlive;
  if (result.confirmedBy === "replay" && !result.resent) {
    log(
      warning(
        `StoredFile ${label(state, blobId)}: the service already had this purchase (to ${reaches}): made by an earlier, interrupted run; not bought again.`,
      ),
    );
  }
  await takeRenewAnswer(client, blobId, state, { result, before, epochs, managed: buy.managed }, facts, log);
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
  facts: RenewFacts,
  fresh: boolean,
  log: Log,
): Promise<void> {
  const managed = declaredFields(news);
  if (plan.patch) await applyPatch(client, blobId, state, news, plan.patch, managed);
  let endTurn: (() => void) | undefined;
  const release = () => {
    endTurn?.();
    endTurn = undefined;
  };
  try {
    await buyRounds();
  } finally {
    release();
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
        observe(state, file, managed, facts, blobId);
        plan = replanned(state, news, facts, blobId);
        if (plan.renewEpochs === 0) break;
      }
      if (plan.lengthProbe !== undefined) {
        endTurn ??= await facts.probeTurn();
        if (facts.clock().epochKnown) {
          // Another file's purchase showed the length while this one waited: counted in it, not bought to learn it.
          release();
          plan = replanned(state, news, facts, blobId);
          if (plan.renewEpochs === 0) break;
        }
      }
      const epochs = plan.lengthProbe ?? plan.renewEpochs;
      try {
        await renewNow(client, blobId, state, { plan, epochs, managed }, facts, log);
      } catch (e) {
        // Sent, perhaps made: read the file again and buy only what is still missing. Only under a
        // key the service honours: else a renew it applies after that read would be bought twice.
        const reread = isTuskrApiError(e) && e.code === "RENEW_OUTCOME_UNKNOWN" && client.keysHonoured("renew");
        const next = decideRetry(client.policy, { kind: "round", attempt: round });
        if (!reread || "stop" in next) throw e;
        await sleep(next.wait);
        unknown = e;
        fresh = false;
        continue;
      }
      if (facts.clock().epochKnown) release();
      if (plan.lengthProbe === undefined) break;
      if (!facts.clock().epochKnown) {
        // Bought to learn the length, which it did not show: the rest is not bought on a guess, nor the declaration recorded as met.
        throw new Error(
          `StoredFile ${label(state, blobId)}: the renew of 1 epoch bought to learn the service's epoch showed no length, so nothing more is bought on a guess; run \`pulumi up\` again`,
        );
      }
      // Keep-alive buys its amount once an `up`: the probe was its first epoch.
      const policy = news.keepAlive as { minRemainingEpochs: number; renewEpochs: number } | undefined;
      const rest = probeIsKeepAlive(plan) && policy ? { ...news, keepAlive: { ...policy, renewEpochs: policy.renewEpochs - 1 } } : news;
      plan = replanned(state, rest, facts, blobId);
      fresh = true;
    }
  }
}
