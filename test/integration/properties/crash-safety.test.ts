import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  DUPLICATE_UPLOAD_MODES,
  type DuplicateUploadMode,
  EMULATOR_DEFAULT_API_KEY,
  type Emulator,
  type IdempotencyMode,
  startEmulator,
} from "../../../emulator";
import { STORED_FILE_TYPES } from "../../../provider/engine/urns";
import type { StoredFileProvider } from "../../../provider/dynamic/stored-file-provider";
import { configuredProvider } from "../../helpers/provider-fixture";
import { renewFile } from "../../helpers/emulator";
import { rewritingProxy } from "../../helpers/hostile-service";

/**
 * Purchases converge on the declared end, whatever dies when. A run "dies" here with its
 * purchase applied by the service but unanswered (an `apply-then-hang` fault holds the answer
 * forever); the next run is a new provider, as after a killed `pulumi up`, given what the engine
 * would give it (the state of before, and the program as it is now). Every scenario runs against
 * each kind of service: keys honoured or ignored, and each way a second upload of stored bytes
 * may be answered. The crash tier (test/e2e/properties/crash.e2e.test.ts) does the same through the real
 * engine with SIGKILL.
 */

const URN = `urn:pulumi:dev::proj::${STORED_FILE_TYPES.dynamic}::logo`;
let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

const SERVICES = (["honour", "ignore"] as IdempotencyMode[]).flatMap((idempotency) =>
  DUPLICATE_UPLOAD_MODES.map((duplicateUpload) => ({ idempotency, duplicateUpload })),
);
const named = (s: { idempotency: IdempotencyMode; duplicateUpload: DuplicateUploadMode }) =>
  `keys ${s.idempotency === "honour" ? "honoured" : "ignored"}, duplicate upload: ${s.duplicateUpload}`;

async function start(service: { idempotency: IdempotencyMode; duplicateUpload?: DuplicateUploadMode; epochSeconds?: number }): Promise<Emulator> {
  emu = await startEmulator({ port: 0, ...service });
  return emu;
}

/** A new provider process, configured by the engine. */
/**
 * A new provider process, as each `pulumi up` starts one, on a stack that knows the service's epoch
 * (`tuskr:epochSeconds`, as `pulumi-tuskr doctor` measured it): these stories are about crashes,
 * not about learning the length (test/integration/file/service-epoch.test.ts).
 */
