import { createHash } from "node:crypto";
import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type Emulator, startEmulator } from "../../../emulator";
import type { StoredFileProvider } from "../../../provider/dynamic/stored-file-provider";
import { rewritingProxy } from "../../helpers/hostile-service";
import { configuredProvider } from "../../helpers/provider-fixture";

/**
 * What an outsider's review of the declared-end model broke, each mended and kept here: the
 * retention start must never move later on what a read says (no createdAt, a createdAt that
 * moves, a state of the first release refreshed after a killed purchase), and a record is checked
 * before anything is bought on it (a 409 naming other bytes, an expiry past the horizon).
 */

const EPOCH = 86_400_000;
const URN = "urn:pulumi:dev::proj::pulumi-nodejs:dynamic:Resource::f";
const BLOB = "Xk3q9vH2s7nR0dLw1pY4bC8eF5gJ6mA2tU9zQ0oI1sE";
const OTHER = "OTHERotherOTHERotherOTHERotherOTHERother123";
const fast = { retry: { baseDelayMs: 1, maxDelayMs: 5 } };
let closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers) await close();
  closers = [];
  vi.restoreAllMocks();
});

/** A service holding one file (adoptable by blobId), epoch-aligned like the emulator; `tweakGet` alters each GET answer. */
async function oneFileService(opts: {
  blobId: string;
  leftEpochs: number;
  tweakGet?: (record: Record<string, unknown>) => Record<string, unknown>;
  upload?: (res: http.ServerResponse) => void;
}) {
  const boundary = Math.ceil(Date.now() / EPOCH) * EPOCH;
  const createdAt = new Date(boundary - 4 * EPOCH + 1000).toISOString();
  const s = { expires: boundary + (opts.leftEpochs - 1) * EPOCH, renews: [] as number[], log: [] as string[] };
  const record = () => ({
    blobId: opts.blobId,
    url: `https://cdn.example/${opts.blobId}`,
    name: "a.txt",
    tag: "t",
    metadata: {},
    size: 1,
    createdAt,
    expiresAt: new Date(s.expires).toISOString(),
  });
  const send = (res: http.ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
    res.end(text);
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const url = req.url ?? "";
      s.log.push(`${req.method} ${url}`);
      if (req.method === "GET" && url === `/v1/files/${opts.blobId}`) return send(res, 200, opts.tweakGet ? opts.tweakGet(record()) : record());
      if (req.method === "PATCH") return send(res, 200, record());
      if (req.method === "POST" && url === `/v1/files/${opts.blobId}/renew`) {
        const epochs = JSON.parse(Buffer.concat(chunks).toString()).epochs as number;
        s.renews.push(epochs);
        s.expires += epochs * EPOCH;
        return send(res, 200, { ...record(), epochsAdded: epochs });
      }
      if (req.method === "POST" && url === "/v1/files" && opts.upload) return opts.upload(res);
      send(res, 404, { error: { code: "NOT_FOUND", message: "no", details: { blobId: url.split("/")[3] } } });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  closers.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url, s };
}

const textAsset = (text: string) => ({ [SIG_KEY]: ASSET_SIG, text });

