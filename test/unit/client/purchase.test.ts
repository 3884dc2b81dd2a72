import { describe, expect, it } from "vitest";
import { TuskrApiError } from "../../../provider/client/errors";
import { purchase } from "../../../provider/client/purchase";
import { DEFAULT_RETRY_POLICY } from "../../../provider/client/retry";

const policy = { ...DEFAULT_RETRY_POLICY, minDelayMs: 1, baseDelayMs: 1, maxDelayMs: 2 };
const unknown = (last: TuskrApiError | undefined, why: string) =>
  new TuskrApiError({ code: "RENEW_OUTCOME_UNKNOWN", message: `unknown (${last?.message}; ${why})`, retryable: false, mayHaveBeenApplied: true });

describe("purchase: a resend after an attempt that may have been applied", () => {
  it("a resend's definite failure (not sent) still ends as the purchase's unknown outcome", async () => {
    const failures = [
      new TuskrApiError({ code: "SERVICE_UNAVAILABLE", message: "applied, answered 503", status: 503, retryable: true, mayHaveBeenApplied: true }),
      new TuskrApiError({ code: "SERVICE_UNAVAILABLE", message: "not sent", retryable: false, mayHaveBeenApplied: false }),
    ];
    const error = await purchase(policy, () => 0.5, {
      deadline: Date.now() + 60_000,
      send: async () => Promise.reject(failures.shift()),
      settle: async () => ({ again: "now" as const }),
      unknown,
    }).catch((e: TuskrApiError) => e);
    expect(error).toMatchObject({ code: "RENEW_OUTCOME_UNKNOWN", mayHaveBeenApplied: true });
    expect((error as Error).message).toMatch(/applied, answered 503.*a resend then failed: not sent/);
  });

  it("a first attempt's definite failure is that failure", async () => {
    const definite = new TuskrApiError({ code: "VALIDATION_ERROR", message: "refused", status: 422, retryable: false });
    const error = await purchase(policy, () => 0.5, {
      deadline: Date.now() + 60_000,
      send: async () => Promise.reject(definite),
      settle: async () => ({ again: "now" as const }),
      unknown,
    }).catch((e: unknown) => e);
    expect(error).toBe(definite);
  });
});
