import { createHash } from "node:crypto";
import { afterEach, expect, it, vi } from "vitest";
import { startEmulator, type Emulator } from "../../../emulator";
import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { rewritingProxy } from "../../helpers/hostile-service";
import { configuredProvider } from "../../helpers/provider-fixture";
import { EngineStack } from "../../helpers/provider-driver";

const textAsset = (text: string) => ({ [SIG_KEY]: ASSET_SIG, text, hash: createHash("sha256").update(text).digest("hex") });
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
  vi.restoreAllMocks();
});

/** A gateway that, if `echo`, echoes a 2xx request's Idempotency-Key, and drops the first upload named `dropUploadNamed()` once it is applied. */
async function gateway(target: string, echo: boolean, dropUploadNamed: () => string | undefined) {
  let dropped = 0;
  const gw = await rewritingProxy(target, {
    headers: (_m, _p, status, { headers }) =>
      echo && headers["idempotency-key"] && status < 300 ? { "idempotency-key": headers["idempotency-key"] } : undefined,
    drop: (method, path, { body }) => {
      const name = dropUploadNamed();
      if (method !== "POST" || path !== "/v1/files" || !name || !body?.includes(name) || dropped > 0) return false;
      dropped++;
      return true;
    },
  });
  closers.push(() => gw.close());
  return gw;
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
