import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { createHash } from "node:crypto";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type Emulator, type IdempotencyMode, startEmulator } from "../../../emulator";
import { STORED_FILE_TYPES } from "../../../provider/engine/urns";
import type { StoredFileProvider } from "../../../provider/dynamic/stored-file-provider";
import { summarizePreview } from "../../../provider/cli/summary";
import { configuredProvider } from "../../helpers/provider-fixture";

/**
 * `retainUntil`: a date every file reaches, whenever it was declared. Files created epochs apart
 * with the same date end at the same epoch, each buying only its own gap; a run killed after its
 * purchase was applied converges on the next one against keys honoured or ignored; a date past
 * the horizon fails `check`, before any request.
 */

const urn = (name: string) => `urn:pulumi:dev::proj::${STORED_FILE_TYPES.dynamic}::${name}`;
/** The engine's wire form of `new pulumi.asset.StringAsset(text)`, with the hash the engine computes. */
const textAsset = (text: string) => ({
  [SIG_KEY]: ASSET_SIG,
  text,
  hash: createHash("sha256").update(text).digest("hex"),
});

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

async function start(idempotency: IdempotencyMode = "honour"): Promise<Emulator> {
  emu = await startEmulator({ port: 0, idempotency });
  return emu;
}
const newRun = (e: Emulator): Promise<StoredFileProvider> => configuredProvider(e, {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
const entry = (e: Emulator, blobId: string) => e.files().find((f) => f.blobId === blobId)!;
const caught = (p: Promise<unknown>): Promise<any> =>
  p.then(
    () => {
      throw new Error("expected a failure");
    },
    (error: unknown) => error,
  );

/** An emulator with epochs of `seconds`, once half of its current epoch is gone; and that epoch's start. */
async function halfwayThroughAnEpoch(seconds: number): Promise<{ e: Emulator; epochStart: number }> {
  emu = await startEmulator({ port: 0, epochSeconds: seconds });
  const probe = await emu.uploadFile({ content: `probe ${Math.random()}`, filename: "probe.txt", epochs: 1 });
  const epochStart = Date.parse(probe.expiresAt) - seconds * 1000;
  await new Promise((r) => setTimeout(r, Math.max(0, epochStart + (seconds * 1000) / 2 - Date.now())));
  return { e: emu, epochStart };
}

/** A date an hour before the boundary that starts epoch `current + ahead`: the first boundary to reach it is that one. */
async function dateBefore(e: Emulator, ahead: number): Promise<string> {
  const probe = await e.uploadFile({ content: `probe ${Math.random()}`, filename: "probe.txt", epochs: 1 });
  const nextBoundary = Date.parse(probe.expiresAt);
  return new Date(nextBoundary + (ahead - 1) * e.epochSeconds * 1000 - 3_600_000).toISOString();
}

describe("retainUntil", () => {
  it("files declared epochs apart with one retainUntil end at the same epoch, each buying only its gap", async () => {
    const e = await start();
    const until = await dateBefore(e, 8);
    const end = e.currentEpoch() + 8;
    const adopted = (await e.uploadFile({ content: `adopted ${Math.random()}`, filename: "a.txt", epochs: 5 })).blobId;
    const first = await (await newRun(e)).create({ source: textAsset(`first ${Math.random()}`), name: "first.txt", retainUntil: until, __urn: urn("first") });
    // Three epochs pass. The emulator lets time pass by moving its history into the past (the
    // provider's clock stays), so the same instant now reads 3 epochs earlier on this clock.
    await e.advanceEpochs(3);
    const sameInstant = new Date(Date.parse(until) - 3 * e.epochSeconds * 1000).toISOString();
    const second = await (await newRun(e)).create({
      source: textAsset(`second ${Math.random()}`),
      name: "second.txt",
      retainUntil: sameInstant,
      __urn: urn("second"),
    });
    const third = await (await newRun(e)).create({ blobId: adopted, retainUntil: sameInstant, __urn: urn("third") });
    for (const created of [first, second, third]) expect(entry(e, String(created.outs.blobId)).endEpoch).toBe(end);
    expect([first, second, third].map((c) => c.outs.retainUntil)).toEqual([until, sameInstant, sameInstant]);
    // The first bought the 8 epochs to the end, the second 3 epochs later 5, each uploaded for one
    // (no answer had shown the epoch's length) and renewed to the date; the adopted file was
    // stored until 3 epochs short of it, and only those were bought.
    expect(
      e
        .requests()
        .filter((r) => r.route === "upload")
        .map((r) => (r.requestBody as { epochs?: unknown }).epochs),
    ).toEqual(["1", "1"]);
    expect([first, second].map((c) => entry(e, String(c.outs.blobId))).map((f) => f.uploadEpochs + f.epochsBought)).toEqual([8, 5]);
    expect(entry(e, adopted).epochsBought).toBe(3);
  });

  it("with retentionEpochs too, the later end counts; moving the date earlier buys nothing", async () => {
    const e = await start();
    const until = await dateBefore(e, 4);
    const start0 = e.currentEpoch();
    const p = await newRun(e);
    const { outs } = await p.create({ source: textAsset(`both ${Math.random()}`), name: "b.txt", retentionEpochs: 6, retainUntil: until, __urn: urn("b") });
    expect(entry(e, String(outs.blobId)).endEpoch).toBe(start0 + 6);
    const later = await dateBefore(e, 9);
    e.clearRequests();
    const raised = await (await newRun(e)).update(String(outs.blobId), outs, { ...inputsOf(outs), retainUntil: later });
    // No answer has shown the stack the epoch's length: 1 epoch first, its record read, then the rest.
    expect(e.requests().map((r) => [r.route, r.requestBody])).toEqual([
      ["get", undefined],
      ["renew", { epochs: 1 }],
      ["get", undefined],
      ["renew", { epochs: 2 }],
    ]);
    expect(entry(e, String(outs.blobId)).endEpoch).toBe(start0 + 9);
    e.clearRequests();
    const lowered = await (await newRun(e)).update(String(outs.blobId), raised.outs, { ...inputsOf(raised.outs), retainUntil: until });
    expect(e.requests()).toEqual([]);
    expect(lowered.outs.retainUntil).toBe(until);
  });

  for (const idempotency of ["honour", "ignore"] as IdempotencyMode[]) {
    it(`a raise of retainUntil killed after the service applied it converges on the next run (keys ${idempotency === "honour" ? "honoured" : "ignored"})`, async () => {
      const e = await start(idempotency);
      const blobId = (await e.uploadFile({ content: `killed ${Math.random()}`, filename: "k.txt", epochs: 2 })).blobId;
      // Adopted while the length is not known: 1 epoch bought to learn it (2 days left might be less than 2 longer epochs).
      const { outs } = await (await newRun(e)).create({ blobId, retentionEpochs: 2, __urn: urn("k") });
      expect(entry(e, blobId).epochsBought).toBe(1);
      const until = await dateBefore(e, 7);
      const end = e.currentEpoch() + 7;
      e.setFaults({ script: [{ route: "renew", fault: "apply-then-hang" }] });
      void (await newRun(e)).update(blobId, outs, { blobId, retentionEpochs: 2, retainUntil: until, __urn: urn("k") }).catch(() => undefined);
      await vi.waitFor(() => expect(e.inFlight().some((r) => r.route === "renew" && r.held)).toBe(true), { timeout: 10_000, interval: 20 });
      e.setFaults({});
      // The length is known from the adoption: the raise is one renew, applied before the kill.
      expect(entry(e, blobId).endEpoch).toBe(end);
      // The engine still holds the state of before the killed update.
      const { outs: after } = await (await newRun(e)).update(blobId, outs, { blobId, retentionEpochs: 2, retainUntil: until, __urn: urn("k") });
      expect(after.retainUntil).toBe(until);
      // Bought once: the 4 epochs from the expiry after adoption to the date (and the one that learnt the length).
      expect(entry(e, blobId)).toMatchObject({ endEpoch: end, epochsBought: 5 });
    });
  }

  it("check: a date past the horizon, an impossible day or a time without its zone fail before any request, naming the field", async () => {
    const e = await start();
    const p = await newRun(e);
    const far = new Date(Date.now() + 60 * e.epochSeconds * 1000).toISOString();
    for (const [retainUntil, reason] of [
      [
        far,
        /retainUntil must be at most 52 epochs from now \(got .*, 60\.00 epochs from now\): the service sells at most 53 epochs ahead\. Declare \S+ or earlier$/,
      ],
      ["2027-02-30", /retainUntil must be an ISO 8601 date/],
      ["2027-01-31T12:00:00", /retainUntil must be an ISO 8601 date .*got "2027-01-31T12:00:00"/],
      [20270131, /retainUntil must be a string/],
    ] as const) {
      const { failures } = await p.check({}, { blobId: "Xk3q9vH2s7nR0dLw1pY4bC8eF5gJ6mA2tU9zQ0oI1sE", retainUntil, __urn: urn("far") });
      expect(failures).toEqual([{ property: "retainUntil", reason: expect.stringMatching(reason) }]);
    }
    expect(e.requests()).toEqual([]);
  });

  it("check: a date in the last epoch before the horizon counted from now fails at preview, secret or not, before any request", async () => {
    // The service counts its 53 epochs from the start of its current epoch, so now + 52.5 epochs
    // is out of reach for the half of every epoch that is past its middle.
    const e = await start();
    const p = await newRun(e);
    const latest = Date.now() + 52 * e.epochSeconds * 1000;
    const until = new Date(Date.now() + 52.5 * e.epochSeconds * 1000).toISOString();
    const failures = (await p.check({}, { blobId: "Xk3q9vH2s7nR0dLw1pY4bC8eF5gJ6mA2tU9zQ0oI1sE", retainUntil: until, __urn: urn("gap") })).failures ?? [];
    expect(failures).toEqual([{ property: "retainUntil", reason: expect.stringMatching(/must be at most 52 epochs from now .*52\.50 epochs from now/) }]);
    const named = Date.parse(/Declare (\S+) or earlier$/.exec(failures[0].reason)![1]);
    expect(Math.abs(named - latest)).toBeLessThan(5_000);
    // As a secret: neither the date nor how far it is, nor the property (the engine would print its value).
    const secret =
      (await p.check({}, { blobId: "Xk3q9vH2s7nR0dLw1pY4bC8eF5gJ6mA2tU9zQ0oI1sE", retainUntil: until, __urn: urn("gap"), __secretInputs: ["retainUntil"] }))
        .failures ?? [];
    expect(secret).toHaveLength(1);
    expect(secret[0].property).toBe("");
    expect(secret[0].reason).toMatch(/^retainUntil \(a secret input\): retainUntil must be at most 52 epochs from now: .*Declare \S+ or earlier/);
    // Not the date to the minute (the bound it names, counted from now, falls on the same day
    // when now is before noon UTC: a day alone would fail here half of every day).
    expect(secret[0].reason).not.toContain(until.slice(0, 16));
    expect(secret[0].reason).not.toContain("52.50");
    // A date declared before (by an earlier release, which took it) is not judged again: the
    // plan, which knows the file's epochs, says at preview if it cannot be reached.
    const kept =
      (
        await p.check(
          { blobId: "Xk3q9vH2s7nR0dLw1pY4bC8eF5gJ6mA2tU9zQ0oI1sE", retainUntil: until },
          { blobId: "Xk3q9vH2s7nR0dLw1pY4bC8eF5gJ6mA2tU9zQ0oI1sE", retainUntil: until, __urn: urn("gap") },
        )
      ).failures ?? [];
    expect(kept).toEqual([]);
    expect(e.requests()).toEqual([]);
  });

  it("an upload whose declared end the service cannot reach after all is recorded: its epochs are not bought again", async () => {
    // Epochs of 2 s, half of one gone: a date past the horizon of the current epoch, which a
    // create given it without its check (the engine always checks first) uploads and cannot renew to.
    const { e, epochStart } = await halfwayThroughAnEpoch(2);
    const until = new Date(epochStart + 53 * 2_000 + 500).toISOString();
    const source = textAsset(`beyond ${Math.random()}`);
    const p = await configuredProvider(e, { "tuskr:epochSeconds": "2" }, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
    const failed = await caught(p.create({ source, name: "b.txt", retainUntil: until, __urn: urn("b") }));
    expect(failed.message).toMatch(/the service sells at most 53, and the file has/);
    const uploaded = e.files().find((f) => f.name === "b.txt")!;
    // Uploaded for the epochs the set length counts to the date, 53; the renew of the rest is refused before it is sent.
    expect(uploaded.uploadEpochs).toBe(53);
    expect(e.requests().filter((r) => r.route === "renew")).toEqual([]);
    expect(failed.id).toBe(uploaded.blobId);
    expect(failed.properties).toMatchObject({ blobId: uploaded.blobId, expiresAt: expect.any(String) });
    expect(e.requests().filter((r) => r.route === "upload")).toHaveLength(1);
  });

  it("an upload to a date made mid-epoch is topped up by one renew, which the pull-request summary says it may add", async () => {
    // Epochs of 4 s, half of one gone: the upload's epochs, counted from now, end at a boundary
    // the service counts from its epoch's start, half an epoch short of the date.
    const { e, epochStart } = await halfwayThroughAnEpoch(4);
    const until = new Date(epochStart + 10 * 4_000 + 1_000).toISOString();
    const source = textAsset(`dated ${Math.random()}`);
    const md = summarizePreview(
      {
        config: { "tuskr:epochSeconds": "4" },
        steps: [{ op: "create", urn: urn("d"), newState: { type: STORED_FILE_TYPES.dynamic, inputs: { source, retainUntil: until } } }],
      },
      { nowMs: Date.now() },
    );
    const p = await configuredProvider(e, { "tuskr:epochSeconds": "4" }, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
    const { outs } = await p.create({ source, name: "d.txt", retainUntil: until, __urn: urn("d") });
    const stored = entry(e, String(outs.blobId));
    // Uploaded for the 10 epochs the set length counts from now, then the one the date still lacks.
    expect(e.requests().map((r) => [r.route, r.requestBody && (r.requestBody as { epochs?: unknown }).epochs])).toEqual([
      ["upload", "10"],
      ["get", undefined], // the upload's answer read back
      ["renew", 1],
    ]);
    expect(stored.uploadEpochs + stored.epochsBought).toBe(11);
    expect(Date.parse(String(outs.expiresAt))).toBeGreaterThanOrEqual(Date.parse(until));
    // The summary: the upload's 10, and the one more a renew may add.
    expect(md).toMatch(/\| `d` \| create \| .*to the `retainUntil` date: up to 1 more epoch, by a renew after the upload.* \| 10 \|/);
    expect(md).toMatch(/\*\*10 epoch\(s\) to buy\*\* \(.*up to 1 more by renews after uploads to a `retainUntil` date\)/);
  });

  it("keep-alive right after an upload: the summary counts the renew the create then makes", async () => {
    const e = await start();
    const source = textAsset(`kept ${Math.random()}`);
    const inputs = { source, retentionEpochs: 3, keepAlive: { minRemainingEpochs: 12, renewEpochs: 4 } };
    const md = summarizePreview({ steps: [{ op: "create", urn: urn("k"), newState: { type: STORED_FILE_TYPES.dynamic, inputs } }] }, { nowMs: Date.now() });
    const { outs } = await (await newRun(e)).create({ ...inputs, name: "k.txt", __urn: urn("k") });
    // The length not known: keep-alive's first epoch learns it (its record read), then the other 3.
    expect(e.requests().map((r) => [r.route, r.route === "renew" ? r.requestBody : (r.requestBody as { epochs?: unknown } | undefined)?.epochs])).toEqual([
      ["upload", "3"],
      ["get", undefined], // the upload's answer read back
      ["renew", { epochs: 1 }],
      ["get", undefined],
      ["renew", { epochs: 3 }],
    ]);
    expect(entry(e, String(outs.blobId))).toMatchObject({ uploadEpochs: 3, epochsBought: 4 });
    expect(md).toMatch(/\| `k` \| create \| .*keep-alive: buys 4 right after the upload \(too few epochs left\) \| 7 \(keep-alive 4\) \|/);
    expect(md).toMatch(/1 renew\(s\), \*\*7 epoch\(s\) to buy\*\*/);
  });

  it("a refresh hands the declared retainUntil back (no change at the next preview)", async () => {
    const e = await start();
    const until = await dateBefore(e, 3);
    const p = await newRun(e);
    const { id, outs } = await p.create({ source: textAsset(`refresh ${Math.random()}`), name: "r.txt", retainUntil: until, __urn: urn("r") });
    const read = await (await newRun(e)).read(id, outs);
    expect(read.inputs?.retainUntil).toBe(until);
    const diff = await (await newRun(e)).diff(id, read.props!, { ...read.inputs, __urn: urn("r") });
    expect(diff).toMatchObject({ changes: false, replaces: [] });
  });
});

/** The inputs a program declares, from a StoredFile's outputs (what an update is given). */
function inputsOf(outs: Record<string, unknown>): Record<string, unknown> {
  const { source, name, tag, metadata, retentionEpochs, retainUntil, keepAlive } = outs;
  return { source, name, tag, metadata, retentionEpochs, retainUntil, keepAlive, __urn: "urn:pulumi:dev::proj::x::y" };
}
