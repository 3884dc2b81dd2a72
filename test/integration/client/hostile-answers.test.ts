import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import * as fs from "node:fs";
import type { AddressInfo } from "node:net";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { TuskrClient } from "../../../provider/client/client";
import { DEFAULT_RETRY_POLICY } from "../../../provider/client/retry";
import { hostileService, json, record, type HostileService } from "../../helpers/hostile-service";
import { recordResult } from "../../helpers/reliability-results";
import { configuredProvider } from "../../helpers/provider-fixture";

/**
 * Nothing a server answers is trusted before it is checked, and no answer can hold a run
 * forever: a service that answers another file's record, moves an expiry backwards, sends a
 * huge body or values past the limits, or sends headers and then trickles the body.
 */

const KEY = "tsk_test_hostile_key";
let service: HostileService | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

const outcomes: Record<string, string> = {};
const note = (scenario: string, outcome: string) => {
  outcomes[scenario] = outcome;
  recordResult("hostile-responses", { outcomes });
};

async function providerFor(answer: Parameters<typeof hostileService>[0], config: Record<string, string> = {}) {
  service = await hostileService(answer);
  return configuredProvider(service, { "tuskr:apiKey": KEY, ...config }, { retry: { maxAttempts: 1 } });
}

/** What the engine would record after the call: the outputs, a partial state, or nothing new. */
async function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: any }> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (error) => ({ ok: false as const, error }),
  );
}

const recorded = { blobId: "b1", retentionEpochs: 2, expiresAt: "2026-12-01T00:00:00.000Z", idempotencyHonoured: true, renewKeySeed: "seed" };

