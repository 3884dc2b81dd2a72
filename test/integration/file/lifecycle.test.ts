import { createHash } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { storedFileProvider as provider } from "../../../provider/dynamic/stored-file-provider";
import { EMULATOR_DEFAULT_API_KEY, startEmulator } from "../../../emulator";
import { configureProvider } from "../../helpers/provider-fixture";

type Emulator = Awaited<ReturnType<typeof startEmulator>>;
let emu: Emulator;
let blobId: string;
const STUB = "stub-text";

const configure = (apiKey = EMULATOR_DEFAULT_API_KEY) => configureProvider(provider, emu, { "tuskr:apiKey": apiKey });
const stored = () => emu.files().find((f) => f.blobId === blobId)!;
const caught = async (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("expected a failure");
    },
    (e: any) => e,
  );

beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
});
afterAll(async () => {
  await emu?.close();
});
beforeEach(async () => {
  await emu.reset();
  emu.setFaults({});
  await configure();
  blobId = (await emu.uploadFile({ content: Buffer.from(`file ${Math.random()}`), filename: "orig.txt", tag: "orig" })).blobId;
  emu.clearRequests();
});

describe("StoredFile provider ↔ emulator", () => {
  it("create adopts the file: one GET, one PATCH of the differing fields, one renew of 1 to learn the epoch (its record read), one of the rest", async () => {
    const inputs = { blobId, name: "orig.txt", tag: "docs", metadata: { team: "web" }, retentionEpochs: 5, __provider: STUB };
    const { id, outs } = await provider.create(inputs);
    expect(id).toBe(blobId);
    expect(outs).toMatchObject({ blobId, name: "orig.txt", tag: "docs", metadata: { team: "web" }, retentionEpochs: 5 });
    expect(outs.url).toBeTruthy();
    // Retention counts from 5 of the service's epochs before the expiry, whose length the renew's answer showed.
    expect(outs).toMatchObject({ __retentionStartEpochs: 5, __epochMsSeen: 86_400_000 });
    // Its start is guessed at adoption, in a length no answer showed yet: 1 epoch first shows it,
    // as the file's record read after it says (not the renew's answer alone).
    expect(emu.requests().map((r) => [r.route, r.requestBody])).toEqual([
      ["get", undefined],
      ["patch", { tag: "docs", metadata: { team: "web" } }],
      ["renew", { epochs: 1 }],
      ["get", undefined],
      ["renew", { epochs: 3 }],
    ]);
    // Uploaded for the default single epoch: 5 epochs from this epoch's start lack 4.
    expect(stored().epochsBought).toBe(4);
  });

  it("a name holding a lone surrogate (the form carries U+FFFD) is uploaded once, not refused by the read-back, then PATCHed as declared", async () => {
    const text = `surrogate ${Math.random()}`;
    const hash = createHash("sha256").update(text).digest("hex");
    const source = { [SIG_KEY]: ASSET_SIG, text, hash };
    const { id } = await provider.create({
      source,
      name: "a\uD800b.txt",
      __urn: "urn:pulumi:dev::p::pulumi-nodejs:dynamic/tuskr:StoredFile::s",
      __provider: STUB,
    });
    expect(emu.files().find((f) => f.blobId === id)?.name).toBe("a\uD800b.txt");
    expect(emu.requests().map((r) => r.route)).toEqual(["upload", "get", "patch"]);
  });

  it("create uploads a name and tag the upload's form cannot carry as declared (a quote, line breaks), then PATCHes them to what is declared", async () => {
    const text = `quoted ${Math.random()}`;
    const hash = createHash("sha256").update(text).digest("hex");
    const source = { [SIG_KEY]: ASSET_SIG, text, hash };
    const declared = { name: 'say "hi".txt', tag: "line1\nline2" };
    const { id, outs } = await provider.create({
      source,
      ...declared,
      __urn: "urn:pulumi:dev::p::pulumi-nodejs:dynamic/tuskr:StoredFile::q",
      __provider: STUB,
    });
    expect(emu.files().find((f) => f.blobId === id)).toMatchObject(declared);
    expect(outs).toMatchObject(declared);
    expect(emu.requests().map((r) => [r.route, r.route === "patch" ? r.requestBody : undefined])).toEqual([
      ["upload", undefined],
      ["get", undefined], // the upload's answer read back
      ["patch", declared],
    ]);
    // A plain name and tag are carried by the upload as they are: no PATCH.
    emu.clearRequests();
    const plain = `plain ${Math.random()}`;
    await provider.create({
      source: { [SIG_KEY]: ASSET_SIG, text: plain, hash: createHash("sha256").update(plain).digest("hex") },
      name: "plain.txt",
      tag: "plain tag",
      __urn: "urn:pulumi:dev::p::pulumi-nodejs:dynamic/tuskr:StoredFile::p",
      __provider: STUB,
    });
    expect(emu.requests().map((r) => r.route)).toEqual(["upload", "get"]);
  });

  it("create with nothing to change sends only the GET", async () => {
    const { outs } = await provider.create({ blobId, tag: "orig", __provider: STUB });
    expect(outs.retentionEpochs).toBe(0);
    expect(emu.requests().map((r) => r.route)).toEqual(["get"]);
  });

  it("create of an unknown or expired blobId fails with a message naming it", async () => {
    const unknown = await caught(provider.create({ blobId: "nope", __provider: STUB }));
    expect(unknown.message).toMatch(/"nope".*unknown blobId/);
    await emu.advanceEpochs(3);
    const expired = await caught(provider.create({ blobId, __provider: STUB }));
    expect(expired.message).toMatch(/has expired/);
    expect(expired.id).toBeUndefined();
  });

  it("create records the partial result when the renew fails after the PATCH went through", async () => {
    emu.setFaults({ script: [{ route: "renew", fault: "5xx", times: 100 }] });
    const e = await caught(provider.create({ blobId, tag: "patched", retentionEpochs: 3, __provider: STUB }));
    expect(e.id).toBe(blobId);
    expect(e.properties).toMatchObject({ blobId, tag: "patched", retentionEpochs: 0, __provider: STUB });
    expect(e.message).toMatch(/may or may not have been applied/);
    expect(stored().tag).toBe("patched");
    expect(stored().epochsBought).toBe(0);
  });

  it("create refuses a purchase past the 53-epoch horizon before any write, with the numbers", async () => {
    const e = await caught(provider.create({ blobId, tag: "never-sent", retentionEpochs: 54, __provider: STUB }));
    expect(e.id).toBeUndefined();
    expect(e.message).toMatch(/buying 53 epoch\(s\) would end the storage 54 epochs ahead.*at most 53.*1 epoch\(s\) left.*at most 52 more/);
    expect(emu.requests().map((r) => r.route)).toEqual(["get"]);
  });

  it("update sends exactly one PATCH with only the changed fields, then reads the expiry and renews what the declared end lacks", async () => {
    const { outs } = await provider.create({ blobId, name: "a", tag: "t", metadata: { keep: 1, drop: 2 }, retentionEpochs: 5, __provider: STUB });
    emu.clearRequests();
    const news = { blobId, name: "a", tag: "t2", metadata: { keep: 1, add: 3 }, retentionEpochs: 12, __provider: STUB };
    const diff = await provider.diff(blobId, outs, news);
    expect(diff).toEqual({
      changes: true,
      replaces: [],
      deleteBeforeReplace: false,
      // Per property, for the plugin's previews (the engine drops it for dynamic resources).
      detailedDiff: {
        tag: { field: "tag", kind: "update", inputDiff: true },
        "metadata.add": { field: "metadata", kind: "add", inputDiff: true },
        "metadata.drop": { field: "metadata", kind: "delete", inputDiff: true },
        retentionEpochs: { field: "retentionEpochs", kind: "update", inputDiff: true },
      },
    });
    const { outs: after } = await provider.update(blobId, outs, news);
    expect(emu.requests().map((r) => r.route)).toEqual(["patch", "get", "renew"]);
    expect(emu.requests()[0].requestBody).toEqual({ tag: "t2", metadata: { keep: 1, add: 3, drop: null } });
    expect(emu.requests()[2].requestBody).toEqual({ epochs: 7 });
    expect(after).toMatchObject({ tag: "t2", metadata: { keep: 1, add: 3 }, retentionEpochs: 12 });
    expect(stored().metadata).toEqual({ keep: 1, add: 3 });
    expect(stored().epochsBought).toBe(4 + 7);
    expect(Date.parse(after.expiresAt!) - Date.parse(outs.expiresAt!)).toBe(7 * 86_400_000);
  });

  it("update with nothing changed sends zero requests, and diff says so", async () => {
    const { outs } = await provider.create({ blobId, tag: "t", retentionEpochs: 2, __provider: STUB });
    emu.clearRequests();
    const news = { blobId, tag: "t", retentionEpochs: 2, __provider: "another stub text" };
    expect((await provider.diff(blobId, outs, news)).changes).toBe(false);
    await provider.update(blobId, outs, news);
    expect(emu.requests()).toHaveLength(0);
  });

  it("diff asks for a replace when the blobId changes, and for nothing else", async () => {
    const { outs } = await provider.create({ blobId, __provider: STUB });
    expect(await provider.diff(blobId, outs, { blobId: "other", __provider: STUB })).toMatchObject({ changes: true, replaces: ["blobId"] });
  });

  it("read shows out-of-band edits as drift, and a gone file as gone", async () => {
    const { outs } = await provider.create({ blobId, tag: "declared", metadata: {}, retentionEpochs: 1, __provider: STUB });
    expect(outs.name).toBeUndefined(); // not declared, so not managed: not recorded
    await fetch(`${emu.url}/v1/files/${encodeURIComponent(blobId)}`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ tag: "edited", metadata: { surprise: true } }),
    });
    const read = await provider.read(blobId, outs);
    expect(read.props).toMatchObject({
      tag: "edited",
      metadata: { surprise: true },
      retentionEpochs: 1,
      __retentionStartEpochs: outs.__retentionStartEpochs,
    });
    // The managed fields come back as inputs, so a preview can name what drifted.
    expect(read.inputs).toEqual({ blobId, tag: "edited", metadata: { surprise: true }, retentionEpochs: 1 });
    expect(read.props!.name).toBeUndefined();
    const drift = await provider.diff(blobId, read.props!, { blobId, tag: "declared", metadata: {}, retentionEpochs: 1 });
    expect(drift.changes).toBe(true);
    await emu.advanceEpochs(10);
    expect(await provider.read(blobId, outs)).toEqual({});
  });

  it("a drift fingerprint goes once its field is no longer declared or is declared secret: at the next update, or the next refresh", async () => {
    const { outs } = await provider.create({ blobId, tag: "declared", metadata: { team: "web" }, __provider: STUB });
    await fetch(`${emu.url}/v1/files/${encodeURIComponent(blobId)}`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ tag: "edited", metadata: { team: "ops" } }),
    });
    const read = await provider.read(blobId, outs);
    const seen = read.props!.__driftSeen as Record<string, string>;
    expect(Object.keys(seen).sort()).toEqual(["metadata", "tag"]);
    // tag left unmanaged, metadata now secret: neither fingerprint stays.
    const { outs: after } = await provider.update(blobId, read.props!, { blobId, metadata: { team: "web" }, __secretInputs: ["metadata"], __provider: STUB });
    expect(after.__driftSeen).toBeUndefined();
    // A state that still holds them (an earlier release kept them) loses them at the next refresh.
    expect((await provider.read(blobId, { ...after, __driftSeen: seen })).props!.__driftSeen).toBeUndefined();
  });

  it("delete sends no request", async () => {
    const { outs } = await provider.create({ blobId, retentionEpochs: 1, __provider: STUB });
    emu.clearRequests();
    await provider.delete(blobId, outs);
    expect(emu.requests()).toHaveLength(0);
    expect(stored()).toBeTruthy();
  });

  it("a wrong key fails clearly without the key in the message", async () => {
    await configure("tsk_live_not_the_right_key_42");
    const e = await caught(provider.create({ blobId, __provider: STUB }));
    expect(e.message).toMatch(/401 UNAUTHORIZED/);
    expect(`${e.message} ${JSON.stringify(e)} ${e.stack}`).not.toContain("tsk_live_not_the_right_key_42");
  });

  it("a renew whose answer is lost is read back and taken as made when the expiry moved by exactly it: bought once, in one run", async () => {
    const { outs } = await provider.create({ blobId, retentionEpochs: 2, __provider: STUB });
    expect(stored().epochsBought).toBe(1);
    emu.setFaults({ script: [{ route: "renew", fault: "apply-then-drop", times: 1 }] });
    // A new `up`: its client has not yet seen the service echo a key (else it resends under it).
    await configure();
    const { outs: after } = await provider.update(blobId, outs, { blobId, retentionEpochs: 6, __provider: STUB });
    expect(after.retentionEpochs).toBe(6);
    expect(stored().epochsBought).toBe(1 + 4);
    expect(emu.requests().filter((r) => r.route === "renew")).toHaveLength(2);
  });

  it("an update run again from the state before it (a killed run), whatever it declares by then, buys only what the end still lacks", async () => {
    const { outs } = await provider.create({ blobId, retentionEpochs: 2, __provider: STUB });
    await provider.update(blobId, outs, { blobId, retentionEpochs: 6, __provider: STUB });
    expect(stored().epochsBought).toBe(5);
    emu.clearRequests();
    // The engine still holds the state of before the update; the program now declares 7.
    const { outs: again } = await provider.update(blobId, outs, { blobId, retentionEpochs: 7, __provider: STUB });
    expect(emu.requests().map((r) => [r.route, r.requestBody])).toEqual([
      ["get", undefined],
      ["renew", { epochs: 1 }],
    ]);
    expect(again.retentionEpochs).toBe(7);
    expect(stored().epochsBought).toBe(6);
  });

  it("keep-alive buys renewEpochs whenever too few epochs are left, counted apart from retentionEpochs", async () => {
    const keepAlive = { minRemainingEpochs: 3, renewEpochs: 5 };
    // Uploaded with 1 epoch: adoption finds 1 < 3 left, so keep-alive buys 5 at once.
    const { outs } = await provider.create({ blobId, retentionEpochs: 0, keepAlive, __provider: STUB });
    expect(outs).toMatchObject({ retentionEpochs: 0, keepAliveEpochs: 5, remainingEpochs: 6, keepAlive });
    expect(stored().epochsBought).toBe(5);
    // Nothing due while enough is left.
    expect((await provider.diff(blobId, outs, { blobId, retentionEpochs: 0, keepAlive })).changes).toBe(false);
    await emu.advanceEpochs(4);
    const refreshed = (await provider.read(blobId, outs)).props!;
    expect(refreshed.remainingEpochs).toBe(2);
    const news = { blobId, retentionEpochs: 0, keepAlive, __provider: STUB };
    expect((await provider.diff(blobId, refreshed, news)).changes).toBe(true);
    emu.clearRequests();
    const { outs: after } = await provider.update(blobId, refreshed, news);
    expect(emu.requests().map((r) => [r.route, r.requestBody])).toEqual([
      ["get", undefined],
      ["renew", { epochs: 5 }],
    ]);
    expect(after).toMatchObject({ retentionEpochs: 0, keepAliveEpochs: 10, remainingEpochs: 7 });
    // Once bought, not due again: a second up sends nothing.
    expect((await provider.diff(blobId, after, news)).changes).toBe(false);
    // Keep-alive no longer declared: a change (the state, which the expiry report reads, drops
    // the policy), no request; nothing kept alive after it.
    const without = { blobId, retentionEpochs: 0, __provider: STUB };
    const off = await provider.diff(blobId, after, without);
    expect(off.changes).toBe(true);
    expect(off.detailedDiff).toMatchObject({ keepAlive: { kind: "delete" } });
    emu.clearRequests();
    const { outs: dropped } = await provider.update(blobId, after, without);
    expect(emu.requests()).toEqual([]);
    expect(dropped.keepAlive).toBeUndefined();
    expect((await provider.diff(blobId, dropped, without)).changes).toBe(false);
  });
});

