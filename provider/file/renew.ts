import { type Notice, warning } from "../engine/notice";
import type { PatchField } from "../../api";
import type { TuskrClient } from "../client/client";
import { filePath } from "../client/urls";
import { isTuskrApiError } from "../client/errors";
import { decideRetry, sleep } from "../client/retry";
import { label } from "./messages";
import { type PlanClock, planChange, type StoredFilePlan } from "./plan";
import { type EpochLength, epochLength, epochSettingProblem, type ExpiryRecord, expiryMovedMs, horizonClock, retentionStartEpochs } from "./epoch";
import type { DeclaredInputs, StoredFileState } from "./schema";
import { declaredFields, observed } from "./state";
import { checkPurchase, checkRecord, movedSince, observe, purchaseKey } from "./purchases";

/**
 * Renewals: the plan carried out against the file's expiry as read, each answer taken in before the
 * next purchase, and at most one length probe in flight per provider process.
 */

type Log = (notice: Notice) => void;

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

/** One renew of `epochs` (a probe or what the plan buys), its answer taken into `state`. */
async function renewNow(
  client: TuskrClient,
  blobId: string,
  state: StoredFileState,
  buy: { plan: StoredFilePlan; epochs: number; epoch: EpochLength; managed: ReadonlySet<PatchField> },
  clock: PlanClock,
  log: Log,
): Promise<void> {
  const { plan, epochs, epoch } = buy;
  const from = state.expiresAt ?? "";
  const reaches = new Date(Date.parse(from) + epochs * epoch.ms).toISOString();
  const before = { expiresAt: state.expiresAt, createdAt: state.createdAt };
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
  await takeRenewAnswer(client, blobId, state, { result, before, epochs, managed: buy.managed }, clock, log);
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
      const epoch = epochLength(state, clock);
      // Bought to learn the length first (the rest is counted in it), else all the plan buys.
      const epochs = plan.lengthProbe ?? plan.renewEpochs;
      try {
        await renewNow(client, blobId, state, { plan, epochs, epoch, managed }, clock, log);
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
