import * as http from "node:http";
import { createHash } from "node:crypto";
import type { AddressInfo } from "node:net";
import { afterEach, expect, it, vi } from "vitest";
import { startEmulator, type Emulator } from "../../../emulator";
import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { configuredProvider } from "../../helpers/provider-fixture";
import { EngineStack } from "../../helpers/provider-driver";

const textAsset = (text: string) => ({ [SIG_KEY]: ASSET_SIG, text, hash: createHash("sha256").update(text).digest("hex") });
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
  vi.restoreAllMocks();
});

async function gateway(target: string, echo: boolean, dropUploadNamed: () => string | undefined) {
  let dropped = 0;
  let own = "";
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string" && k !== "host" && k !== "content-length") headers[k] = v;
      const p = req.url ?? "/";
      const body = chunks.length ? Buffer.concat(chunks) : undefined;
      const a = await fetch(`${target}${p}`, { method: req.method, headers, body });
      const text = await a.text();
      const name = dropUploadNamed();
      if (req.method === "POST" && p === "/v1/files" && name && body?.includes(name) && dropped === 0) {
        dropped++;
        return req.socket.destroy();
      }
      const h: Record<string, string> = {};
      a.headers.forEach((v, k) => {
        if (!["content-length", "content-encoding", "transfer-encoding", "connection"].includes(k)) h[k] = v;
      });
      if (echo && headers["idempotency-key"] && a.status < 300) h["idempotency-key"] = headers["idempotency-key"];
      res.writeHead(a.status, h).end(text.split(target).join(own));
    });
  });
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

// A service that ignores keys and sells a second upload of stored bytes: the next `up` still buys
// again (there is no id to read back), so this checks only that the run itself never resends.
for (const echo of [false, true])
  it(`duplicateUpload purchase, keys ignored${echo ? ", a gateway echoing every key" : ""}: an upload applied then dropped is not resent in the run`, async () => {
    const emu: Emulator = await startEmulator({ port: 0, idempotency: "ignore", duplicateUpload: "purchase" });
    closers.push(() => emu.close());
    let drop: string | undefined;
    const gw = await gateway(emu.url, echo, () => drop);
    vi.spyOn(console, "log").mockImplementation(() => undefined);
    const stack = new EngineStack(() => configuredProvider(gw, { "tuskr:epochSeconds": "86400" }, { retry: { baseDelayMs: 1, maxDelayMs: 5 } }));
    const decl = {
      a: { source: textAsset(`A ${Math.random()}`), name: "a.txt", retentionEpochs: 5 },
      b: { source: textAsset(`B ${Math.random()}`), name: "bbbb-file.txt", retentionEpochs: 5 },
    };
    drop = "bbbb-file.txt";
    const run = await stack.up(decl);
    const b = run.steps.find((s) => s.name === "b")!;
    expect(b.outcome).toBe("failed");
    expect(b.error).toMatch(/may or may not have been applied/);
    expect(emu.requests().filter((x) => x.route === "upload")).toHaveLength(2);
  });