async function newRun(emulator: Emulator): Promise<StoredFileProvider> {
  return configuredProvider(emulator, { "tuskr:epochSeconds": String(emulator.epochSeconds) }, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
}

/** Starts `call` and returns once the service has applied a request of `route` and holds the answer: the process "dies" there. */
async function dieDuring(emulator: Emulator, route: "renew" | "upload", call: () => Promise<unknown>): Promise<void> {
  emulator.setFaults({ script: [{ route, fault: "apply-then-hang" }] });
  void call().catch(() => undefined); // never settles before the emulator closes
  await vi.waitFor(() => expect(emulator.inFlight().some((r) => r.route === route && r.held)).toBe(true), { timeout: 10_000, interval: 20 });
  emulator.setFaults({});
}

const entry = (emulator: Emulator, blobId: string) => emulator.files().find((f) => f.blobId === blobId)!;

function captureLog() {
  const spy = vi.spyOn(console, "log").mockImplementation(() => undefined);
  return { text: () => spy.mock.calls.flat().map(String).join("\n"), restore: () => spy.mockRestore() };
}

/** The engine's wire form of `new pulumi.asset.StringAsset(text)`. */
const textAsset = (text: string) => ({ [SIG_KEY]: ASSET_SIG, text });

describe("a renew killed after the service applied it", () => {
  for (const idempotency of ["honour", "ignore"] as IdempotencyMode[]) {
    it(`an adoption killed mid-renew, run again: the declared end, bought once (keys ${idempotency === "honour" ? "honoured" : "ignored"})`, async () => {
      const emu = await start({ idempotency });
      const blobId = (await emu.uploadFile({ content: `crash ${Math.random()}`, filename: "c.txt", epochs: 5 })).blobId;
      const end = emu.currentEpoch() + 9;
      const inputs = { blobId, tag: "t", retentionEpochs: 9, __urn: URN };
      await dieDuring(emu, "renew", async () => (await newRun(emu)).create(inputs));
      // The renew killed is the whole purchase: the stack knows the epoch's length.
      expect(entry(emu, blobId).endEpoch).toBe(end);
      const { outs } = await (await newRun(emu)).create(inputs);
      expect(outs.retentionEpochs).toBe(9);
      expect(entry(emu, blobId)).toMatchObject({ endEpoch: end, epochsBought: 4 });
    });

    it(`an update 2 → 5 killed mid-renew, the program then edited to 6: the next up buys the 1 missing, no manual step (keys ${idempotency === "honour" ? "honoured" : "ignored"})`, async () => {
      const emu = await start({ idempotency });
      const blobId = (await emu.uploadFile({ content: `crash ${Math.random()}`, filename: "c.txt", epochs: 1 })).blobId;
      const first = emu.currentEpoch();
      const { outs } = await (await newRun(emu)).create({ blobId, retentionEpochs: 2, __urn: URN });
      await dieDuring(emu, "renew", async () => (await newRun(emu)).update(blobId, outs, { blobId, retentionEpochs: 5 }));
      expect(entry(emu, blobId).endEpoch).toBe(first + 5);
      // The engine still holds the state of before the killed update.
      emu.clearRequests();
      const { outs: last } = await (await newRun(emu)).update(blobId, outs, { blobId, retentionEpochs: 6 });
      expect(last.retentionEpochs).toBe(6);
      expect(emu.requests().map((r) => [r.route, r.requestBody])).toEqual([
        ["get", undefined],
        ["renew", { epochs: 1 }],
      ]);
      expect(entry(emu, blobId).endEpoch).toBe(first + 6);
      // And back to 5: nothing to buy, nothing returned.
      emu.clearRequests();
      await (await newRun(emu)).update(blobId, last, { blobId, retentionEpochs: 5 });
      expect(emu.requests().filter((r) => r.route === "renew")).toEqual([]);
    });
  }

  it("a renew whose outcome the run could not learn (every read-back failed) is recorded as sent: the next run settles it by the record, never buying it again", async () => {
    // The length known (the setting) or not: then the renew in doubt is the 1 epoch bought to learn it, whose move teaches it.
    for (const known of [true, false]) {
      for (const [fault, applied] of [
        ["apply-then-drop", true],
        ["5xx", false],
      ] as const) {
        const emu = await start({ idempotency: "ignore" });
        const run = () =>
          configuredProvider(emu, known ? { "tuskr:epochSeconds": String(emu.epochSeconds) } : {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
        const blobId = (await emu.uploadFile({ content: `crash ${Math.random()}`, filename: "c.txt", epochs: 1 })).blobId;
        const end = emu.currentEpoch() + 4;
        // The adoption's GET passes; then every read-back fails too.
        emu.setFaults({
          script: [
            { route: "get", fault: "latency", latencyMs: 0 },
            { route: "renew", fault },
            { route: "get", fault: "5xx", times: 40 },
          ],
        });
        const failed = (await (await run()).create({ blobId, retentionEpochs: 4, __urn: URN }).then(
          () => undefined,
          (e) => e,
        )) as Error & { properties?: Record<string, unknown> };
        emu.setFaults({});
        expect(failed?.message).toMatch(/RENEW_OUTCOME_UNKNOWN|may or may not have been applied/);
        expect(failed.properties).toMatchObject({ __unconfirmedRenew: { epochs: known ? 3 : 1 } });
        emu.clearRequests();
        const { outs } = await (await run()).update(blobId, failed.properties!, { blobId, retentionEpochs: 4, __urn: URN });
        expect(outs.retentionEpochs).toBe(4);
        const renews = emu
          .requests()
          .filter((r) => r.route === "renew")
          .map((r) => (r.requestBody as { epochs: number }).epochs);
        if (known) expect(renews).toEqual(applied ? [] : [3]);
        // Not known: a renew that landed shows the length, so the rest is one renew; one that did not is bought again, 1 first.
        else expect(renews).toEqual(applied ? [2] : [1, 2]);
        expect(entry(emu, blobId)).toMatchObject({ endEpoch: end, epochsBought: 3 });
        expect(outs).not.toHaveProperty("__unconfirmedRenew");
        await emu.close();
      }
    }
  });

  // An echoed key is no proof (a gateway may echo what the service ignores): only a replay is.
  it("keys only echoed by an earlier renew, no replay seen: an ambiguous renew is sent once, then the failure, whatever the rounds", async () => {
    for (const maxPurchaseRounds of [1, 2]) {
      const emu = await start({ idempotency: "honour" });
      const blobId = (await emu.uploadFile({ content: `rounds ${Math.random()}`, filename: "c.txt", epochs: 1 })).blobId;
      const provider = await configuredProvider(emu, {}, { retry: { baseDelayMs: 1, maxDelayMs: 5, maxAttempts: 2, maxPurchaseRounds } });
      const { outs } = await provider.create({ blobId, retentionEpochs: 2, __urn: URN });
      emu.setFaults({ script: [{ route: "renew", fault: "5xx", times: 100 }] });
      emu.clearRequests();
      const failed = await provider.update(blobId, outs, { blobId, retentionEpochs: 4, __urn: URN }).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(failed?.message).toMatch(/may or may not have been applied/);
      expect(emu.requests().filter((r) => r.route === "renew")).toHaveLength(1);
      expect(entry(emu, blobId).epochsBought).toBe(1);
      await emu.close();
    }
  });

  // A 5xx may be a renew still being applied: without a key the service is known to honour, a
  // resend (or another round) would buy it twice.
  it("keys not known to be honoured: an ambiguous renew is sent once, read back, then the failure, whatever the retry policy", async () => {
    for (const idempotency of ["honour", "ignore"] as IdempotencyMode[]) {
      const emu = await start({ idempotency });
      const blobId = (await emu.uploadFile({ content: `once ${Math.random()}`, filename: "c.txt", epochs: 1 })).blobId;
      emu.setFaults({ script: [{ route: "renew", fault: "5xx", times: 100 }] });
      const provider = await configuredProvider(emu, {}, { retry: { baseDelayMs: 1, maxDelayMs: 5, maxAttempts: 5, maxPurchaseRounds: 3 } });
      const failed = await provider.create({ blobId, retentionEpochs: 4, __urn: URN }).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(failed?.message).toMatch(/not known to honour Idempotency-Key.*Run `pulumi up` again later/);
      expect(emu.requests().map((r) => r.route)).toEqual(["get", "renew", "get"]);
      expect(entry(emu, blobId).epochsBought).toBe(0);
      await emu.close();
    }
  });

  it("someone else renewed the file since: their epochs count toward the declared end, only the rest is bought", async () => {
    const emu = await start({ idempotency: "ignore" });
    const blobId = (await emu.uploadFile({ content: `other ${Math.random()}`, filename: "c.txt", epochs: 1 })).blobId;
    const first = emu.currentEpoch();
    const { outs } = await (await newRun(emu)).create({ blobId, retentionEpochs: 2, __urn: URN });
    const other = await fetch(`${emu.url}/v1/files/${blobId}/renew`, {
      method: "POST",
      headers: { Authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ epochs: 3 }),
    });
    expect(other.status).toBe(200);
    await (await newRun(emu)).update(blobId, outs, { blobId, retentionEpochs: 6 });
    expect(entry(emu, blobId).endEpoch).toBe(first + 6);
  });
});

/** The one entry of a content, by the name the upload gave it. */
const entryNamed = (emulator: Emulator, name: string) => {
  const files = emulator.files().filter((f) => f.name === name);
  expect(files).toHaveLength(1);
  return files[0];
};

describe("an upload (source), against every kind of service", () => {
  for (const service of SERVICES) {
    // A service that sells again on every upload of stored bytes, and ignores keys, cannot be
    // told "this was my own upload": the second upload is a purchase of its own (docs/purchases-and-expiry.md).
    const sellsTwice = service.duplicateUpload === "purchase" && service.idempotency === "ignore";
    it(`a create killed after its upload was applied, run again: one entry, ${sellsTwice ? "the upload's epochs bought a second time (stated)" : "the declared end"} (${named(service)})`, async () => {
      const emu = await start(service);
      const end = emu.currentEpoch() + 4;
      const inputs = { source: textAsset(`upload ${Math.random()}`), name: "u.txt", tag: "t", metadata: { k: 1 }, retentionEpochs: 4, __urn: URN };
      await dieDuring(emu, "upload", async () => (await newRun(emu)).create(inputs));
      expect(entryNamed(emu, "u.txt").endEpoch).toBe(end);
      const { outs } = await (await newRun(emu)).create(inputs);
      expect(outs.retentionEpochs).toBe(4);
      expect(entryNamed(emu, "u.txt")).toMatchObject({ tag: "t", metadata: { k: 1 }, endEpoch: sellsTwice ? end + 4 : end });
    });

    const sellsOnReupload = service.duplicateUpload === "purchase";
    it(`killed with 4 epochs, the program then edited to 6: the next up converges on 6, no manual step (${named(service)})`, async () => {
      const emu = await start(service);
      const first = emu.currentEpoch();
      const inputs = { source: textAsset(`edited ${Math.random()}`), name: "e.txt", retentionEpochs: 4, __urn: URN };
      await dieDuring(emu, "upload", async () => (await newRun(emu)).create(inputs));
      const { outs } = await (await newRun(emu)).create({ ...inputs, retentionEpochs: 6 });
      expect(outs.retentionEpochs).toBe(6);
      expect(entryNamed(emu, "e.txt").endEpoch).toBe(sellsOnReupload ? first + 4 + 6 : first + 6);
    });

    it(`a revert A (2) → B (5) → A (5): never a refused key, A stored until its declared end (${named(service)})`, async () => {
      const emu = await start(service);
      const first = emu.currentEpoch();
      const a = textAsset(`A ${Math.random()}`);
      const b = textAsset(`B ${Math.random()}`);
      await (await newRun(emu)).create({ source: a, name: "a.txt", retentionEpochs: 2, __urn: URN });
      await (await newRun(emu)).create({ source: b, name: "b.txt", retentionEpochs: 5, __urn: URN });
      const { outs } = await (await newRun(emu)).create({ source: a, name: "a.txt", retentionEpochs: 5, __urn: URN });
      expect(outs.retentionEpochs).toBe(5);
      // A service that sells on every upload adds the upload's 5 to the 2 A had (docs/purchases-and-expiry.md).
      expect(entryNamed(emu, "a.txt").endEpoch).toBe(sellsOnReupload ? first + 7 : first + 5);
    });
  }

  it("the same content uploaded earlier by someone else: one entry, shared; only what it lacks of the declared end is bought, and said", async () => {
    const emu = await start({ idempotency: "ignore" });
    const text = `shared ${Math.random()}`;
    const end = emu.currentEpoch() + 4;
    await emu.uploadFile({ content: text, filename: "s.txt", epochs: 2 });
    const log = captureLog();
    let outs: Record<string, unknown>;
    let said: string;
    try {
      ({ outs } = await (await newRun(emu)).create({ source: textAsset(text), name: "s.txt", retentionEpochs: 4, __urn: URN }));
      said = log.text();
    } finally {
      log.restore();
    }
    expect(outs.retentionEpochs).toBe(4);
    expect(entryNamed(emu, "s.txt")).toMatchObject({ uploadEpochs: 2, epochsBought: 2, endEpoch: end });
    expect(said).toMatch(/already stored this content .* one content is one entry, shared; this resource buys only what it lacks of the declared end/);
  });

  it("an upload a service takes as a purchase on the entry it has: the entry's fields are read, so its metadata ends exactly as declared", async () => {
    const emu = await start({ idempotency: "honour", duplicateUpload: "purchase" });
    const text = `bought again ${Math.random()}`;
    const { blobId } = await emu.uploadFile({ content: text, filename: "p.txt", epochs: 2 });
    await fetch(`${emu.url}/v1/files/${blobId}`, {
      method: "PATCH",
      headers: { Authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ metadata: { left: "by someone" } }),
    });
    const log = captureLog();
    try {
      await (await newRun(emu)).create({ source: textAsset(text), name: "p.txt", metadata: { team: "web" }, retentionEpochs: 2, __urn: URN });
    } finally {
      log.restore();
    }
    expect(entry(emu, blobId).metadata).toEqual({ team: "web" });
  });

  for (const idempotency of ["honour", "ignore"] as IdempotencyMode[]) {
    it(`a file that expired is uploaded anew by the same declaration (keys ${idempotency === "honour" ? "honoured" : "ignored"})`, async () => {
      const emu = await start({ idempotency });
      const inputs = { source: textAsset(`expiring ${Math.random()}`), name: "x.txt", retentionEpochs: 1, __urn: URN };
      const { outs } = await (await newRun(emu)).create(inputs);
      await emu.advanceEpochs(2);
      // Refresh drops it (gone); the next up creates it again: a new upload, not the first one's answer.
      expect(await (await newRun(emu)).read(String(outs.blobId), outs)).toEqual({});
      const { outs: again } = await (await newRun(emu)).create(inputs);
      expect(again.blobId).toBe(outs.blobId);
      const file = entryNamed(emu, "x.txt");
      expect(file.expired).toBe(false);
      expect(file.endEpoch).toBe(emu.currentEpoch() + 1);
    });

    it(`a file that expired again and again is uploaded anew each time (keys ${idempotency === "honour" ? "honoured" : "ignored"})`, async () => {
      const emu = await start({ idempotency });
      const inputs = { source: textAsset(`expiring ${Math.random()}`), name: "x.txt", retentionEpochs: 1, __urn: URN };
      for (let round = 0; round < 4; round++) {
        const { outs } = await (await newRun(emu)).create(inputs);
        const file = entryNamed(emu, "x.txt");
        expect(file.expired).toBe(false);
        expect(file.endEpoch).toBe(emu.currentEpoch() + 1);
        await emu.advanceEpochs(2);
        expect(await (await newRun(emu)).read(String(outs.blobId), outs)).toEqual({});
      }
    });
  }

  it("a killed create's own upload, replayed after epochs were bought on it elsewhere: a raise to what it holds buys nothing", async () => {
    const emu = await start({ idempotency: "honour" });
    const first = emu.currentEpoch();
    const inputs = { source: textAsset(`renewed since ${Math.random()}`), name: "r.txt", retentionEpochs: 3, __urn: URN };
    await dieDuring(emu, "upload", async () => (await newRun(emu)).create(inputs));
    const { blobId } = entryNamed(emu, "r.txt");
    await emu.advanceEpochs(1);
    expect((await renewFile(emu, blobId, { epochs: 2 })).status).toBe(200);
    const { outs } = await (await newRun(emu)).create(inputs);
    emu.clearRequests();
    await (await newRun(emu)).update(blobId, outs, { ...inputs, retentionEpochs: 5 });
    expect(emu.requests().filter((r) => r.route === "renew")).toEqual([]);
    expect(entryNamed(emu, "r.txt").endEpoch).toBe(first + 5);
  });

  it("a killed create's own upload, replayed an epoch later, with epochs of 2 days the stack does not know: a raise buys what it lacks", async () => {
    const emu = await start({ idempotency: "honour", epochSeconds: 2 * 86_400 });
    const first = emu.currentEpoch();
    const unknownLength = () => configuredProvider(emu!, {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
    const inputs = { source: textAsset(`long epochs ${Math.random()}`), name: "l.txt", retentionEpochs: 3, __urn: URN };
    await dieDuring(emu, "upload", async () => (await unknownLength()).create(inputs));
    await emu.advanceEpochs(1);
    const { outs } = await (await unknownLength()).create(inputs);
    await (await unknownLength()).update(String(outs.blobId), outs, { ...inputs, retentionEpochs: 5 });
    expect(entryNamed(emu, "l.txt").endEpoch).toBe(first + 5);
  });

  /**
   * Runs `runs` behind a gateway that drops created_at from upload answers and reports every
   * instant `aheadMs` later (the service's clock ahead of this machine's).
   */
  async function withoutCreation(emu: Emulator, aheadMs: number, runs: (behind: Emulator) => Promise<void>): Promise<void> {
    const later = (at: unknown) => (typeof at === "string" && !Number.isNaN(Date.parse(at)) ? new Date(Date.parse(at) + aheadMs).toISOString() : at);
    const gateway = await rewritingProxy(emu.url, {
      json: (method, path, _status, body) => {
        if (typeof body !== "object" || body === null || Array.isArray(body)) return body;
        const shifted: Record<string, unknown> = { ...body };
        for (const field of ["createdAt", "expiresAt", "created_at", "expires_at"]) if (field in shifted) shifted[field] = later(shifted[field]);
        if (method === "POST" && path === "/v1/files") delete shifted.created_at;
        return shifted;
      },
    });
    try {
      await runs({ url: gateway.url, epochSeconds: emu.epochSeconds } as Emulator);
    } finally {
      await gateway.close();
    }
  }

  it("a killed create's own upload, replayed an epoch later without its creation (a gateway drops created_at): taken as its own", async () => {
    const emu = await start({ idempotency: "honour" });
    const first = emu.currentEpoch();
    const inputs = { source: textAsset(`no creation ${Math.random()}`), name: "n.txt", retentionEpochs: 3, __urn: URN };
    await dieDuring(emu, "upload", async () => (await newRun(emu)).create(inputs));
    await emu.advanceEpochs(1);
    await withoutCreation(emu, 0, async (behind) => {
      const { outs } = await (await newRun(behind)).create(inputs);
      await (await newRun(behind)).update(String(outs.blobId), outs, { ...inputs, retentionEpochs: 5 });
    });
    expect(entryNamed(emu, "n.txt").endEpoch).toBe(first + 5);
  });

  it("without its creation, a killed create's entry expired and stored again by someone else is not its own, whatever the service's clock", async () => {
    const emu = await start({ idempotency: "honour", epochSeconds: 3600 });
    const text = `again, no creation ${Math.random()}`;
    const inputs = { source: textAsset(text), name: "a.txt", retentionEpochs: 3, __urn: URN };
    await dieDuring(emu, "upload", async () => (await newRun(emu)).create(inputs));
    await emu.advanceEpochs(3);
    const theirs = await emu.uploadFile({ content: text, filename: "theirs.txt", epochs: 1 });
    const now = emu.currentEpoch();
    // The service's clock 5 minutes ahead: the killed upload's expiry, just passed, still looks ahead
    // here. Taken as its own, the entry ended 2 epochs early. 5 minutes is past the 60 s a count from
    // now allows for (CLOCK_SKEW_MS), so counted from now it may still end 1 early.
    await withoutCreation(emu, 5 * 60_000, async (behind) => void (await (await newRun(behind)).create(inputs)));
    expect(entry(emu, theirs.blobId).endEpoch).toBeGreaterThanOrEqual(now + 2);
  });

  it("a killed create whose keep-alive renew was applied: the rerun's replayed upload counts both, a raise to them buys nothing", async () => {
    const emu = await start({ idempotency: "honour" });
    const first = emu.currentEpoch();
    const inputs = {
      source: textAsset(`kept alive ${Math.random()}`),
      name: "k.txt",
      retentionEpochs: 3,
      keepAlive: { minRemainingEpochs: 5, renewEpochs: 3 },
      __urn: URN,
    };
    await dieDuring(emu, "renew", async () => (await newRun(emu)).create(inputs));
    const { outs } = await (await newRun(emu)).create(inputs);
    await (await newRun(emu)).update(String(outs.blobId), outs, { ...inputs, retentionEpochs: 6 });
    expect(entryNamed(emu, "k.txt").endEpoch).toBe(first + 6);
  });

  it("a killed create's entry expired and the same bytes were stored again by someone else: the rerun counts from now", async () => {
    const emu = await start({ idempotency: "honour" });
    const text = `stored again ${Math.random()}`;
    const inputs = { source: textAsset(text), name: "s.txt", retentionEpochs: 3, __urn: URN };
    await dieDuring(emu, "upload", async () => (await newRun(emu)).create(inputs));
    await emu.advanceEpochs(5);
    const now = emu.currentEpoch();
    const theirs = await emu.uploadFile({ content: text, filename: "theirs.txt", epochs: 2 });
    await (await newRun(emu)).create(inputs);
    expect(entry(emu, theirs.blobId).endEpoch).toBe(now + 3);
  });

  for (const creation of ["with", "without"] as const) {
    it(`a killed create's upload a service sold on an older entry (duplicate upload: purchase), answered ${creation} its creation: not taken as its own entry`, async () => {
      const emu = await start({ idempotency: "honour", duplicateUpload: "purchase", epochSeconds: 3600 });
      const text = `sold again ${creation} creation ${Math.random()}`;
      const theirs = await emu.uploadFile({ content: text, filename: "theirs.txt", epochs: 5 });
      await emu.advanceEpochs(1);
      const inputs = { source: textAsset(text), name: "p.txt", retentionEpochs: 3, __urn: URN };
      await dieDuring(emu, "upload", async () => (await newRun(emu)).create(inputs));
      const held = entry(emu, theirs.blobId).endEpoch;
      const rerun = async (service: Emulator) => {
        const { outs } = await (await newRun(service)).create(inputs);
        emu.clearRequests();
        // Taken as stored content is, now: the entry holds 7 epochs from now, so 5 buys nothing.
        await (await newRun(service)).update(theirs.blobId, outs, { ...inputs, retentionEpochs: 5 });
      };
      if (creation === "with") await rerun(emu);
      else await withoutCreation(emu, 0, rerun);
      expect(emu.requests().filter((r) => r.route === "renew")).toEqual([]);
      expect(entry(emu, theirs.blobId).endEpoch).toBe(held);
    });
  }

  it("an upload whose answer is lost (applied, connection dropped): not sent again in that run; the next run finds it, the declared end", async () => {
    const emu = await start({ idempotency: "honour" });
    const end = emu.currentEpoch() + 3;
    const inputs = { source: textAsset(`dropped ${Math.random()}`), name: "d.txt", retentionEpochs: 3, __urn: URN };
    emu.setFaults({ script: [{ route: "upload", fault: "apply-then-drop" }] });
    const failed = await (await newRun(emu)).create(inputs).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(failed?.message).toMatch(
      /upload of d\.txt \(\d+ bytes\) may or may not have been applied .*not sent again\. Run `pulumi up`: the same upload reuses its Idempotency-Key/,
    );
    expect(emu.requests().filter((r) => r.route === "upload")).toHaveLength(1);
    const { outs } = await (await newRun(emu)).create(inputs);
    expect(outs.retentionEpochs).toBe(3);
    expect(entryNamed(emu, "d.txt").endEpoch).toBe(end);
  });
});
