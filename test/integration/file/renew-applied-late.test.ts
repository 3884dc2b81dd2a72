import { createHash } from "node:crypto";
import { afterEach, expect, it, vi } from "vitest";
import { type Emulator, startEmulator } from "../../../emulator";
import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { STORED_FILE_TYPES, formatUrn } from "../../../provider/engine/urns";
import { type HostileService, rewritingProxy } from "../../helpers/hostile-service";
import { configuredProvider } from "../../helpers/provider-fixture";

/**
 * A renew the service answers with a 503 at once and applies a moment later (a commit still
 * landing). A read-back right after shows nothing moved, so only a key the service is known to
 * honour makes a resend safe; otherwise the run stops and the next `up` buys what is missing.
 */

const LATE_MS = 400;
const urn = formatUrn({ stack: "dev", project: "proj", type: STORED_FILE_TYPES.dynamic, name: "late" });
const textAsset = (text: string) => ({ [SIG_KEY]: ASSET_SIG, text, hash: createHash("sha256").update(text).digest("hex") });
type Props = Record<string, unknown>;

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  vi.restoreAllMocks();
});

/** The emulator behind a proxy that answers the next `late` renews 503 and forwards each LATE_MS later, as sent. */
async function lateService(idempotency: "honour" | "ignore"): Promise<{ e: Emulator; proxy: HostileService; late: { count: number } }> {
  const e = await startEmulator({ port: 0, idempotency });
  const late = { count: 0 };
  const landing: Array<Promise<unknown>> = [];
  const proxy = await rewritingProxy(e.url, {
    answer: (method, path, request) => {
      if (!(method === "POST" && path.endsWith("/renew") && late.count > 0)) return undefined;
      late.count--;
      const sent = new Promise((resolve) => setTimeout(resolve, LATE_MS)).then(() => fetch(`${e.url}${path}`, { method, ...request }));
      landing.push(sent.catch(() => undefined));
      return [503, { error: { code: "SERVICE_UNAVAILABLE", message: "accepted, committing" } }];
    },
  });
  closers.push(async () => {
    await Promise.all(landing);
    await proxy.close();
    await e.close();
  });
  return { e, proxy, late };
}

const run = (service: { url: string }) => configuredProvider(service, {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
const renewKeys = (e: Emulator) =>
  e
    .requests()
    .filter((r) => r.route === "renew")
    .map((r) => r.idempotencyKey);
const bought = (e: Emulator, blobId: string) => e.files().find((f) => f.blobId === blobId)!.epochsBought;
const endsAhead = (e: Emulator, blobId: string) => e.files().find((f) => f.blobId === blobId)!.endEpoch - e.currentEpoch();

it("keys ignored: the renew is sent once and recorded as unconfirmed; the next up settles it by the file's record and buys only the rest", async () => {
  const { e, proxy, late } = await lateService("ignore");
  vi.spyOn(console, "log").mockImplementation(() => undefined);
  const inputs = { source: textAsset(`late ${Math.random()}`), name: "l.txt", retentionEpochs: 2, __urn: urn };
  const { id, outs } = await (await run(proxy)).create(inputs);
  late.count = 1_000;
  // No answer has shown the stack the epoch's length: the raise's first renew is of 1 epoch, to learn it.
  const failed = await (await run(proxy)).update(id, outs, { ...inputs, retentionEpochs: 6 }).then(
    () => undefined,
    (err: Error & { properties?: Props }) => err,
  );
  expect(failed?.message).toMatch(/RENEW_OUTCOME_UNKNOWN|may or may not have been applied/);
  expect(failed?.message).toMatch(/not known to honour Idempotency-Key.*Run `pulumi up` again later: it reads the file's expiry/);
  expect(proxy.requests.filter((r) => r.path.endsWith("/renew"))).toHaveLength(1);
  // What the engine records of the failed update: the renew sent, as unconfirmed.
  expect(failed?.properties).toMatchObject({ __unconfirmedRenew: { epochs: 1, fromExpiresAt: outs.expiresAt } });
  await new Promise((resolve) => setTimeout(resolve, LATE_MS + 300));
  expect(bought(e, id)).toBe(1);
  // The next `up`: the read shows the renew landed, which shows the length; the 3 still lacking, in one renew.
  late.count = 0;
  e.clearRequests();
  const provider = await run(proxy);
  const next = { ...inputs, retentionEpochs: 6 };
  const recorded = failed!.properties!;
  expect((await provider.diff(id, recorded, next)).changes).toBe(true);
  const after = (await provider.update(id, recorded, next)).outs as Props;
  expect(
    e
      .requests()
      .filter((r) => r.route === "renew")
      .map((r) => r.requestBody),
  ).toEqual([{ epochs: 3 }]);
  expect(bought(e, id)).toBe(4);
  expect(endsAhead(e, id)).toBe(6);
  expect(after.__epochMsSeen).toBe(e.epochSeconds * 1000);
  expect(after).not.toHaveProperty("__unconfirmedRenew");
});

it("keys ignored, the engine holding the state from before the failed up: the landed renew counts (as a guess, then learnt), nothing bought twice", async () => {
  const { e, proxy, late } = await lateService("ignore");
  vi.spyOn(console, "log").mockImplementation(() => undefined);
  const inputs = { source: textAsset(`late ${Math.random()}`), name: "l.txt", retentionEpochs: 2, __urn: urn };
  const { id, outs } = await (await run(proxy)).create(inputs);
  late.count = 1;
  await (await run(proxy)).update(id, outs, { ...inputs, retentionEpochs: 6 }).catch(() => undefined);
  await new Promise((resolve) => setTimeout(resolve, LATE_MS + 300));
  const provider = await run(proxy);
  const next = { ...inputs, retentionEpochs: 6 };
  if ((await provider.diff(id, outs as Props, next)).changes) await provider.update(id, outs as Props, next);
  expect(bought(e, id)).toBe(4);
  expect(endsAhead(e, id)).toBe(6);
});

it("keys honoured, but only echoed in this run (no replay seen): not resent; the next up reads the renew landed and buys nothing", async () => {
  const { e, proxy, late } = await lateService("honour");
  vi.spyOn(console, "log").mockImplementation(() => undefined);
  const inputs = { source: textAsset(`late ${Math.random()}`), name: "l.txt", retentionEpochs: 2, __urn: urn };
  const provider = await run(proxy);
  const { id, outs } = await provider.create(inputs);
  const raised = (await provider.update(id, outs, { ...inputs, retentionEpochs: 3 })).outs as Props;
  late.count = 1;
  // An echoed key is no proof the service honours it (a gateway may echo it): the renew is not sent again.
  const failed = await provider.update(id, raised, { ...inputs, retentionEpochs: 6 }).then(
    () => undefined,
    (err: Error) => err.message,
  );
  expect(failed).toMatch(/RENEW_OUTCOME_UNKNOWN|may or may not have been applied/);
  expect(renewKeys(e)).toHaveLength(1);
  await new Promise((resolve) => setTimeout(resolve, LATE_MS + 300));
  expect(bought(e, id)).toBe(1 + 3);
  const next = await run(proxy);
  const declared = { ...inputs, retentionEpochs: 6 };
  const diff = await next.diff(id, raised, declared);
  if (diff.changes) await next.update(id, raised, declared);
  expect(bought(e, id)).toBe(1 + 3);
  expect(endsAhead(e, id)).toBe(6);
});
