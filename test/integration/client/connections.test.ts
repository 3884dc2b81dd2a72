import { spawn, type ChildProcess } from "node:child_process";
import type { AddressInfo } from "node:net";
import * as net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { TuskrClient } from "../../../provider/client/client";
import { multipartBody } from "../../../provider/client/multipart";
import { DEFAULT_RETRY_POLICY, Semaphore } from "../../../provider/client/retry";
import { Transport } from "../../../provider/client/transport";
import { hostileService, type HostileService } from "../../helpers/hostile-service";

/**
 * The client's connections read answers and failures as Node's own HTTP client did: a repeated
 * single-value header, a header no request can carry, a connection that never opens.
 */

let service: HostileService | undefined;
let holder: ChildProcess | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
  holder?.kill("SIGKILL");
  holder = undefined;
});

const client = (baseUrl: string, extra: Partial<ConstructorParameters<typeof TuskrClient>[0]> = {}) =>
  new TuskrClient({ baseUrl, apiKey: "tsk_test_pool_key_1", retry: { maxAttempts: 1 }, ...extra });
const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as { code?: string; message?: string; retryAfterSeconds?: number; mayHaveBeenApplied?: boolean; retryable?: boolean },
  );

/** A listener on loopback whose queue is full and which never accepts: a connection to it never opens. */
async function unopenedPort(): Promise<number> {
  const script = [
    "import socket, sys, time",
    "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(0)",
    "held = []",
    "for _ in range(4):",
    "    c = socket.socket(); c.setblocking(False)",
    "    try: c.connect(s.getsockname())",
    "    except BlockingIOError: pass",
    "    held.append(c)",
    "print(s.getsockname()[1], flush=True)",
    "time.sleep(60)",
  ].join("\n");
  holder = spawn("python3", ["-c", script], { stdio: ["ignore", "pipe", "inherit"] });
  const out = holder.stdout;
  if (!out) throw new Error("python3 gave no stdout");
  return new Promise<number>((resolve, reject) => {
    out.once("data", (d: Buffer) => resolve(Number(String(d).trim())));
    holder?.once("error", reject);
  });
}

describe("client: connections", () => {
  it("a Retry-After sent twice is read as its first value, as Node's client reads it", async () => {
    service = await hostileService((_req, res) => {
      res.setHeader("Retry-After", ["5", "10"]);
      res.writeHead(503, { "Content-Type": "application/json" }).end(JSON.stringify({ error: { code: "SERVICE_UNAVAILABLE", message: "busy" } }));
    });
    const e = await failure(client(service.url).getFile("blob_1"));
    expect(e).toMatchObject({ code: "SERVICE_UNAVAILABLE", retryAfterSeconds: 5 });
  });

  it("a value's trailing spaces and tabs are not part of it, as Node's client reads them", async () => {
    // Written byte for byte: Node's own server would not send them.
    const raw = net.createServer((socket) =>
      socket.once("data", () => socket.end("HTTP/1.1 200 OK\r\nIdempotent-Replayed: true \t\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")),
    );
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
      const transport = new Transport(url, "tsk_test_pool_key_1", { ...DEFAULT_RETRY_POLICY, maxAttempts: 1 }, 5000, new Semaphore(8), Math.random);
      const sent = await transport.send("GET", "/v1/files/blob_1", { schema: z.unknown(), retryAmbiguous: true, deadline: Date.now() + 60_000 });
      expect(sent.headers["idempotent-replayed"]).toBe("true");
    } finally {
      raw.close();
    }
  });

  it("a request whose time runs out while its body is made is a timeout that sent nothing", async () => {
    service = await hostileService((_req, res) => res.writeHead(500).end());
    const transport = new Transport(service.url, "tsk_test_pool_key_1", { ...DEFAULT_RETRY_POLICY, maxAttempts: 1 }, 100, new Semaphore(8), Math.random);
    const slowForm = async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      return multipartBody({ bytes: Buffer.from("a"), filename: "f", type: "" }, []);
    };
    const e = await failure(transport.send("POST", "/v1/files", { form: slowForm, schema: z.unknown(), retryAmbiguous: false, deadline: Date.now() + 60_000 }));
    expect(e).toMatchObject({ code: "TIMEOUT", mayHaveBeenApplied: false });
    expect(e?.message).toMatch(/no complete answer within 100 ms \(tuskr:timeoutMs\); nothing sent/);
    expect(service.requests).toEqual([]);
  });

  it("a header no request can carry (a line break in a key) is refused before anything is sent", async () => {
    service = await hostileService((_req, res) => res.writeHead(500).end());
    const e = await failure(client(service.url).uploadFile({ bytes: Buffer.from("a"), filename: "f" }, {}, { idempotencyKey: "k\r\nX-Evil: 1" }));
    expect(e).toMatchObject({ code: "BAD_REQUEST", mayHaveBeenApplied: false, message: expect.stringMatching(/nothing sent/) });
    expect(service.requests).toEqual([]);
  });

  it("a connection that never opens ends at tuskr:timeoutMs as a timeout that sent nothing, never a purchase of unknown outcome", async () => {
    const port = await unopenedPort();
    const started = Date.now();
    const e = await failure(
      client(`http://127.0.0.1:${port}`, { timeoutMs: 1500 }).uploadFile({ bytes: Buffer.from("a"), filename: "f" }, { epochs: 1 }, { idempotencyKey: "k1" }),
    );
    expect(e).toMatchObject({ code: "TIMEOUT", mayHaveBeenApplied: false });
    expect(e?.message).toMatch(/no connection opened within 1500 ms \(tuskr:timeoutMs\), nothing sent/);
    expect(Date.now() - started).toBeLessThan(5000);
    // The operation's budget running out first: the same, said so.
    const budget = await failure(
      client(`http://127.0.0.1:${port}`, { timeoutMs: 20_000, retry: { maxAttempts: 1, maxTotalMs: 800 } }).uploadFile(
        { bytes: Buffer.from("a"), filename: "f" },
        { epochs: 1 },
        { idempotencyKey: "k2" },
      ),
    );
    expect(budget).toMatchObject({ code: "TIMEOUT", mayHaveBeenApplied: false });
    expect(budget?.message).toMatch(/time budget of 800 ms ran out; no connection opened, nothing sent/);
  });
});
