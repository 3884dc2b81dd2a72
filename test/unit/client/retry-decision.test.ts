import { describe, expect, it } from "vitest";
import { DEFAULT_RETRY_POLICY, decideRetry, refusalEvidence } from "../../../provider/client/retry";

// One policy with round numbers, so every expected wait below can be worked out by hand.
const policy = {
  ...DEFAULT_RETRY_POLICY,
  maxAttempts: 4,
  maxRateLimitedAttempts: 10,
  minDelayMs: 100,
  baseDelayMs: 200,
  maxDelayMs: 1_000,
  maxPurchaseRounds: 3,
};
const now = 1_000_000;
const later = now + 60_000;
const top = () => 0.999;
const noJitter = () => {
  throw new Error("no jitter is drawn for this decision");
};

const failure = (fields: { retryable?: boolean; mayHaveBeenApplied?: boolean; status?: number; retryAfterSeconds?: number; code?: string } = {}) => ({
  code: "INTERNAL_ERROR",
  retryable: true,
  mayHaveBeenApplied: false,
  ...fields,
});

describe("decideRetry: one request", () => {
  const ask = (attempt: number, error = failure(), random: () => number = top, deadline = later, ambiguousAllowed = false) =>
    decideRetry(policy, { kind: "request", attempt, error, deadline, ambiguousAllowed }, random, now);

  it("backs off with jitter under a ceiling that doubles up to maxDelayMs", () => {
    expect([1, 2, 3, 4].map((attempt) => ask(attempt, failure({ status: 429 })))).toEqual([{ wait: 199 }, { wait: 399 }, { wait: 799 }, { wait: 999 }]);
  });

  it("waits at least the floor, whatever the jitter or the server's Retry-After: 0", () => {
    expect(ask(1, failure(), () => 0)).toEqual({ wait: 100 });
    expect(ask(1, failure({ status: 503, retryAfterSeconds: 0 }), noJitter)).toEqual({ wait: 100 });
  });

  it("takes a server's longer wait instead of the backoff, rounded up to the millisecond", () => {
    expect(ask(1, failure({ status: 429, retryAfterSeconds: 2.0004 }), noJitter)).toEqual({ wait: 2_001 });
  });

  it("stops after maxAttempts, but a 429 gets maxRateLimitedAttempts", () => {
    expect(ask(3)).toEqual({ wait: 799 });
    expect(ask(4)).toEqual({ stop: "attempts" });
    expect(ask(9, failure({ status: 429 }))).toEqual({ wait: 999 });
    expect(ask(10, failure({ status: 429 }))).toEqual({ stop: "attempts" });
  });

  it("stops rather than wait up to or past the deadline, however long the server asks", () => {
    expect(ask(1, failure({ status: 429, retryAfterSeconds: 3_600 }), noJitter)).toEqual({ stop: "deadline" });
    expect(ask(1, failure(), () => 0, now + 100)).toEqual({ stop: "deadline" });
    expect(ask(1, failure(), () => 0, now + 101)).toEqual({ wait: 100 });
  });

  it("never retries a definite failure", () => {
    expect(ask(1, failure({ retryable: false, status: 400, code: "VALIDATION_ERROR" }), noJitter)).toEqual({ stop: "not-retryable" });
  });

  it("resends a failure that may have been applied only when the request allows it", () => {
    expect(ask(1, failure({ mayHaveBeenApplied: true }), noJitter)).toEqual({ stop: "ambiguous" });
    expect(ask(1, failure({ mayHaveBeenApplied: true }), top, later, true)).toEqual({ wait: 199 });
  });
});

