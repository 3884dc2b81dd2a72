import * as http from "node:http";
import { createHash } from "node:crypto";
import type { AddressInfo } from "node:net";
import { afterEach, expect, it, vi } from "vitest";
import { startEmulator, type Emulator } from "../../../emulator";
import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { configuredProvider } from "../../helpers/provider-fixture";
import { EngineStack } from "../../helpers/provider-driver";

const fast = { retry: { baseDelayMs: 1, maxDelayMs: 5 } };
const textAsset = (text: string) => ({ [SIG_KEY]: ASSET_SIG, text, hash: createHash("sha256").update(text).digest("hex") });
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
  vi.restoreAllMocks();
});

/** While `armed`, a renew is answered 503 unapplied, and meanwhile another stack's renew of `other` epochs lands on the same file. */
async function racingProxy(target: string, other: number, state: { armed: number }) {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string" && k !== "host" && k !== "content-length") headers[k] = v;
      const path = req.url ?? "/";
      const body = chunks.length ? Buffer.concat(chunks) : undefined;
      if (req.method === "POST" && path.endsWith("/renew") && state.armed > 0) {
        state.armed--;
        const { "idempotency-key": _k, ...h2 } = headers;
        await fetch(`${target}${path}`, { method: "POST", headers: h2, body: JSON.stringify({ epochs: other }) });
        res.writeHead(503, { "content-type": "application/json" });
        return res.end(JSON.stringify({ error: { code: "SERVICE_UNAVAILABLE", message: "busy" } }));
      }
      const a = await fetch(`${target}${path}`, { method: req.method, headers, body });
      const text = await a.text();
      const h: Record<string, string> = {};
      a.headers.forEach((v, k) => {
        if (!["content-length", "content-encoding", "transfer-encoding", "connection"].includes(k)) h[k] = v;
      });
      res.writeHead(a.status, h).end(text.split(target).join(own));
    });
  });
  let own = "";
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  own = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  closers.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url: own };
}

for (const idempotency of ["ignore", "honour"] as const)
  for (const other of [1, 5])
    it(`retentionEpochs 2 -> 7: our renew of 5 fails 503 unapplied while another stack buys ${other} (keys ${idempotency}): the file still reaches 7`, async () => {
      const emu: Emulator = await startEmulator({ port: 0, idempotency });
      closers.push(() => emu.close());
      const race = { armed: 0 };
      const svc = await racingProxy(emu.url, other, race);
      vi.spyOn(console, "log").mockImplementation(() => undefined);
      const stack = new EngineStack(() => configuredProvider(svc, { "tuskr:epochSeconds": "86400" }, fast));
      const src = textAsset(`r ${Math.random()}`);
      const start = emu.currentEpoch();
      await stack.up({ f: { source: src, name: "f.txt", retentionEpochs: 2 } });
      race.armed = 1;
      const up2 = await stack.up({ f: { source: src, name: "f.txt", retentionEpochs: 7 } });
      await stack.up({ f: { source: src, name: "f.txt", retentionEpochs: 7 } });
      const id = stack.get("f")!.id;
      const ff = emu.files().find((x) => x.blobId === id)!;
      // The other stack's move is not taken as ours: the outcome stays unknown, the next up buys what is missing.
      if (other === 1) expect(up2.steps.map((s) => s.error ?? "").join(" ")).toMatch(/RENEW_OUTCOME_UNKNOWN|may or may not have been applied/);
      expect(ff.endEpoch - start).toBeGreaterThanOrEqual(7);
    });
