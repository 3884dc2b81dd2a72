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
