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
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text), ...headers });
  res.end(text);
}