describe("refresh hands back the inputs as declared", () => {
  it("a declared retentionEpochs: 0 stays declared, an omitted one stays omitted", async () => {
    const declared = await provider.create({ blobId, retentionEpochs: 0, __provider: STUB });
    expect((await provider.read(blobId, declared.outs)).inputs).toMatchObject({ retentionEpochs: 0 });
    const omitted = await provider.create({ blobId, tag: "t", __provider: STUB });
    expect((await provider.read(blobId, omitted.outs)).inputs).not.toHaveProperty("retentionEpochs");
  });
});

describe("the bookkeeping a release before this one wrote under its own names", () => {
  it("is read as it is: no change at preview, nothing sent; a raise of N buys N, and the next write records where retention counts from", async () => {
    const inputs = { blobId, tag: "docs", retentionEpochs: 2, __provider: STUB };
    await provider.create({ ...inputs, retentionEpochs: 0 });
    // Bought 2 the way the previous release did (on top of the expiry at adoption).
    await fetch(`${emu.url}/v1/files/${encodeURIComponent(blobId)}/renew`, {
      method: "POST",
      headers: { authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ epochs: 2 }),
    });
    const file = emu.files().find((f) => f.blobId === blobId)!;
    // The state as the previous release recorded it: its own bookkeeping, under its own names.
    const previous = {
      blobId,
      tag: "docs",
      retentionEpochs: 2,
      url: file.url,
      size: file.size,
      createdAt: file.createdAt,
      expiresAt: file.expiresAt,
      renewKeySeed: "0123456789abcdef0123456789abcdef",
      idempotencyHonoured: true,
      purchasedExpiresAt: file.expiresAt,
      retentionDeclared: true,
      __provider: STUB,
    };
    emu.clearRequests();
    expect((await provider.diff(blobId, previous, inputs)).changes).toBe(false);
    expect(emu.requests()).toEqual([]);
    const read = await provider.read(blobId, previous);
    // Its start, read once in epochs: the 2 it recorded as reached before the expiry.
    expect(read.props).toMatchObject({ __retentionStartEpochs: 2, retentionEpochs: 2 });
    const before = stored().epochsBought;
    const { outs: raised } = await provider.update(blobId, previous, { ...inputs, retentionEpochs: 3 });
    expect(stored().epochsBought - before).toBe(1);
    expect(raised).toMatchObject({ __retentionStartEpochs: 3, retentionEpochs: 3 });
    expect(raised).not.toHaveProperty("__purchasedExpiresAt");
  });
});