describe("the retention start never moves later on what a read says", () => {
  it("a service that reports no createdAt: refused naming the field, nothing bought on a count without its start", async () => {
    const svc = await oneFileService({ blobId: BLOB, leftEpochs: 2, tweakGet: (r) => ({ ...r, createdAt: null }) });
    const adopt = async () => (await configuredProvider(svc, {}, fast)).create({ blobId: BLOB, retentionEpochs: 5, __urn: URN });
    await expect(adopt()).rejects.toThrow(/createdAt: .*`pulumi-tuskr doctor`/);
    await expect(adopt()).rejects.toThrow(/INVALID_RESPONSE/);
    expect(svc.s.renews).toEqual([]);
  });

  it("a createdAt that moves later between reads: raising 5 → 6 buys 1", async () => {
    let shift = 0;
    const svc = await oneFileService({
      blobId: BLOB,
      leftEpochs: 2,
      tweakGet: (r) => ({ ...r, createdAt: new Date(Date.parse(String(r.createdAt)) + shift).toISOString() }),
    });
    const { outs } = await (await configuredProvider(svc, {}, fast)).create({ blobId: BLOB, retentionEpochs: 5, __urn: URN });
    shift = 2 * EPOCH;
    await (await configuredProvider(svc, {}, fast)).update(BLOB, outs, { blobId: BLOB, retentionEpochs: 6, __urn: URN });
    // The create's 3 are bought as 1 that shows the epoch's length (the start was guessed at adoption), then 2.
    expect(svc.s.renews).toEqual([1, 2, 1]);
  });

  for (const idempotency of ["honour", "ignore"] as const) {
    it(`a state of the first release, killed after its renew was applied, refreshed, run again: nothing bought twice (keys ${idempotency === "honour" ? "honoured" : "ignored"})`, async () => {
      const emu: Emulator = await startEmulator({ port: 0, idempotency });
      closers.push(() => emu.close());
      const newRun = (): Promise<StoredFileProvider> => configuredProvider(emu, {}, fast);
      const blobId = (await emu.uploadFile({ content: `legacy ${Math.random()}`, filename: "c.txt", epochs: 5 })).blobId;
      const read = await (await newRun()).read(blobId, { blobId, retentionEpochs: 3 });
      // As the first release wrote it: a count of epochs bought, its key seed, no retention start.
      const { __retentionStartAfterCreated: _a, __retentionStart: _b, __retentionDeclared: _c, ...rest } = read.props as Record<string, unknown>;
      const legacy = { ...rest, retentionEpochs: 3, renewKeySeed: "seed-123" };
      emu.setFaults({ script: [{ route: "renew", fault: "apply-then-hang" }] });
      void (await newRun()).update(blobId, legacy, { blobId, retentionEpochs: 5, __urn: URN }).catch(() => undefined);
      await vi.waitFor(() => expect(emu.inFlight().some((r) => r.route === "renew" && r.held)).toBe(true), { timeout: 10_000, interval: 20 });
      emu.setFaults({});
      const afterKill = emu.files().find((f) => f.blobId === blobId)!;
      // The raise of 2: its first epoch (bought to learn the length) applied before the kill.
      expect(afterKill.epochsBought).toBe(1);
      // `up --refresh`: the engine refreshes the state it holds, then updates.
      const refreshed = await (await newRun()).read(blobId, legacy);
      await (await newRun()).update(blobId, refreshed.props!, { blobId, retentionEpochs: 5, __urn: URN });
      // Only the other epoch of the raise is bought.
      expect(emu.files().find((f) => f.blobId === blobId)!).toMatchObject({ endEpoch: afterKill.endEpoch + 1, epochsBought: 2 });
    });
  }
});