describe("answers are checked before they are trusted", () => {
  it("a renew answered with another file's record is INVALID_RESPONSE, and nothing new is recorded", async () => {
    const provider = await providerFor((_req, res) => json(res, 200, record("someone-else", { expiresAt: "2026-12-05T00:00:00.000Z" })));
    const result = await settle(provider.update("b1", recorded, { blobId: "b1", retentionEpochs: 4 }));
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe("INVALID_RESPONSE");
      expect(result.error.message).toMatch(/record of another file/);
      expect(result.error.properties).toBeUndefined();
    }
    note("renew answered with another blobId's record", result.ok ? "taken as this file's" : `${result.error.code}, nothing recorded`);
  });

  it("a renew whose answer moves the expiry backwards is INVALID_RESPONSE, and nothing new is recorded", async () => {
    // The read before the purchase answers as recorded; the renew's answer goes backwards.
    const provider = await providerFor((req, res) =>
      json(res, 200, record("b1", { expiresAt: req.method === "GET" ? recorded.expiresAt : "2026-11-20T00:00:00.000Z" })),
    );
    const result = await settle(provider.update("b1", recorded, { blobId: "b1", retentionEpochs: 4 }));
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe("INVALID_RESPONSE");
      expect(result.error.message).toMatch(/not later than 2026-12-01/);
      // Only what the read before it said may be recorded, never the answer.
      expect(result.error.properties?.expiresAt ?? recorded.expiresAt).toBe(recorded.expiresAt);
    }
    note("renew answer moves the expiry backwards", result.ok ? "taken" : `${result.error.code}, nothing recorded`);
  });

  it("a 10 MB body is refused at the size cap: INVALID_RESPONSE, nothing of it recorded", async () => {
    const provider = await providerFor((_req, res) => json(res, 200, record("b1", { name: "n".repeat(10 * 1024 * 1024) })));
    const result = await settle(provider.read("b1", { ...recorded, name: "a.txt" }));
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe("INVALID_RESPONSE");
      expect(result.error.message).toMatch(/larger than 262144 bytes/);
      expect(result.error.message.length).toBeLessThan(1000);
    }
    note(
      "a 10 MB name in a GET answer",
      result.ok ? `recorded (${JSON.stringify(result.value).length} bytes of state)` : `${result.error.code} at the 256 KiB cap`,
    );
  });

  it("an answer cut before its Content-Length (a whole record so far) is a network failure, sent again, never taken", async () => {
    let answered = 0;
    service = await hostileService((_req, res) => {
      const body = JSON.stringify(record("b1", { name: answered === 0 ? "cut.txt" : "a.txt" }));
      if (answered++ > 0) return json(res, 200, JSON.parse(body));
      // The record whole, then the connection closed before the bytes it announced.
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": String(body.length + 50) });
      res.write(body, () => res.socket?.destroy());
    });
    const client = new TuskrClient({ apiKey: KEY, baseUrl: service.url, retry: { minDelayMs: 1, maxDelayMs: 1, maxAttempts: 2 } });
    expect((await client.getFile("b1")).name).toBe("a.txt");
    expect(service.requests).toHaveLength(2);
    const once = new TuskrClient({ apiKey: KEY, baseUrl: service.url, retry: { maxAttempts: 1 } });
    answered = 0;
    const error = await once.getFile("b1").then(
      () => undefined,
      (e) => e,
    );
    expect(error).toMatchObject({ code: "NETWORK_ERROR", mayHaveBeenApplied: true });
  });

  it("values past the inputs' limits are refused before they reach state", async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ["a 257-character name", { name: "n".repeat(257) }, /name must be at most 256 characters \(got 257\)/],
      ["a 300-character tag", { tag: "t".repeat(300) }, /tag must be at most 256 characters/],
      ["metadata with 65 keys", { metadata: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i])) }, /at most 64 keys/],
      ["an expiresAt that is not a time", { expiresAt: "soon" }, /expiresAt is not a time/],
    ];
    for (const [label, extra, message] of cases) {
      const provider = await providerFor((_req, res) => json(res, 200, record("b1", extra)));
      const result = await settle(provider.read("b1", { ...recorded, name: "a.txt", tag: "t", metadata: {} }));
      expect(result.ok, label).toBe(false);
      if (!result.ok) {
        expect(result.error.code, label).toBe("INVALID_RESPONSE");
        expect(result.error.message, label).toMatch(message);
      }
      note(`GET answers ${label}`, result.ok ? "recorded" : result.error.code);
      await service?.close();
      service = undefined;
    }
  });

  it("an upload answered with the record of other content (another size) is INVALID_RESPONSE, and no resource is created", async () => {
    const uploadRecord = { id: "f1", blob_id: "b-other", url: "https://cdn.example/b-other", size: 999, mime_type: "text/plain", tag: null, category: null };
    const provider = await providerFor((_req, res) =>
      json(res, 201, { ...uploadRecord, created_at: "2026-11-22T00:00:00.000Z", expires_at: "2026-11-23T00:00:00.000Z" }),
    );
    const source = { [SIG_KEY]: ASSET_SIG, text: "twelve bytes" };
    const result = await settle(provider.create({ source, retentionEpochs: 1, __urn: "urn:pulumi:dev::p::pulumi-nodejs:dynamic/tuskr:StoredFile::h" }));
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe("INVALID_RESPONSE");
      expect(result.error.message).toMatch(/the record of a file of 999 bytes, not the 12 bytes sent/);
      expect(result.error.properties).toBeUndefined();
    }
    note("upload answered with another content's record", result.ok ? "taken as this upload's" : `${result.error.code}, nothing recorded`);
  });

  it("an upload answered with another file's blobId (same size, a fresh answer) is INVALID_RESPONSE once read back: recorded as unconfirmed, never PATCHed, renewed or uploaded again", async () => {
    const now = new Date();
    const provider = await providerFor((req, res) => {
      if (req.method === "POST" && req.url === "/v1/files") {
        const expires = new Date(now.getTime() + 86_400_000).toISOString();
        return json(res, 201, {
          id: "f1",
          blob_id: "b-other",
          url: "https://cdn.example/b-other",
          size: 12,
          created_at: now.toISOString(),
          expires_at: expires,
        });
      }
      // The service's own record of that blobId: another file, uploaded weeks ago.
      if (req.method === "GET" && req.url === "/v1/files/b-other") return json(res, 200, record("b-other", { name: "other.txt", size: 12 }));
      json(res, 500, { error: { code: "INTERNAL", message: "not expected" } });
    });
    const source = { [SIG_KEY]: ASSET_SIG, text: "twelve bytes" };
    const urn = "urn:pulumi:dev::p::pulumi-nodejs:dynamic/tuskr:StoredFile::h";
    const result = await settle(provider.create({ source, name: "mine.txt", tag: "new", metadata: { a: 1 }, retentionEpochs: 3, __urn: urn }));
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe("INVALID_RESPONSE");
      expect(result.error.message).toMatch(/created at 2026-11-01T00:00:00.000Z, not at .* as its answer said: not taken as this upload's/);
      // Bought perhaps, so recorded: as unconfirmed, with none of the declared values, which no request set.
      expect(result.error.properties).toMatchObject({ blobId: "b-other", __unconfirmedUpload: { created: true, size: 12, filename: "mine.txt" } });
      expect(result.error.properties).not.toHaveProperty("tag");
      // The next up checks the entry again before anything else, and refuses it again: nothing sent on it, nothing uploaded.
      const next = await settle(
        provider.update("b-other", result.error.properties as Record<string, unknown>, {
          source,
          name: "mine.txt",
          tag: "new",
          metadata: { a: 1 },
          retentionEpochs: 3,
          __urn: urn,
        }),
      );
      expect(next.ok).toBe(false);
      if (!next.ok) expect(next.error.message).toMatch(/checking an earlier upload.*not taken as this upload's/);
    }
    expect(service!.requests.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /v1/files", "GET /v1/files/b-other", "GET /v1/files/b-other"]);
    note("upload answered with another file's blobId", result.ok ? "taken as this upload's" : `${result.error.code} on read-back, recorded as unconfirmed`);
  });

  it("an upload answered 'already stored' (200) with a blobId the service does not have is INVALID_RESPONSE: not uploaded again", async () => {
    const ghost = "A".repeat(43);
    const provider = await providerFor((req, res) => {
      if (req.method === "POST") {
        const now = new Date();
        return json(res, 200, {
          id: "f1",
          blob_id: ghost,
          url: "https://cdn.example/g",
          size: 12,
          created_at: now.toISOString(),
          expires_at: new Date(now.getTime() + 86_400_000).toISOString(),
        });
      }
      json(res, 404, { error: { code: "NOT_FOUND", message: "no such file", details: { blobId: ghost } } });
    });
    const source = { [SIG_KEY]: ASSET_SIG, text: "twelve bytes" };
    const result = await settle(provider.create({ source, retentionEpochs: 5, __urn: "urn:pulumi:dev::p::pulumi-nodejs:dynamic/tuskr:StoredFile::g" }));
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe("INVALID_RESPONSE");
      expect(result.error.message).toMatch(/names a file the service does not have/);
    }
    expect(service!.requests.filter((r) => r.method === "POST")).toHaveLength(1);
  });

  it("an upload answered with a blobId the service does not have is INVALID_RESPONSE, not a file gone", async () => {
    const now = new Date();
    const provider = await providerFor((req, res) => {
      if (req.method === "POST") {
        const expires = new Date(now.getTime() + 86_400_000).toISOString();
        return json(res, 201, { id: "f1", blob_id: "b-none", url: "https://cdn.example/b-none", size: 12, created_at: now.toISOString(), expires_at: expires });
      }
      json(res, 404, { error: { code: "NOT_FOUND", message: "no such file", details: { blobId: "b-none" } } });
    });
    const source = { [SIG_KEY]: ASSET_SIG, text: "twelve bytes" };
    const result = await settle(provider.create({ source, __urn: "urn:pulumi:dev::p::pulumi-nodejs:dynamic/tuskr:StoredFile::n" }));
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe("INVALID_RESPONSE");
      expect(result.error.message).toMatch(/names a file the service does not have/);
    }
    expect(service!.requests.filter((r) => r.method === "POST")).toHaveLength(1);
  });
});

