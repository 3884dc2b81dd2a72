#!/usr/bin/env node
// The load generator of `npm run bench`: runs in its own process (so it does not share an event
// loop with the emulator it measures), sends one kind of request with a fixed number in flight,
// over keep-alive loopback connections, until a request count or a time limit is reached.
// Input: one JSON argument. Output: one JSON line on stdout.
//
//   { url, apiKey, route: "get"|"patch"|"renew", blobIds: [...], concurrency, maxRequests, maxSeconds }
import * as http from "node:http";
import { performance } from "node:perf_hooks";

const spec = JSON.parse(process.argv[2]);
const { url, apiKey, route, blobIds, concurrency, maxRequests, maxSeconds } = spec;
const base = new URL(url);
if (base.hostname !== "127.0.0.1" && base.hostname !== "localhost" && base.hostname !== "[::1]") {
  throw new Error(`load: loopback only, got ${base.hostname}`);
}
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
const runTag = process.pid.toString(36);

/** Request number i: which file, and what to send. */
function requestFor(i) {
  const blobId = blobIds[i % blobIds.length];
  const file = `/v1/files/${encodeURIComponent(blobId)}`;
  const headers = { authorization: `Bearer ${apiKey}`, accept: "application/json" };
  if (route === "get") return { method: "GET", path: file, headers };
  if (route === "patch") {
    // Every PATCH really changes the tag (no no-op shortcut on the server).
    return { method: "PATCH", path: file, headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify({ tag: `t${i}` }) };
  }
  if (route === "renew") {
    // One epoch each, a fresh idempotency key each (as distinct purchases by the provider are);
    // the runner uploads enough files that none goes past the 53-epoch horizon.
    return {
      method: "POST",
      path: `${file}/renew`,
      headers: { ...headers, "content-type": "application/json", "idempotency-key": `bench-${runTag}-${i}` },
      body: JSON.stringify({ epochs: 1 }),
    };
  }
  throw new Error(`load: unknown route ${route}`);
}

function send(i) {
  const r = requestFor(i);
  return new Promise((resolve) => {
    const started = performance.now();
    const req = http.request({ host: base.hostname, port: base.port, agent, method: r.method, path: r.path, headers: r.headers }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode, ms: performance.now() - started }));
      res.on("error", () => resolve({ status: 0, ms: performance.now() - started }));
    });
    req.on("error", () => resolve({ status: 0, ms: performance.now() - started }));
    req.end(r.body);
  });
}

const latencies = [];
const statuses = {};
let next = 0;
const started = performance.now();
const deadline = started + maxSeconds * 1000;

async function worker() {
  while (next < maxRequests && performance.now() < deadline) {
    const { status, ms } = await send(next++);
    latencies.push(ms);
    statuses[status] = (statuses[status] ?? 0) + 1;
  }
}
await Promise.all(Array.from({ length: concurrency }, worker));
const seconds = (performance.now() - started) / 1000;
agent.destroy();

latencies.sort((a, b) => a - b);
const pct = (p) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] : 0);
const ok = Object.entries(statuses).reduce((sum, [s, c]) => sum + (s >= 200 && s < 300 ? c : 0), 0);
process.stdout.write(
  `${JSON.stringify({
    route,
    concurrency,
    requests: latencies.length,
    ok,
    statuses,
    seconds,
    rps: latencies.length / seconds,
    p50Ms: pct(50),
    p99Ms: pct(99),
    stoppedBy: latencies.length >= maxRequests ? "count" : "time",
  })}\n`,
);
