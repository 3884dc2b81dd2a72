import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, type Emulator, startEmulator } from "../../../emulator";
import { TuskrClient } from "../../../provider/client/client";
import { type HostileService, rewritingProxy } from "../../helpers/hostile-service";

/**
 * When the client concludes that the service refuses every request (and stops sending): only on
 * evidence that the refusal is the service's, not one request's, and only for a bounded time.
 */

let emu: Emulator;
let proxy: HostileService;
beforeEach(async () => {
  emu = await startEmulator({ port: 0 });
  // An upload whose content the service forbids: one upload's own refusal (403), naming no file.
  proxy = await rewritingProxy(emu.url, {
    answer: (method, p, { body }) =>
      method === "POST" && p === "/v1/files" && body?.includes("FORBIDDEN-CONTENT")
        ? [403, { error: { code: "FORBIDDEN", message: "this content type is not allowed on your plan" } }]
        : undefined,
  });
});
afterEach(async () => {
  await proxy.close();
  await emu.close();
});

const RETRY = { maxAttempts: 3, minDelayMs: 1, baseDelayMs: 1, maxDelayMs: 5 };
const client = (retry: Partial<typeof RETRY> = RETRY) => new TuskrClient({ baseUrl: proxy.url, apiKey: EMULATOR_DEFAULT_API_KEY, retry });
const outcome = (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (e: Error) => e.message,
  );
const files = (...names: string[]) => Promise.all(names.map((n) => emu.uploadFile({ content: `${n} ${Math.random()}`, filename: `${n}.txt` })));

describe("one request's own failure, while no other gets an answer, does not stop the client", () => {
  it("one file's GET answered 503 past its retries while another is slow: the next request is sent", async () => {
    const [a, b, d] = await files("a", "b", "d");
    emu.setFaults({
      script: [
        { route: "get", blobId: b.blobId, fault: "5xx", times: 1000 },
        { route: "get", blobId: d.blobId, fault: "latency", latencyMs: 1500 },
      ],
    });
    const tuskr = client();
    const slow = tuskr.getFile(d.blobId);
    expect(await outcome(tuskr.getFile(b.blobId))).toMatch(/503 SERVICE_UNAVAILABLE/);
    expect(await outcome(tuskr.getFile(a.blobId))).toBe("ok");
    expect(tuskr.refusal).toBeUndefined();
    await slow;
  });

  it("one upload refused 403 (its content) while another request is slow: its own message stands, and the next upload is sent", async () => {
    const [d] = await files("d");
    emu.setFaults({ script: [{ route: "get", blobId: d.blobId, fault: "latency", latencyMs: 1500 }] });
    const tuskr = client();
    const slow = tuskr.getFile(d.blobId);
    const upload = (text: string, key: string) =>
      tuskr.uploadFile({ bytes: Buffer.from(text), filename: `${key}.txt` }, { epochs: 1 }, { idempotencyKey: key });
    expect(await outcome(upload("FORBIDDEN-CONTENT", "k-forbidden"))).toMatch(/403 FORBIDDEN: this content type is not allowed on your plan/);
    expect(await outcome(upload(`fine ${Math.random()}`, "k-fine"))).toBe("ok");
    await slow;
  });
});

describe("a service refusing every request, then recovering while a slow request is still in flight", () => {
  it("two files' GETs refused past their retries stop the client; once the trip's hold ends, a probe's 2xx lets requests through again", async () => {
    const [a, b, c, d] = await files("a", "b", "c", "d");
    emu.setFaults({
      script: [
        { route: "get", blobId: b.blobId, fault: "5xx", times: 1000 },
        { route: "get", blobId: c.blobId, fault: "5xx", times: 1000 },
        { route: "get", blobId: d.blobId, fault: "latency", latencyMs: 3000 },
      ],
    });
    // Waits of 100 ms at most: the trip holds for 200 ms.
    const tuskr = client({ ...RETRY, maxDelayMs: 100 });
    const slow = tuskr.getFile(d.blobId);
    await Promise.allSettled([tuskr.getFile(b.blobId), tuskr.getFile(c.blobId)]);
    expect(tuskr.refusal?.message).toMatch(/503 SERVICE_UNAVAILABLE/);
    expect(await outcome(tuskr.getFile(a.blobId))).toMatch(/not sent: the service refuses every request/);
    // The service recovers; the slow request is still in flight.
    emu.setFaults({ script: [{ route: "get", blobId: d.blobId, fault: "latency", latencyMs: 3000 }] });
    await new Promise((r) => setTimeout(r, 300));
    expect(await outcome(tuskr.getFile(a.blobId))).toBe("ok");
    expect(await outcome(tuskr.getFile(b.blobId))).toBe("ok");
    await slow;
  });
});

describe("a base URL where nothing answers", () => {
  it("requests refused a connection past their retries stop the client; those it holds back say the service cannot be reached, not that it refuses", async () => {
    const closed = proxy.url;
    await proxy.close();
    // Nothing listens there any more: each connection is refused. Attempts spread by jitter, so
    // the first request to give up trips the client while the others still retry.
    const tuskr = new TuskrClient({
      baseUrl: closed,
      apiKey: EMULATOR_DEFAULT_API_KEY,
      retry: { maxAttempts: 4, minDelayMs: 1, baseDelayMs: 20, maxDelayMs: 500 },
    });
    const said = await Promise.all(["a", "b", "c", "d", "e", "f", "g", "h"].map((id) => outcome(tuskr.getFile(id))));
    expect(tuskr.refusal?.message).toMatch(/ECONNREFUSED: nothing answers at/);
    const held = said.filter((m) => m.includes("not sent"));
    expect(held.length).toBeGreaterThan(0);
    for (const m of held) {
      expect(m).toMatch(
        /^GET \/v1\/files\/\w not sent: the service cannot be reached \(GET http:\/\/127\.0\.0\.1:\d+\/v1\/files\/\w failed \(NETWORK_ERROR\): ECONNREFUSED/,
      );
    }
  });
});
