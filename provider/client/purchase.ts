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
  for (let attempt = 1; ; attempt++) {
    let error: TuskrApiError;
    try {
      return { ...(await p.send()), resent: attempt > 1 };
    } catch (e) {
      error = e as TuskrApiError;
    }
    const next = decideRetry(policy, { kind: "purchase", attempt, error, deadline: p.deadline }, random);
    if ("stop" in next && next.stop === "not-retryable") throw error;
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

/**
 * Whether a renew whose answer was lost was applied, judged by how far the expiry moved. A move
 * larger than this purchase is "unattributable": taking it as applied would record epochs never
 * bought.
 */
export function readBackVerdict(
  before: string,
  after: string | null | undefined,
  epochs: number,
  epochMs?: number,
): "applied" | "not-applied" | "unattributable" {
  const b = Date.parse(before);
  const a = after ? Date.parse(after) : NaN;
  if (Number.isNaN(a) || Number.isNaN(b)) return "not-applied";
  const moved = a - b;
  if (!epochMs) return moved > 0 ? "applied" : "not-applied";
  const expected = epochs * epochMs;
  if (moved < expected - epochMs / 2) return "not-applied";
  if (moved <= expected + epochMs / 2) return "applied";
  return "unattributable";
}