describe("a record is checked before anything is bought on it", () => {
  it("a 409 ALREADY_STORED naming an entry of other bytes: INVALID_RESPONSE, not taken as this content's", async () => {
    const svc = await oneFileService({
      blobId: OTHER,
      leftEpochs: 10,
      tweakGet: (r) => ({ ...r, size: 999, name: "someone-elses.bin" }),
      upload: (res) => {
        const text = JSON.stringify({ error: { code: "ALREADY_STORED", message: "stored", details: { blobId: OTHER } } });
        res.writeHead(409, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
        res.end(text);
      },
    });
    vi.spyOn(console, "log").mockImplementation(() => undefined);
    const failed = await (await configuredProvider(svc, {}, fast)).create({ source: textAsset("hello"), retentionEpochs: 2, __urn: URN }).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(failed?.code).toBe("INVALID_RESPONSE");
    expect(failed?.message).toMatch(/holds 999 bytes, not the 5 sent/);
    expect(svc.s.renews).toEqual([]);
  });

  // An "already stored" answer naming another entry of the same size (5 bytes, as "hello"): its
  // content is read where its url serves it, and what is served there decides.
  const servedCases: Array<[string, [number, unknown] | undefined, RegExp]> = [
    ["the entry's own bytes, other than these (it serves other bytes)", undefined, /serves other bytes/],
    ["a body far over the file's size (refused naming the 64 KiB limit that read used)", [200, { padding: "x".repeat(100 * 1024) }], /larger than 65536 bytes/],
  ];
  for (const [served, cdnAnswer, said] of servedCases) {
    it(`an 'already stored' answer naming another entry whose url serves ${served}: INVALID_RESPONSE, nothing PATCHed or renewed`, async () => {
      const emu = await startEmulator({ port: 0 });
      closers.push(() => emu.close());
      const other = await emu.uploadFile({ content: "world", filename: "w.txt", epochs: 1 });
      const proxy = await rewritingProxy(emu.url, {
        answer: (method, path) =>
          method === "POST" && path === "/v1/files"
            ? [409, { error: { code: "ALREADY_STORED", message: "stored", details: { blobId: other.blobId } } }]
            : method === "GET" && path.startsWith("/cdn/")
              ? cdnAnswer
              : undefined,
      });
      closers.push(() => proxy.close());
      vi.spyOn(console, "log").mockImplementation(() => undefined);
      const provider = await configuredProvider(proxy, {}, fast);
      const failed = await provider.create({ source: { [SIG_KEY]: ASSET_SIG, text: "hello" }, tag: "mine", retentionEpochs: 3, __urn: URN }).then(
        () => undefined,
        (e: Error & { code?: string }) => e,
      );
      expect(failed?.code).toBe("INVALID_RESPONSE");
      expect(failed?.message).toMatch(said);
      expect(emu.requests().filter((r) => r.route === "patch" || r.route === "renew")).toEqual([]);
    });
  }

  for (const idempotency of ["honour", "ignore"] as const) {
    it(`a service that sells a second upload of stored bytes (201 on yesterday's entry): that entry, once its bytes check out; nothing bought again (keys ${idempotency === "honour" ? "honoured" : "ignored"})`, async () => {
      const emu = await startEmulator({ port: 0, duplicateUpload: "purchase", idempotency });
      closers.push(() => emu.close());
      const text = `sold twice ${Math.random()}`;
      const blobId = (await emu.uploadFile({ content: text, filename: "s.txt", epochs: 5 })).blobId;
      await emu.advanceEpochs(1);
      vi.spyOn(console, "log").mockImplementation(() => undefined);
      const inputs = {
        source: { [SIG_KEY]: ASSET_SIG, text, hash: createHash("sha256").update(text).digest("hex") },
        name: "s.txt",
        retentionEpochs: 5,
        __urn: URN,
      };
      const { id, outs } = await (await configuredProvider(emu, {}, fast)).create(inputs);
      expect(id).toBe(blobId);
      const bought = emu.files().find((f) => f.blobId === blobId)!.epochsBought;
      const provider = await configuredProvider(emu, {}, fast);
      expect((await provider.diff(id, outs, inputs)).changes).toBe(false);
      expect(emu.requests().filter((r) => r.route === "upload")).toHaveLength(1);
      expect(emu.files().find((f) => f.blobId === blobId)!.epochsBought).toBe(bought);
    });
  }

  it("a read before a renew answering an expiry 1000 epochs ahead: INVALID_RESPONSE, nothing recorded as met", async () => {
    let far = false;
    const svc = await oneFileService({
      blobId: BLOB,
      leftEpochs: 2,
      tweakGet: (r) => (far ? { ...r, expiresAt: new Date(Date.now() + 1000 * EPOCH).toISOString() } : r),
    });
    const { outs } = await (await configuredProvider(svc, {}, fast)).create({ blobId: BLOB, retentionEpochs: 3, __urn: URN });
    far = true;
    const failed = await (await configuredProvider(svc, {}, fast)).update(BLOB, outs, { blobId: BLOB, retentionEpochs: 6, __urn: URN }).then(
      () => undefined,
      (e: Error & { code?: string; properties?: Record<string, unknown> }) => e,
    );
    expect(failed?.code).toBe("INVALID_RESPONSE");
    expect(failed?.message).toMatch(/past the service's horizon/);
    expect(failed?.properties?.retentionEpochs).not.toBe(6);
  });
});
