import type { TuskrApiError } from "./errors";
import { type RetryPolicy, decideRetry, sleep } from "./retry";

/**
 * One purchase (upload or renew) under one Idempotency-Key. After each ambiguous failure `settle`
 * decides to resend, accept the outcome, or stop with `unknown`; definite failures and answers that
 * do not check out fail at once.
 */
export async function purchase<T>(
  policy: RetryPolicy,
  random: () => number,
  p: {
    deadline: number;
    send: () => Promise<T>;
    settle: () => Promise<{ again: "now" | "after-backoff" } | { outcome: T } | { stop: string }>;
    unknown: (lastError: TuskrApiError | undefined, why: string) => TuskrApiError;
  },
): Promise<T & { resent: boolean }> {
  // The latest failure of an attempt that may have been applied.
  let mayHaveApplied: TuskrApiError | undefined;
  for (let attempt = 1; ; attempt++) {
    let error: TuskrApiError;
    try {
      return { ...(await p.send()), resent: attempt > 1 };
    } catch (e) {
      error = e as TuskrApiError;
    }
    const next = decideRetry(policy, { kind: "purchase", attempt, error, deadline: p.deadline }, random);
    if ("stop" in next && next.stop === "not-retryable") {
      // A resend that definitely failed says nothing of an earlier attempt: that one may still have been applied.
      if (mayHaveApplied) throw p.unknown(mayHaveApplied, `a resend then failed: ${error.message}`);
      throw error;
    }
    if (error.mayHaveBeenApplied) mayHaveApplied = error;
    if ("stop" in next && next.stop === "deadline") throw p.unknown(error, "the operation's time budget ran out");
    // Settled after the last attempt too: a read-back may still show that the purchase was made.
    const settled = await p.settle();
    if ("outcome" in settled) return { ...settled.outcome, resent: attempt > 1 };
    if ("stop" in settled) throw p.unknown(error, settled.stop);
    if ("stop" in next) throw p.unknown(error, "");
    // Resent "now" (a read-back showed nothing was made) still waits the floor: no loop runs hot.
    await sleep(settled.again === "after-backoff" ? next.wait : Math.min(policy.minDelayMs, next.wait));
  }
}

/** Lengths closer than this are one (an answer's times may be whole seconds). */
const SAME_LENGTH_MS = 1000;
/** The shortest epoch a service may have: tuskr:epochSeconds is at least one second. */
const SHORTEST_EPOCH_MS = 1000;

/**
 * Whether a renew whose answer was lost was applied, judged by how far the expiry moved. Without a
 * length seen, the move counts as ours only when no other count of epochs of a length within the
 * bounds explains it: another stack's purchase in between would otherwise be taken as ours.
 * Anything else that moved is "unattributable", since taking it would record epochs never bought.
 */
export function readBackVerdict(
  before: string,
  after: string | null | undefined,
  epochs: number,
  epoch?: number | { atLeast?: number; below?: number },
): "applied" | "not-applied" | "unattributable" {
  const b = Date.parse(before);
  const a = after ? Date.parse(after) : NaN;
  if (Number.isNaN(a) || Number.isNaN(b)) return "not-applied";
  const moved = a - b;
  if (typeof epoch === "number" && epoch > 0) {
    const expected = epochs * epoch;
    if (moved < expected - epoch / 2) return "not-applied";
    if (moved <= expected + epoch / 2) return "applied";
    return "unattributable";
  }
  if (!(moved > 0)) return "not-applied";
  const least = (typeof epoch === "object" && epoch.atLeast) || SHORTEST_EPOCH_MS;
  const below = (typeof epoch === "object" && epoch.below) || Number.POSITIVE_INFINITY;
  const fits = (k: number) => moved / k >= least - SAME_LENGTH_MS && moved / k < below + SAME_LENGTH_MS;
  if (!fits(epochs)) return "unattributable";
  // Any count whose length is within the bounds is a purchase that could have made this move.
  const most = Math.floor(moved / Math.max(1, least - SAME_LENGTH_MS));
  for (let k = 1; k <= most; k++) if (k !== epochs && fits(k)) return "unattributable";
  return "applied";
}
