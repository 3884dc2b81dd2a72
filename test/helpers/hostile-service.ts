import * as http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A service that misbehaves on purpose, on loopback: each request goes to `answer`, which writes
 * whatever it likes (another file's record, a huge body, a body that never ends). Connections
 * are cut on close, so a handler that never finishes cannot keep a test waiting.
 */
export interface HostileService {
  url: string;
  requests: Array<{ method: string; path: string }>;
  close(): Promise<void>;
}

export async function hostileService(answer: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<HostileService> {
  const requests: HostileService["requests"] = [];
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? "GET", path: req.url ?? "/" });
    req.resume();
    req.on("end", () => answer(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A file record as the service documents it, for `blobId`, with `extra` fields over it. */
export function record(blobId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    blobId,
    url: `https://cdn.example/${blobId}`,
    name: "a.txt",
    tag: "t",
    metadata: {},
    size: 1,
    createdAt: "2026-11-01T00:00:00.000Z",
    expiresAt: "2026-12-01T00:00:00.000Z",
    ...extra,
  };
}

export function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  // No body at all (a 204): nothing to write.
  if (body === undefined) return void res.writeHead(status, headers).end();
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** What a rewriting proxy does with one request: answer it itself, or let the emulator answer and rewrite that. */
export interface Rewrite {
  /**
   * Answer without the emulator: [status, JSON body]. `request` is what was sent (headers without host and length), to forward later;
   * it may be a promise, so a lie can first send the emulator something else (another stack's move racing ours).
   */
  answer?(method: string, path: string, request: ProxiedRequest): [number, unknown] | undefined | Promise<[number, unknown] | undefined>;
  /** The emulator's JSON answer, changed (the proxy's own origin already stands for the emulator's in every url). */
  json?(method: string, path: string, status: number, body: unknown): unknown;
  /** Headers set on the emulator's answer, over its own; `request` lets a gateway echo what was sent (an Idempotency-Key). */
  headers?(method: string, path: string, status: number, request: ProxiedRequest): Record<string, string> | undefined;
  /** True to cut the connection once the emulator has answered: the request was applied, but the caller never hears so. */
  drop?(method: string, path: string, request: ProxiedRequest): boolean;
}

/** A request as the proxy received it: headers without host and length, and the body if there was one. */
interface ProxiedRequest {
  headers: Record<string, string>;
  body?: Buffer;
}

/**
 * A loopback proxy in front of `target` (the emulator) that lies where `rewrite` says and passes
 * everything else through, headers included; the records it passes on name it as their url's host.
 */
export async function rewritingProxy(target: string, rewrite: Rewrite): Promise<HostileService> {
  let own = "";
  const requests: HostileService["requests"] = [];
  const server = http.createServer((req, res) => {
    const method = req.method ?? "GET";
    const path = req.url ?? "/";
    requests.push({ method, path });
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string" && k !== "host" && k !== "content-length") headers[k] = v;
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      const request = { headers, body };
      const lie = await rewrite.answer?.(method, path, request);
      if (lie) return json(res, lie[0], lie[1]);
      const answer = await fetch(`${target}${path}`, { method, headers, body });
      const received = Buffer.from(await answer.arrayBuffer());
      if (rewrite.drop?.(method, path, request)) return req.socket.destroy();
      const type = answer.headers.get("content-type") ?? "";
      const passOn: Record<string, string> = {};
      answer.headers.forEach((v, k) => {
        if (k !== "content-length" && k !== "content-encoding" && k !== "transfer-encoding" && k !== "connection") passOn[k] = v;
      });
      Object.assign(passOn, rewrite.headers?.(method, path, answer.status, request));
      if (!type.includes("json") || received.length === 0) return res.writeHead(answer.status, passOn).end(received);
      const parsed = JSON.parse(received.toString("utf8").split(target).join(own)) as unknown;
      const out = rewrite.json ? rewrite.json(method, path, answer.status, parsed) : parsed;
      res.writeHead(answer.status, passOn).end(JSON.stringify(out));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  own = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: own,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
