import { createHash } from "node:crypto";
import { afterEach, expect, it, vi } from "vitest";
import { startEmulator, type Emulator } from "../../../emulator";
import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { rewritingProxy } from "../../helpers/hostile-service";
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
  const svc = await rewritingProxy(target, {
    answer: async (method, path, { headers }) => {
      if (method !== "POST" || !path.endsWith("/renew") || state.armed <= 0) return undefined;
      state.armed--;
      // The other stack sends its own request: no key of ours, so a service honouring keys applies it.
      const { "idempotency-key": _k, ...h2 } = headers;
      await fetch(`${target}${path}`, { method: "POST", headers: h2, body: JSON.stringify({ epochs: other }) });
      return [503, { error: { code: "SERVICE_UNAVAILABLE", message: "busy" } }];
    },
  });
  closers.push(() => svc.close());
  return svc;
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
