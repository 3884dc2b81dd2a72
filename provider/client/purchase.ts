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

/** The longest epoch a move is believed to show: four weeks, twice Walrus mainnet's. */
const LONGEST_EPOCH_MS = 28 * 86_400_000;

/**
 * Whether a renew whose answer was lost was applied, judged by how far the expiry moved. With the
 * length known, only the move of exactly its epochs is ours (a renewal made elsewhere is not).
 * Without it the provider sends only a renew of one epoch, whose move, at most the longest epoch,
 * shows the length: another purchase alongside it can only make that length longer (fewer epochs
 * counted, never a file short). Anything else moved is "unattributable".
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
  if (epochMs !== undefined && epochMs > 0) {
    const expected = epochs * epochMs;
    if (moved < expected - epochMs / 2) return "not-applied";
    if (moved <= expected + epochMs / 2) return "applied";
    return "unattributable";
  }
  if (!(moved > 0)) return "not-applied";
  return epochs === 1 && moved <= LONGEST_EPOCH_MS ? "applied" : "unattributable";
}
