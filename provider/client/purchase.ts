import type { TuskrApiError } from "./errors";
import { type RetryPolicy, backoffDelayMs, sleep } from "./retry";

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
  let lastError: TuskrApiError | undefined;
  let why = "";
  for (let round = 1; round <= Math.max(1, policy.maxAttempts); round++) {
    try {
      return { ...(await p.send()), resent: round > 1 };
    } catch (e) {
      const error = e as TuskrApiError;
      if (!error.mayHaveBeenApplied || error.code === "INVALID_RESPONSE") throw error;
      lastError = error;
    }
    if (Date.now() >= p.deadline) {
      why = "the operation's time budget ran out";
      break;
    }
    const next = await p.settle();
    if ("outcome" in next) return { ...next.outcome, resent: round > 1 };
    if ("stop" in next) {
      why = next.stop;
      break;
    }
    if (next.again === "after-backoff") {
      await sleep(Math.min(Math.max(policy.minDelayMs, backoffDelayMs(round, policy, random)), Math.max(0, p.deadline - Date.now())));
    }
  }
  throw p.unknown(lastError, why);
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
