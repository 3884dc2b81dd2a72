import { describe, expect, it } from "vitest";
import { TuskrApiError, redactString, redactValue } from "../../../provider/client/errors";
import { DEFAULT_RETRY_POLICY, Semaphore, backoffDelayMs, serverRequestedWaitSeconds } from "../../../provider/client/retry";
import { readBackVerdict } from "../../../provider/client/purchase";
import { assertSafeBlobId, filePath } from "../../../provider/client/urls";

describe("backoff", () => {
  it("grows exponentially under full jitter and stays under the ceiling", () => {
    const policy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxDelayMs: 1000 };
    expect([1, 2, 3, 4, 5].map((r) => backoffDelayMs(r, policy, () => 0.999))).toEqual([99, 199, 399, 799, 999]);
    expect(backoffDelayMs(3, policy, () => 0)).toBe(0);
  });
});

describe("server-requested waits", () => {
  const now = Date.parse("2024-01-01T00:00:00Z");
  it.each([
    [{ "retry-after": "3" }, 3],
    [{ "retry-after": "Mon, 01 Jan 2024 00:00:10 GMT" }, 10],
    [{ "x-ratelimit-reset": String(now / 1000 + 7) }, 7],
    [{ "retry-after": "2", "x-ratelimit-reset": String(now / 1000 + 7) }, 2],
    [{}, undefined],
    [{ "retry-after": "soon" }, undefined],
  ])("%j → %s s", (headers, seconds) => {
    expect(serverRequestedWaitSeconds(headers, now)).toBe(seconds);
  });
});

describe("Semaphore", () => {
  it("never lets more than the limit run, and hands slots over in order", async () => {
    const gate = new Semaphore(3);
    let running = 0;
    let peak = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        gate.run(async () => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((r) => setTimeout(r, 1 + (i % 3)));
          running--;
          order.push(i);
        }),
      ),
    );
    expect(peak).toBe(3);
    expect(order).toHaveLength(20);
    expect(gate.inFlight).toBe(0);
  });
});

describe("redaction", () => {
  const key = "tsk_live_supersecretvalue";
  it("masks the key and any bearer token in strings and nested values", () => {
    expect(redactString(`bad key ${key} (Authorization: Bearer ${key})`, [key])).not.toContain(key);
    expect(redactString("Bearer abc.def", [])).toBe("Bearer [REDACTED]");
    expect(JSON.stringify(redactValue({ error: { message: `echo ${key}`, list: [key] } }, [key]))).not.toContain(key);
  });
  it("an error's message, JSON form and string form hold no key", () => {
    const e = new TuskrApiError({ code: "UNAUTHORIZED", status: 401, message: redactString(`rejected ${key}`, [key]) });
    expect(`${e.message} ${JSON.stringify(e)} ${String(e)}`).not.toContain(key);
  });
});

describe("blobId path encoding", () => {
  it.each([
    ["x/renew", "/v1/files/x%2Frenew"],
    ["../y", "/v1/files/..%2Fy"],
    ["a%2Fb", "/v1/files/a%252Fb"],
    ["naïve ✓", "/v1/files/na%C3%AFve%20%E2%9C%93"],
    ["q?x=1#f", "/v1/files/q%3Fx%3D1%23f"],
  ])("%s stays one path segment", (id, path) => {
    expect(filePath(id)).toBe(path);
    expect(filePath(id, "renew")).toBe(`${path}/renew`);
  });
  it.each([".", "..", "", "a\u0000b"])("refuses %j before any request", (id) => {
    expect(() => assertSafeBlobId(id)).toThrow(TuskrApiError);
  });
});

describe("readBackVerdict: what a read-back says about an ambiguous renew", () => {
  const day = 86_400_000;
  const before = "2026-11-22T00:00:00.000Z";
  const plus = (epochs: number, extraMs = 0) => new Date(Date.parse(before) + epochs * day + extraMs).toISOString();

  it("a move of exactly the purchase is ours", () => {
    expect(readBackVerdict(before, plus(4), 4, day)).toBe("applied");
    expect(readBackVerdict(before, plus(4, 1000), 4, day)).toBe("applied");
  });

  it("no move, or a move short of the purchase, is not ours", () => {
    expect(readBackVerdict(before, before, 4, day)).toBe("not-applied");
    expect(readBackVerdict(before, plus(3), 4, day)).toBe("not-applied");
    expect(readBackVerdict(before, null, 4, day)).toBe("not-applied");
    expect(readBackVerdict(before, "not a date", 4, day)).toBe("not-applied");
  });

  it("a move larger than the purchase cannot be attributed (someone else renewed too)", () => {
    expect(readBackVerdict(before, plus(5), 4, day)).toBe("unattributable");
    expect(readBackVerdict(before, plus(9), 4, day)).toBe("unattributable");
  });

  it("without the epoch length only a renew of one epoch is sent: its move, at most four weeks, is ours and shows the length", () => {
    expect(readBackVerdict(before, plus(1), 1)).toBe("applied");
    expect(readBackVerdict(before, plus(14), 1)).toBe("applied");
    expect(readBackVerdict(before, plus(29), 1)).toBe("unattributable");
    expect(readBackVerdict(before, before, 1)).toBe("not-applied");
  });

  it("without the epoch length a renew of more than one epoch is never taken as applied: another stack's 1 epoch is not our 4", () => {
    expect(readBackVerdict(before, plus(1), 4)).toBe("unattributable");
    expect(readBackVerdict(before, plus(4), 4)).toBe("unattributable");
    expect(readBackVerdict(before, before, 4)).toBe("not-applied");
  });
});
