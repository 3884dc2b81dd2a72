import type { TuskrApiError } from "./errors";
import { type RetryPolicy, backoffDelayMs, sleep } from "./retry";

/**
 * One purchase (an upload, a renew), whose outcome an ambiguous failure (sent, no answer) leaves
 * unknown: sent under one Idempotency-Key; after each ambiguous failure `settle` decides whether
 * to send it again (at most `maxAttempts` sends, within the operation's deadline), to take the
 * outcome as known, or to stop, and then `unknown` is the error. A definite failure, or an
 * answer that does not check out, fails at once.
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
 * What a read-back after an ambiguous renew failure says about that renew, from how far the
 * expiry moved since it was last seen. Expiry only grows, by whole epochs, so with the epoch
 * length known:
 * - moved less than this purchase: ours is not in it ("not-applied");
 * - moved by this purchase (within half an epoch): ours ("applied");
 * - moved by more: someone else renewed too, and ours may or may not be part of it
 *   ("unattributable"). Taking that as applied would record epochs never bought.
 * Without the epoch length, any move counts as applied.
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
