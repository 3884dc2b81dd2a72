import { ERRORS, type EmulatorError, emulatorErrorWithHeaders } from "./errors";

/** A token bucket holding one second's worth of requests: the emulator's rate limit. */
export class TokenBucket {
  private tokens: number;
  private last = Date.now();
  private readonly capacity: number;

  constructor(readonly rate: number) {
    this.capacity = Math.max(1, rate);
    this.tokens = this.capacity;
  }

  /** Takes a token; when none is left, returns how many milliseconds until one is. */
  take(): number | undefined {
    const now = Date.now();
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return undefined;
    }
    return ((1 - this.tokens) / this.rate) * 1000;
  }
}

/**
 * A 429 with `Retry-After` (whole seconds, at least 1) and `X-RateLimit-Reset` (Unix seconds);
 * with the bucket's rate, `X-RateLimit-Limit` and `X-RateLimit-Remaining` too.
 */
export function rateLimitedError(waitSeconds: number, limit?: number): EmulatorError {
  const retryAfter = Math.max(1, Math.ceil(waitSeconds));
  const headers: Record<string, string> = {
    "Retry-After": String(retryAfter),
    "X-RateLimit-Reset": String(Math.ceil(Date.now() / 1000 + waitSeconds)),
  };
  if (limit !== undefined) {
    headers["X-RateLimit-Limit"] = String(limit);
    headers["X-RateLimit-Remaining"] = "0";
  }
  return emulatorErrorWithHeaders(ERRORS.rateLimited, headers, retryAfter);
}