describe("deadlines", () => {
  /** Headers at once, then a byte every 100 ms, forever: never idle long enough for an idle timeout. */
  const trickle: Parameters<typeof hostileService>[0] = (_req, res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.write("{");
    const timer = setInterval(() => res.write(" "), 100);
    res.on("close", () => clearInterval(timer));
  };
  const within = <T>(ms: number, p: Promise<T>) =>
    Promise.race([
      p.then(
        () => "settled",
        () => "settled",
      ),
      new Promise<string>((r) => setTimeout(() => r("still waiting"), ms)),
    ]);

  it("a body that trickles after the headers is cut at the request's deadline (tuskr:timeoutMs covers the body)", async () => {
    service = await hostileService(trickle);
    const client = new TuskrClient({ apiKey: KEY, baseUrl: service.url, timeoutMs: 500, retry: { maxAttempts: 1 } });
    const started = Date.now();
    const error = await client.getFile("b1").then(
      () => undefined,
      (e) => e,
    );
    const seconds = (Date.now() - started) / 1000;
    expect(error?.code).toBe("TIMEOUT");
    expect(error?.message).toMatch(/no complete answer within 500 ms/);
    expect(seconds).toBeLessThan(3);
    note("headers, then a body that trickles forever", `TIMEOUT after ${seconds.toFixed(1)} s (timeoutMs 500)`);
  });

  it("an operation's total budget holds while a request is in flight", async () => {
    service = await hostileService(trickle);
    const client = new TuskrClient({ apiKey: KEY, baseUrl: service.url, timeoutMs: 60_000, retry: { maxTotalMs: 800 } });
    const started = Date.now();
    expect(await within(5_000, client.getFile("b1"))).toBe("settled");
    expect((Date.now() - started) / 1000).toBeLessThan(3);
  });

  it("through the provider: an up against such a service fails in bounded time instead of hanging", async () => {
    const provider = await providerFor(trickle, { "tuskr:timeoutMs": "500" });
    expect(await within(10_000, provider.read("b1", recorded))).toBe("settled");
  });
});