describe("decideRetry: a purchase resent under its key", () => {
  const ambiguous = failure({ code: "TIMEOUT", mayHaveBeenApplied: true });
  const ask = (attempt: number, error = ambiguous, random: () => number = top, deadline = later) =>
    decideRetry(policy, { kind: "purchase", attempt, error, deadline }, random, now);

  it("backs off with the floor below and maxDelayMs above", () => {
    expect(ask(1, ambiguous, () => 0)).toEqual({ wait: 100 });
    expect([1, 2, 3].map((attempt) => ask(attempt))).toEqual([{ wait: 199 }, { wait: 399 }, { wait: 799 }]);
    expect(decideRetry({ ...policy, maxAttempts: 9 }, { kind: "purchase", attempt: 8, error: ambiguous, deadline: later }, top, now)).toEqual({ wait: 999 });
  });

  it("cuts the wait to what is left of the budget, and stops once it is spent", () => {
    expect(ask(3, ambiguous, top, now + 50)).toEqual({ wait: 50 });
    expect(ask(1, ambiguous, noJitter, now)).toEqual({ stop: "deadline" });
    // The budget is checked before the attempts: a spent budget is what the caller reports.
    expect(ask(4, ambiguous, noJitter, now)).toEqual({ stop: "deadline" });
  });

  it("stops after maxAttempts sends, and after the first when maxAttempts is below one", () => {
    expect(ask(4, ambiguous, noJitter)).toEqual({ stop: "attempts" });
    expect(decideRetry({ ...policy, maxAttempts: 0 }, { kind: "purchase", attempt: 1, error: ambiguous, deadline: later }, noJitter, now)).toEqual({
      stop: "attempts",
    });
  });

  it("resends only a failure that may have been applied, never an answer that cannot be trusted", () => {
    expect(ask(1, failure({ status: 400, retryable: false, code: "VALIDATION_ERROR" }), noJitter)).toEqual({ stop: "not-retryable" });
    expect(ask(1, failure({ status: 429 }), noJitter)).toEqual({ stop: "not-retryable" });
    expect(ask(1, failure({ code: "INVALID_RESPONSE", retryable: false, mayHaveBeenApplied: true }), noJitter)).toEqual({ stop: "not-retryable" });
  });
});

describe("decideRetry: a round of read → buy", () => {
  it("allows maxPurchaseRounds rounds, with the floor between them", () => {
    expect([1, 2, 3].map((attempt) => decideRetry(policy, { kind: "round", attempt }, noJitter, now))).toEqual([
      { wait: 100 },
      { wait: 100 },
      { stop: "attempts" },
    ]);
    expect(decideRetry({ ...policy, maxPurchaseRounds: 1 }, { kind: "round", attempt: 1 }, noJitter, now)).toEqual({ stop: "attempts" });
  });
});

describe("refusalEvidence: what a failure says of the service as a whole", () => {
  it("pacing past the budget (429) counts alone; failing or not answering past it counts only alongside another request's", () => {
    expect(refusalEvidence(failure({ status: 429 }), "attempts")).toBe("alone");
    expect(refusalEvidence(failure({ status: 429 }), "deadline")).toBe("alone");
    for (const error of [failure({ status: 503 }), failure({ status: 500 }), failure({ code: "TIMEOUT" }), failure({ code: "NETWORK_ERROR" })]) {
      expect(refusalEvidence(error, "attempts")).toBe("corroborated");
      expect(refusalEvidence(error, "deadline")).toBe("corroborated");
      // A purchase's ambiguous failure is not resent as is: its attempts are not spent.
      expect(refusalEvidence(error, "ambiguous")).toBeUndefined();
    }
    expect(refusalEvidence(failure({ status: 429 }), "ambiguous")).toBeUndefined();
  });

  it("a rejected key counts at once; a 403 never (one file's account, one upload's content)", () => {
    expect(refusalEvidence(failure({ status: 401, code: "UNAUTHORIZED", retryable: false }), "not-retryable")).toBe("alone");
    expect(refusalEvidence(failure({ status: 403, code: "FORBIDDEN", retryable: false }), "not-retryable")).toBeUndefined();
  });

  it("a file's own failure never counts: a 422, a 404, an answer that cannot be trusted, a budget spent before sending", () => {
    expect(refusalEvidence(failure({ status: 422, code: "VALIDATION_ERROR", retryable: false }), "not-retryable")).toBeUndefined();
    expect(refusalEvidence(failure({ status: 404, code: "NOT_FOUND", retryable: false }), "not-retryable")).toBeUndefined();
    expect(refusalEvidence(failure({ code: "INVALID_RESPONSE", retryable: false, mayHaveBeenApplied: true }), "not-retryable")).toBeUndefined();
    expect(refusalEvidence(failure({ code: "TIMEOUT", retryable: false }), "not-retryable")).toBeUndefined();
  });
});
