import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../../emulator";
import { countingProxy, type Exchange } from "../../helpers/counting-proxy";
import { FIXTURE, openStack, type EngineStack } from "../../helpers/engine";
import { recordResult, sized, summarizeLog } from "../../helpers/reliability-results";

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
  const rs = await openStack(FIXTURE, { emu, baseUrl: proxy.url, apiKey: KEY, config });
  cleanups.push(() => rs.dispose());
  return { emu, proxy, rs };
}

async function declareFiles(emu: Emulator, rs: EngineStack, count: number) {
  const files: Record<string, Record<string, unknown>> = {};
  for (let i = 0; i < count; i++) {
    // Stored for one epoch: a declared end of N epochs lacks N - 1 (every file buys some).
    const blobId = (await emu.uploadFile({ content: `rate ${i} ${randomBytes(6).toString("hex")}`, epochs: 1 })).blobId;
    files[`r${i}`] = { blobId, tag: `t${i}`, metadata: { i }, retentionEpochs: 2 + (i % 4) };
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
    const wanted = Object.values(declared).reduce((n, d) => n + (d.retentionEpochs as number) - 1, 0);
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

  // Draining 90 requests at 3 per second takes 30 s: 429s are bounded by the time budget, not a count of attempts.
  it("an up of 30 files against a service limited to 3 requests per second succeeds", async () => {
    const r = await rateLimitedUp(3, 30);
    results.rateLimitLow = r;
    expect(r.upOk, r.error).toBe(true);
  });

  it("at 3 requests per second, it waited as asked and bought nothing twice", () => {
    const r = results.rateLimitLow as { waitsShorterThanAsked: number; epochsBought: number; declaredEpochs: number; status429: number };
    expect(r).toBeDefined();
    expect(r.status429).toBeGreaterThan(0);
    expect(r.waitsShorterThanAsked).toBe(0);
    expect(r.epochsBought).toBeLessThanOrEqual(r.declaredEpochs);
  });
});