describe("the key never crosses the network in clear", () => {
  const check = async (baseUrl: string, extra: Record<string, string> = {}) => {
    const provider = await configuredProvider({ url: baseUrl }, { "tuskr:apiKey": KEY, ...extra });
    return provider.check({}, { blobId: "b1" }).then(
      () => "ok",
      (e: Error) => e.message,
    );
  };

  it("plain http to another host is refused at check (the preview), naming tuskr:baseUrl and the way out", async () => {
    const refused = await check("http://files.example.com");
    expect(refused).toMatch(/tuskr:baseUrl: http:\/\/files\.example\.com is plain http to a host other than this machine: the API key would be sent in clear/);
    expect(refused).toMatch(/tuskr:allowInsecureHttp/);
    expect(refused).not.toContain(KEY);
  });

  it("https, loopback, or an explicit opt-in are accepted", async () => {
    for (const url of ["https://api.tuskr.dev", "http://127.0.0.1:4010", "http://localhost:4010", "http://[::1]:4010"]) expect(await check(url)).toBe("ok");
    expect(await check("http://files.example.com", { "tuskr:allowInsecureHttp": "true" })).toBe("ok");
  });
});

describe("the HTTP client: what it takes, refuses and lets go of", () => {
  /** A raw server: each connection goes to `onConnection`, which writes bytes of its own. */
  async function rawServer(onConnection: (socket: net.Socket) => void) {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => undefined);
      onConnection(socket);
    });
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return {
      url,
      sockets,
      close: () =>
        new Promise<void>((ok) => {
          for (const socket of sockets) socket.destroy();
          server.close(() => ok());
        }),
    };
  }

  /** A 4 MiB upload to a server that answers `status` with `body` on the body's first bytes; what the upload threw. */
  async function uploadAnsweredEarly(status: string, body: string) {
    const server = await rawServer((socket) =>
      socket.once("data", () => socket.write(`HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)),
    );
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-early-"));
    try {
      const file = path.join(dir, "big.bin");
      fs.writeFileSync(file, Buffer.alloc(4 * 1024 * 1024, 1));
      const client = new TuskrClient({ apiKey: KEY, baseUrl: server.url, retry: { maxAttempts: 1 } });
      const error = await client.uploadFile({ path: file, filename: "big.bin" }, {}, { idempotencyKey: "k" }).then(
        () => undefined,
        (e) => e,
      );
      // The server holds its end open: only the client can close it.
      await new Promise((ok) => setTimeout(ok, 300));
      return { error, open: server.sockets.size };
    } finally {
      await server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  it("a 101 Switching Protocols answer, which nothing here takes up, fails within the deadline as a network failure", async () => {
    const raw = await rawServer((socket) =>
      socket.once("data", () => socket.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n")),
    );
    try {
      // A deadline far off: failing well before it is failing on the answer, not waiting for the deadline.
      const client = new TuskrClient({ apiKey: KEY, baseUrl: raw.url, timeoutMs: 20_000, retry: { maxAttempts: 1 } });
      const started = Date.now();
      const error = await client.getFile("b1").then(
        () => undefined,
        (e) => e,
      );
      expect(error).toMatchObject({ code: "NETWORK_ERROR", retryable: true });
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await raw.close();
    }
  });

  it("an upload answered 413 before its body was read: the client lets go of the connection and the file", async () => {
    const { error, open } = await uploadAnsweredEarly("413 Payload Too Large", JSON.stringify({ error: { code: "PAYLOAD_TOO_LARGE", message: "too big" } }));
    expect(error).toMatchObject({ code: "PAYLOAD_TOO_LARGE", status: 413 });
    expect(open).toBe(0);
  });

  it("an answer compressed unasked or led by a byte order mark is read as its JSON", async () => {
    const body = JSON.stringify(record("b1"));
    for (const [headers, bytes] of [
      [{ "Content-Encoding": "gzip" }, zlib.gzipSync(body)],
      [{ "Content-Encoding": "br" }, zlib.brotliCompressSync(body)],
      [{}, Buffer.from(`\ufeff${body}`)],
    ] as const) {
      service = await hostileService((_req, res) => {
        res.writeHead(200, { "Content-Type": "application/json", ...headers });
        res.end(bytes);
      });
      const client = new TuskrClient({ apiKey: KEY, baseUrl: service.url, retry: { maxAttempts: 1 } });
      expect((await client.getFile("b1")).name).toBe("a.txt");
      await service.close();
      service = undefined;
    }
  });

  it("an encoding header on a refusal or an empty answer does not hide what it says; one not decoded here is named", async () => {
    let calls = 0;
    service = await hostileService((req, res) => {
      calls++;
      if (req.method === "PATCH") {
        res.writeHead(204, { "Content-Encoding": "gzip" });
        return res.end();
      }
      if (req.url?.endsWith("/b503")) {
        res.writeHead(503, { "Content-Type": "text/plain", "Content-Encoding": "gzip" });
        return res.end("down for maintenance");
      }
      res.writeHead(200, { "Content-Type": "application/json", "Content-Encoding": "zstd" });
      res.end(JSON.stringify(record("b1")));
    });
    const client = new TuskrClient({ apiKey: KEY, baseUrl: service.url, retry: { minDelayMs: 1, maxDelayMs: 1, maxAttempts: 2 } });
    expect(await client.updateFile("b1", { tag: "t" })).toBeUndefined();
    calls = 0;
    await expect(client.getFile("b503")).rejects.toMatchObject({ status: 503, retryable: true });
    expect(calls).toBe(2);
    const unknown = await client.getFile("b1").then(
      () => undefined,
      (e) => e,
    );
    expect(unknown).toMatchObject({ code: "INVALID_RESPONSE" });
    expect(unknown.message).toMatch(/Content-Encoding of "zstd", which the client does not decode/);
    expect(unknown.message).not.toMatch(/may not be the service's API/);
  });

  it("an upload accepted before its body was sent whole is not taken as stored", async () => {
    const { error, open } = await uploadAnsweredEarly("201 Created", JSON.stringify(record("b1", { size: 4 * 1024 * 1024 })));
    expect(error?.message).toMatch(/answered before the upload's body was sent whole/);
    expect(open).toBe(0);
  });

  it("a compressed answer that unpacks past the cap is refused at the cap", async () => {
    service = await hostileService((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json", "Content-Encoding": "gzip" });
      res.end(zlib.gzipSync(JSON.stringify(record("b1", { name: "n".repeat(5 * 1024 * 1024) }))));
    });
    const client = new TuskrClient({ apiKey: KEY, baseUrl: service.url, retry: { maxAttempts: 1 } });
    await expect(client.getFile("b1")).rejects.toMatchObject({ code: "INVALID_RESPONSE", message: expect.stringMatching(/larger than 262144 bytes/) });
  });

  it("a key read from a file with its line break is sent without it; one holding a control character is refused, unsaid, before any request", async () => {
    let authorization: string | undefined;
    const svc = await hostileService((req, res) => {
      authorization = req.headers.authorization;
      json(res, 200, record("b1"));
    });
    service = svc;
    const fromFile = new TuskrClient({ apiKey: `  ${KEY}\r\n`, baseUrl: svc.url, retry: { maxAttempts: 1 } });
    expect((await fromFile.getFile("b1")).blobId).toBe("b1");
    expect(authorization).toBe(`Bearer ${KEY}`);
    const broken = `${KEY.slice(0, 8)}\u0007${KEY.slice(8)}`;
    expect(() => new TuskrClient({ apiKey: broken, baseUrl: svc.url })).toThrow(/^tuskr:apiKey holds a control character/);
    const provider = await configuredProvider(svc, { "tuskr:apiKey": broken });
    const refused = await provider.check({}, { blobId: "b1" }).then(
      () => "ok",
      (e: Error) => e.message,
    );
    expect(refused).toMatch(/tuskr:apiKey holds a control character or one past ASCII/);
    expect(refused).not.toContain(KEY.slice(8, 16));
    expect(svc.requests).toHaveLength(1);
  });
});

describe("bounded retries: a floor under every wait, a cap on every loop", () => {
  it("a service answering 429 with Retry-After: 0 forever gets a bounded number of requests, each after the floor", async () => {
    service = await hostileService((_req, res) => json(res, 429, { error: { code: "RATE_LIMIT_EXCEEDED", message: "slow down" } }, { "Retry-After": "0" }));
    const client = new TuskrClient({ apiKey: KEY, baseUrl: service.url });
    const started = Date.now();
    await expect(client.getFile("b1")).rejects.toMatchObject({ status: 429 });
    const elapsed = Date.now() - started;
    expect(service.requests).toHaveLength(DEFAULT_RETRY_POLICY.maxRateLimitedAttempts);
    expect(elapsed).toBeGreaterThanOrEqual((DEFAULT_RETRY_POLICY.maxRateLimitedAttempts - 1) * DEFAULT_RETRY_POLICY.minDelayMs);
    note("429 with Retry-After: 0, forever", `failed after ${service.requests.length} requests in ${elapsed} ms`);
  });

  it("a service failing with 503 and Retry-After: 0 gets maxAttempts requests, each after the floor", async () => {
    service = await hostileService((_req, res) => json(res, 503, { error: { code: "SERVICE_UNAVAILABLE", message: "down" } }, { "Retry-After": "0" }));
    const client = new TuskrClient({ apiKey: KEY, baseUrl: service.url });
    const started = Date.now();
    await expect(client.getFile("b1")).rejects.toMatchObject({ status: 503 });
    expect(service.requests).toHaveLength(DEFAULT_RETRY_POLICY.maxAttempts);
    expect(Date.now() - started).toBeGreaterThanOrEqual((DEFAULT_RETRY_POLICY.maxAttempts - 1) * DEFAULT_RETRY_POLICY.minDelayMs);
  });
});

describe("an answer's ids and times are checked before anything acts on them", () => {
  const source = { [SIG_KEY]: ASSET_SIG, text: "twelve bytes" };
  const urn = "urn:pulumi:dev::p::pulumi-nodejs:dynamic/tuskr:StoredFile::h";
  const day = 86_400_000;
  const uploadAnswer = (extra: Record<string, unknown>) => ({
    id: "f1",
    blob_id: "b-new",
    url: "https://cdn.example/b-new",
    size: 12,
    mime_type: "text/plain",
    tag: null,
    category: null,
    created_at: new Date().toISOString(),
    expires_at: new Date(Date.now() + day).toISOString(),
    ...extra,
  });
  it.each([
    ["a blob_id of '..'", { blob_id: ".." }, /blob_id must not be '\.' or '\.\.'/],
    ["an empty blob_id", { blob_id: "" }, /blob_id must not be empty/],
    ["a blob_id of 200,000 characters", { blob_id: "b".repeat(200_000) }, /blob_id must be at most 512 characters \(got 200000\)/],
    [
      "an expiry in 1970 and a creation in 3000",
      { created_at: "3000-01-01T00:00:00.000Z", expires_at: "1970-01-02T00:00:00.000Z" },
      /createdAt .* is after expiresAt/,
    ],
    [
      "an expiry before the request",
      { created_at: "2019-12-01T00:00:00.000Z", expires_at: "2020-01-01T00:00:00.000Z" },
      /expiresAt 2020-01-01T00:00:00.000Z is before the request was sent/,
    ],
    // Consistent with the service's own record (read back), but past any horizon the setting allows.
    ["an expiry past the horizon", { expires_at: new Date(Date.now() + 900 * day).toISOString() }, /is past the service's horizon \(53 epochs/],
  ])("an upload answered with %s: INVALID_RESPONSE, nothing bought on it, nothing recorded", async (label, extra, message) => {
    const answer = uploadAnswer(extra);
    const provider = await providerFor((req, res) =>
      req.method === "GET"
        ? json(res, 200, record(String(answer.blob_id), { name: "file.txt", size: 12, createdAt: answer.created_at, expiresAt: answer.expires_at }))
        : json(res, 201, answer),
    );
    const result = await settle(provider.create({ source, retentionEpochs: 1, __urn: urn }));
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe("INVALID_RESPONSE");
      expect(result.error.message).toMatch(message);
      expect(result.error.properties).toBeUndefined();
    }
    // The answer's own checks stop it at once; one consistent with the record is read back first.
    expect(service?.requests.map((r) => r.method)).toEqual(label === "an expiry past the horizon" ? ["POST", "GET"] : ["POST"]);
    note(`upload answered with ${label}`, result.ok ? "recorded" : `${result.error.code}, nothing bought on it`);
  });

  it("a renew answered with an expiry 900 days ahead: INVALID_RESPONSE, nothing new recorded", async () => {
    const provider = await providerFor((req, res) =>
      json(res, 200, record("b1", { expiresAt: req.method === "GET" ? recorded.expiresAt : new Date(Date.now() + 900 * day).toISOString() })),
    );
    const result = await settle(provider.update("b1", recorded, { blobId: "b1", retentionEpochs: 4 }));
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe("INVALID_RESPONSE");
      expect(result.error.message).toMatch(/past the service's horizon/);
      // Only what the read before it said may be recorded, never the answer.
      expect(result.error.properties?.expiresAt ?? recorded.expiresAt).toBe(recorded.expiresAt);
    }
    note("renew answered with an expiry 900 days ahead", result.ok ? "recorded" : `${result.error.code}, nothing recorded`);
  });
});
