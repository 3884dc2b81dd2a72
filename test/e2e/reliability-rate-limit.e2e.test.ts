import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../emulator";
import { countingProxy, type CountingProxy, type Exchange } from "../reliability/proxy";
import { reliabilityStack, type ReliabilityStack } from "../reliability/engine";
import { recordResult, sized, summarizeLog } from "../reliability/results";

/**
 * Concurrency and rate limits, through the real engine, measured from the outside by a proxy
 * between the provider and the emulator: the provider never has more than `tuskr:maxConcurrency`
 * requests open, it waits as long as the server asks after a 429, and an `up` against a
 * rate-limited service finishes without a user-visible error.
 */

const KEY = `tsk_live_rate_${randomBytes(12).toString("hex")}`;
const results: Record<string, unknown> = {};
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  recordResult("rate-limit", results);
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

async function setUp(options: Parameters<typeof startEmulator>[0], config: Record<string, string> = {}) {
  const emu = await startEmulator({ port: 0, apiKeys: [KEY], ...options });
  cleanups.push(() => emu.close());
  const proxy = await countingProxy(emu.url);
  cleanups.push(() => proxy.close());
  // The provider talks to the proxy; the proxy to the emulator.
  const rs = await reliabilityStack({ ...emu, url: proxy.url } as Emulator, KEY, config);
  cleanups.push(() => rs.dispose());
  return { emu, proxy, rs };
}

async function declareFiles(emu: Emulator, rs: ReliabilityStack, count: number) {
  const files: Record<string, Record<string, unknown>> = {};
  for (let i = 0; i < count; i++) {
    const blobId = (await emu.uploadFile({ content: `rate ${i} ${randomBytes(6).toString("hex")}`, epochs: 5 })).blobId;
    files[`r${i}`] = { blobId, tag: `t${i}`, metadata: { i }, retentionEpochs: 1 + (i % 4) };
  }
  await rs.declare(files);
  return files;
}

/** For each 429, how long until the same request was sent again, against what it asked. */
function waitsAfter429(exchanges: Exchange[]): Array<{ askedMs: number; waitedMs: number }> {
  const out: Array<{ askedMs: number; waitedMs: number }> = [];
  exchanges.forEach((e, i) => {
    if (e.status !== 429 || e.answeredAt === undefined) return;
    const retry = exchanges.slice(i + 1).find((n) => n.method === e.method && n.path === e.path);
    if (retry) out.push({ askedMs: Number(e.retryAfter ?? 0) * 1000, waitedMs: retry.sentAt - e.answeredAt });
  });
  return out;
}

describe("concurrency and rate limits through the engine", () => {
  it("never more requests open than tuskr:maxConcurrency", async () => {
    const files = sized(12, 40);
    const { emu, proxy, rs } = await setUp({ faults: { routes: { "*": { latencyMs: 150 } } } }, { "tuskr:maxConcurrency": "2" });
    await declareFiles(emu, rs, files);
    const up = await rs.up();
    expect(up.ok).toBe(true);
    results.concurrency = { files, maxConcurrency: 2, latencyMs: 150, requests: proxy.exchanges().length, peakOpen: proxy.peak(), upSeconds: up.seconds };
    expect(proxy.peak()).toBe(2);
    expect(proxy.exchanges().length).toBeGreaterThanOrEqual(files * 3);
  });

  async function rateLimitedUp(rps: number, files: number) {
    const { emu, proxy, rs } = await setUp({ rateLimit: { requestsPerSecond: rps } });
    const declared = await declareFiles(emu, rs, files);
    const up = await rs.up();
    const waits = waitsAfter429(proxy.exchanges());
    const summary = summarizeLog(emu.requests());
    const bought = emu.files().reduce((n, f) => n + f.epochsBought, 0);
    const wanted = Object.values(declared).reduce((n, d) => n + (d.retentionEpochs as number), 0);
    return {
      files,
      requestsPerSecond: rps,
      maxConcurrency: 8,
      upOk: up.ok,
      error: up.ok ? undefined : (up.output.split("\n").find((l) => /RATE_LIMIT|429/.test(l)) ?? "").trim().slice(0, 300),
      requests: summary.requests,
      status429: summary.byStatus["429"] ?? 0,
      retriesAfter429: waits.length,
      minWaitMs: waits.length ? Math.min(...waits.map((w) => w.waitedMs)) : undefined,
      waitsShorterThanAsked: waits.filter((w) => w.waitedMs < w.askedMs - 50).length,
      upSeconds: up.seconds,
      epochsBought: bought,
      declaredEpochs: wanted,
    };
  }

  it("an up against a service limited to 10 requests per second succeeds, waiting as long as each 429 asks", async () => {
    const r = await rateLimitedUp(10, 20);
    results.rateLimit = r;
    expect(r.status429).toBeGreaterThan(0);
    expect(r.waitsShorterThanAsked).toBe(0);
    expect(r.upOk, r.error).toBe(true);
    expect(r.epochsBought).toBe(r.declaredEpochs);
  });

  // BUG (provider/client/client.ts send() with provider/client/retry.ts DEFAULT_RETRY_POLICY):
  // a 429 uses up one of the 5 attempts of the request that got it, and every request waits
  // exactly the server's Retry-After (1 s, no jitter), so all waiting requests come back
  // together and most are refused again. A request therefore gives up after about 4 s of
  // waiting, while draining a backlog takes (requests / rate) seconds: 30 files (90 requests)
  // at 3 requests per second fail the up with "429 RATE_LIMIT_EXCEEDED" (at 5 rps as well;
  // tuskr:maxConcurrency does not help, it bounds requests open, not requests per second).
  // Fix: retry 429 until maxTotalMs rather than maxAttempts; add jitter on top of a
  // server-requested wait; and hold every request of the client (not only the refused one)
  // until the Retry-After / X-RateLimit-Reset time, so the client as a whole slows to the rate.
  it("an up of 30 files against a service limited to 3 requests per second succeeds", async () => {
    const r = await rateLimitedUp(3, 30);
    results.rateLimitLow = r;
    recordResult("known-gaps", {
      rateLimitBudget: {
        test: "test/e2e/reliability-rate-limit.e2e.test.ts",
        scenario: "pulumi up of 30 files (90 requests) against rateLimit 3 requests/s",
        ...r,
      },
    });
    expect(r.upOk, r.error).toBe(true);
  });

  it("even while failing at 3 requests per second, it waited as asked and bought nothing twice", () => {
    const r = results.rateLimitLow as { waitsShorterThanAsked: number; epochsBought: number; declaredEpochs: number; status429: number };
    expect(r).toBeDefined();
    expect(r.status429).toBeGreaterThan(0);
    expect(r.waitsShorterThanAsked).toBe(0);
    expect(r.epochsBought).toBeLessThanOrEqual(r.declaredEpochs);
  });
});
