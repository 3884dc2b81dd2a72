/**
 * Retry policy: jittered exponential backoff bounded in attempts and total time. A server's
 * Retry-After wins but never goes below the floor, so `Retry-After: 0` cannot make a hot loop.
 */
export interface RetryPolicy {
  /** Attempts in all, the first one included. */
  maxAttempts: number;
  /** Attempts in all while the service answers 429 (pacing, not failing: allowed more). */
  maxRateLimitedAttempts: number;
  /** Every wait before a retry lasts at least this long, whatever the server asks. */
  minDelayMs: number;
  /** First backoff ceiling; doubles on each retry. */
  baseDelayMs: number;
  /** Ceiling of one backoff. */
  maxDelayMs: number;
  /** Budget for one call, waits and attempts included: past it we stop retrying. */
  maxTotalMs: number;
  /** Rounds of read → buy when a purchase's outcome stays unknown (each round one renew at most). */
  maxPurchaseRounds: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 5,
  maxRateLimitedAttempts: 30,
  minDelayMs: 100,
  baseDelayMs: 250,
  maxDelayMs: 8_000,
  maxTotalMs: 60_000,
  maxPurchaseRounds: 3,
};

/** Full-jitter exponential backoff for the given retry number (1 = first retry). */
export function backoffDelayMs(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(random() * ceiling);
}

/** What a retry decision reads of a failure; a TuskrApiError carries all of it. */
interface RetryFailure {
  code: string;
  retryable: boolean;
  mayHaveBeenApplied: boolean;
  status?: number;
  retryAfterSeconds?: number;
}

/**
 * Which loop asks: one request resent as is, a purchase resent under its Idempotency-Key once its
 * caller settled an ambiguous failure, or a round that rereads the file and plans its purchase anew.
 */
type RetryQuestion =
  | { kind: "request"; attempt: number; error: RetryFailure; deadline: number; ambiguousAllowed: boolean }
  | { kind: "purchase"; attempt: number; error: RetryFailure; deadline: number }
  | { kind: "round"; attempt: number };

type RetryStop = "not-retryable" | "ambiguous" | "attempts" | "deadline";
type RetryDecision = { wait: number } | { stop: RetryStop };

/**
 * The one place that decides whether a failed attempt (1 = the first) is followed by another, and
 * after how long; the loops only carry it out, so their floors, caps and budgets cannot drift apart.
 */
export function decideRetry(policy: RetryPolicy, q: RetryQuestion, random: () => number = Math.random, now: number = Date.now()): RetryDecision {
  switch (q.kind) {
    case "request": {
      const { error } = q;
      if (!error.retryable) return { stop: "not-retryable" };
      // Sent again as is only where the same request gives the same result (not a purchase).
      if (error.mayHaveBeenApplied && !q.ambiguousAllowed) return { stop: "ambiguous" };
      // A 429 is the server pacing us, not failing: allowed more attempts, so a rate-limited run
      // slows down instead of failing after a handful; still a bounded number.
      if (q.attempt >= (error.status === 429 ? policy.maxRateLimitedAttempts : policy.maxAttempts)) return { stop: "attempts" };
      const serverMs = error.retryAfterSeconds !== undefined ? Math.ceil(error.retryAfterSeconds * 1000) : undefined;
      const wait = Math.max(policy.minDelayMs, serverMs ?? backoffDelayMs(q.attempt, policy, random));
      // A wait that ends past the deadline is not made: however long a server asks, the budget caps it.
      return now + wait >= q.deadline ? { stop: "deadline" } : { wait };
    }
    case "purchase": {
      // Only a failure that may have bought is worth settling; an answer that cannot be trusted is no ambiguity.
      if (!q.error.mayHaveBeenApplied || q.error.code === "INVALID_RESPONSE") return { stop: "not-retryable" };
      if (now >= q.deadline) return { stop: "deadline" };
      if (q.attempt >= policy.maxAttempts) return { stop: "attempts" };
      // Cut to what is left rather than refused: the resend then meets the deadline itself, and says so.
      return { wait: Math.min(Math.max(policy.minDelayMs, backoffDelayMs(q.attempt, policy, random)), Math.max(0, q.deadline - now)) };
    }
    case "round":
      // The floor only: each round starts with a read, and its purchase already backed off between attempts.
      return q.attempt >= policy.maxPurchaseRounds ? { stop: "attempts" } : { wait: policy.minDelayMs };
  }
}

/**
 * What a request the loop gave up on (`stop`) says of the service as a whole. "alone": a rejected key
 * (401) or pacing past the retries (429: a rate limit is the key's, never one file's) refuses everyone
 * by itself. "corroborated": failing or not answering past the retries may be this request's own
 * fault (one file's broken row), so it counts only alongside another request's. A 403 is never the
 * service's: it may be one file's account or one upload's content.
 */
export function refusalEvidence(error: RetryFailure, stop: RetryStop): "alone" | "corroborated" | undefined {
  if (error.status === 401) return "alone";
  if (stop !== "attempts" && stop !== "deadline") return undefined;
  if (error.status === 429) return "alone";
  return (error.status !== undefined && error.status >= 500) || error.code === "TIMEOUT" || error.code === "NETWORK_ERROR" ? "corroborated" : undefined;
}

/**
 * The wait a server asked for, in seconds, from `Retry-After` (seconds or HTTP date) or
 * `X-RateLimit-Reset` (Unix time in seconds). Undefined when neither is usable.
 */
export function serverRequestedWaitSeconds(headers: Record<string, unknown> | undefined, nowMs: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const header = (name: string): string | undefined => {
    const v = headers[name] ?? headers[name.toLowerCase()];
    return v === undefined || v === null ? undefined : String(v);
  };
  const retryAfter = header("retry-after");
  if (retryAfter !== undefined && retryAfter.trim() !== "") {
    const secs = Number(retryAfter);
    if (Number.isFinite(secs) && secs >= 0) return secs;
    const date = Date.parse(retryAfter);
    if (!Number.isNaN(date)) return Math.max(0, (date - nowMs) / 1000);
  }
  const reset = header("x-ratelimit-reset");
  if (reset !== undefined && reset.trim() !== "") {
    const unix = Number(reset);
    if (Number.isFinite(unix) && unix > 0) return Math.max(0, unix - nowMs / 1000);
  }
  return undefined;
}

/** A counting semaphore: the client never has more than `limit` requests in flight. */
export class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError("concurrency limit must be an integer >= 1");
  }

  get inFlight(): number {
    return this.active;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    // A finishing call hands its slot straight to the next waiter, so a newcomer can never
    // slip in between and push the count over the limit.
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiters.push(resolve));
    else this.active++;
    try {
      return await fn();
    } finally {
      const next = this.waiters.shift();
      if (next) next();
      else this.active--;
    }
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
