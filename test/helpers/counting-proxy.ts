import * as http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A loopback HTTP proxy in front of the emulator that sees what the client really does: how
 * many requests it has open at once, and when each one was sent and answered. It measures the
 * provider from the outside, the way a server would, through the real engine.
 */
export interface Exchange {
  method: string;
  path: string;
  sentAt: number;
  answeredAt?: number;
  status?: number;
  retryAfter?: string;
}

export interface CountingProxy {
  url: string;
  /** Most requests open at once so far. */
  peak(): number;
  exchanges(): Exchange[];
  close(): Promise<void>;
}

export async function countingProxy(target: string): Promise<CountingProxy> {
  const upstream = new URL(target);
  const exchanges: Exchange[] = [];
  let open = 0;
  let peak = 0;
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((req, res) => {
    open++;
    peak = Math.max(peak, open);
    const exchange: Exchange = { method: req.method ?? "GET", path: req.url ?? "/", sentAt: Date.now() };
    exchanges.push(exchange);
    let done = false;
    const finish = () => {
      if (!done) {
        done = true;
        open--;
      }
    };
    res.on("close", finish);
    const forward = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers, agent }, (answer) => {
      exchange.status = answer.statusCode;
      exchange.answeredAt = Date.now();
      const retryAfter = answer.headers["retry-after"];
      if (typeof retryAfter === "string") exchange.retryAfter = retryAfter;
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    // The emulator cut the connection (an injected reset): cut ours too, as a network would.
    forward.on("error", () => {
      exchange.answeredAt = Date.now();
      res.destroy();
    });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    peak: () => peak,
    exchanges: () => exchanges.slice(),
    close: () =>
      new Promise<void>((resolve) => {
        agent.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
