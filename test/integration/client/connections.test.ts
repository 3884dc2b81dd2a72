import { spawn, type ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { TuskrClient } from "../../../provider/client/client";
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
    expect(e?.message).toMatch(/no connection opened, nothing sent/);
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
