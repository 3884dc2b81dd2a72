import { createHash } from "node:crypto";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type Emulator, startEmulator } from "../../../emulator";
import { expiryReport } from "../../../provider/cli/expiry";
import type { StoredFileProvider } from "../../../provider/dynamic/stored-file-provider";
import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { STORED_FILE_TYPES, formatUrn } from "../../../provider/engine/urns";
import { KEY } from "../../helpers/emulator";
import { rewritingProxy } from "../../helpers/hostile-service";
import { configuredProvider } from "../../helpers/provider-fixture";
import { EngineStack, type StepRecord } from "../../helpers/provider-driver";

/**
 * Ends counted in the service's own epochs, whatever their length: an emulator started with an
 * epoch of an hour, 86,000 s, 86,400 s or two weeks, the provider left at its default setting
 * (86,400 s). The first `up` buys at most what is declared, unchanged ups buy nothing, a raise
 * buys exactly the difference, and an answer that contradicts the setting is said, naming it.
 */

const DAY = 86_400;
const urn = (name: string) => formatUrn({ stack: "dev", project: "proj", type: STORED_FILE_TYPES.dynamic, name });
const textAsset = (text: string) => ({
  [SIG_KEY]: ASSET_SIG,
  text,
  hash: createHash("sha256").update(text).digest("hex"),
});
type Props = Record<string, any>;

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
  vi.restoreAllMocks();
});

async function start(epochSeconds: number): Promise<Emulator> {
  emu = await startEmulator({ port: 0, epochSeconds });
  return emu;
}
/** A new provider process, as each `pulumi up` starts one, at the default epoch setting. */
const newRun = (e: Emulator): Promise<StoredFileProvider> => configuredProvider(e, {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
const entry = (e: Emulator, blobId: string) => e.files().find((f) => f.blobId === blobId)!;
/** Epochs bought on the file in all: its upload's and its renews'. */
const bought = (e: Emulator, blobId: string) => entry(e, blobId).uploadEpochs + entry(e, blobId).epochsBought;
const renews = (e: Emulator) =>
  e
    .requests()
    .filter((r) => r.route === "renew")
    .map((r) => (r.requestBody as { epochs: number }).epochs);
/** What the provider printed (the dynamic provider's warnings go to stdout). */
function printed(): string[] {
  const lines: string[] = [];
  vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
  return lines;
}

/** A stack whose every command starts a new provider process (`newRun`): test/helpers/provider-driver.ts drives it. */
const stackOn = (e: Emulator) => new EngineStack(() => newRun(e));
/** Every up here goes through, and none replaces the file: its end is bought on the one entry. */
function expectApplied(steps: StepRecord[]): void {
  expect(steps.filter((s) => s.outcome === "failed" || s.outcome === "partial")).toEqual([]);
  expect(steps.flatMap((s) => s.diff?.replaces ?? [])).toEqual([]);
}
/** One `pulumi up` (with `--refresh`: read first) of the stack's one file, `f`, declared as `inputs`; its state after. */
async function up(stack: EngineStack, inputs: Props, refresh = false): Promise<Props> {
  expectApplied((await stack.up({ f: inputs }, { refresh })).steps);
  return stack.get("f")!.state;
}

const LENGTHS: Array<[string, number]> = [
  ["an hour", 3600],
  ["86,000 s", 86_000],
  ["86,400 s", DAY],
  ["two weeks", 14 * DAY],
];

describe.each(LENGTHS)("a service whose epoch is %s, the provider at its default tuskr:epochSeconds", (_label, seconds) => {
  it("the first up buys what is declared, unchanged ups buy nothing, a raise buys exactly the difference (1 first to learn the length), the next in one renew", async () => {
    const e = await start(seconds);
    const lines = printed();
    const inputs = { source: textAsset(`epoch ${seconds} ${Math.random()}`), name: "f.txt", retentionEpochs: 6, __urn: urn("f") };
    const stack = stackOn(e);
    let state = await up(stack, inputs);
    const id = stack.get("f")!.id;
    expect(bought(e, id)).toBe(6);
    expect(entry(e, id).endEpoch - entry(e, id).startEpoch).toBe(6);
    for (let round = 1; round <= 4; round++) {
      await e.advanceEpochs(1);
      state = await up(stack, inputs, round % 2 === 1);
    }
    expect(renews(e)).toEqual([]);
    expect(bought(e, id)).toBe(6);

    state = await up(stack, { ...inputs, retentionEpochs: 8 });
    expect(renews(e)).toEqual([1, 1]);
    expect(bought(e, id)).toBe(8);
    expect(state.__epochMsSeen).toBe(seconds * 1000);
    for (let round = 1; round <= 2; round++) state = await up(stack, { ...inputs, retentionEpochs: 8 }, round === 1);
    expect(renews(e)).toEqual([1, 1]);
    expect(state.retentionEpochs).toBe(8);
    // The length is the stack's now (kept in its state): a later raise, in a new process, is one renew.
    state = await up(stack, { ...inputs, retentionEpochs: 11 });
    expect(renews(e)).toEqual([1, 1, 3]);
    expect(entry(e, id).endEpoch - entry(e, id).startEpoch).toBe(11);

    const said = lines.filter((l) => l.includes("tuskr:epochSeconds"));
    // Said once, however many ups: the purchase that learns the length, and (not a day) the length learnt.
    expect(said.filter((l) => l.includes("not known to this stack"))).toHaveLength(1);
    const learnt = said.filter((l) => l.includes("(a renew's answer)"));
    if (seconds === DAY) expect(learnt).toEqual([]);
    else
      expect(learnt).toEqual([
        expect.stringMatching(new RegExp(`the service's epoch is .*\\b${seconds} s\\b.*not a day.*pulumi config set tuskr:epochSeconds ${seconds}`)),
      ]);
  });
});

describe.each(LENGTHS)("a retainUntil date on a service whose epoch is %s, the provider at its default setting", (_label, seconds) => {
  it("the first up ends the file at the first boundary past the date, no later; unchanged ups buy nothing", async () => {
    const e = await start(seconds);
    const until = new Date(Date.now() + (seconds === 3600 ? 10 * 3600 : seconds > DAY ? 20 * DAY : 10 * DAY) * 1000).toISOString();
    const inputs = { source: textAsset(`dated ${seconds} ${Math.random()}`), name: "d.txt", retainUntil: until, __urn: urn("d") };
    const stack = stackOn(e);
    const expires = Date.parse(String((await up(stack, inputs)).expiresAt));
    const id = stack.get("f")!.id;
    expect(expires).toBeGreaterThanOrEqual(Date.parse(until));
    expect(expires).toBeLessThan(Date.parse(until) + seconds * 1000);
    const after = bought(e, id);
    e.clearRequests();
    for (let round = 1; round <= 3; round++) await up(stack, inputs, round !== 2);
    expect(renews(e)).toEqual([]);
    expect(bought(e, id)).toBe(after);
  });
});

describe("once an answer has shown the length, every count is in it", () => {
  it("an hour's epoch, shown by a renew: a retainUntil date is counted in hours, bought in one renew", async () => {
    const e = await start(3600);
    const lines = printed();
    const inputs = { source: textAsset(`hours ${Math.random()}`), name: "h.txt", retentionEpochs: 2, __urn: urn("h") };
    const stack = stackOn(e);
    await up(stack, inputs);
    let state = await up(stack, { ...inputs, retentionEpochs: 3 });
    expect(lines.join("\n")).toMatch(/the service's epoch is 3600 s \(a renew's answer\), not a day/);
    expect(state.__epochMsSeen).toBe(3_600_000);
    // The expiry alarm counts its epochs left in hours too (the setting would say 1).
    const exported = { version: 3, deployment: { resources: [{ urn: urn("h"), type: STORED_FILE_TYPES.dynamic, custom: true, outputs: state }] } };
    expect(expiryReport(exported, { withinEpochs: 1 }).rows.map((r) => [r.epochsLeft, r.alarm])).toEqual([[3, false]]);
    const until = new Date(Date.parse(state.expiresAt) + 5.5 * 3_600_000).toISOString();
    e.clearRequests();
    state = await up(stack, { ...inputs, retentionEpochs: 3, retainUntil: until });
    expect(renews(e)).toEqual([6]);
    expect(Date.parse(state.expiresAt)).toBeGreaterThanOrEqual(Date.parse(until));
    expect(Date.parse(state.expiresAt)).toBeLessThan(Date.parse(until) + 3_600_000);
  });

  it("two weeks' epoch, no answer yet showing it: a date buys one epoch first, then what its answer shows is lacking", async () => {
    const e = await start(14 * DAY);
    const blobId = (await e.uploadFile({ content: `weeks ${Math.random()}`, filename: "w.txt", epochs: 1 })).blobId;
    const stack = stackOn(e);
    const expires = Date.parse(String((await up(stack, { blobId, __urn: urn("w") })).expiresAt));
    // 20 days past the expiry: two of the service's epochs, twenty of the setting's.
    const until = new Date(expires + 20 * DAY * 1000).toISOString();
    e.clearRequests();
    await up(stack, { blobId, retainUntil: until, __urn: urn("w") });
    expect(renews(e)).toEqual([1, 1]);
    expect(entry(e, blobId).epochsBought).toBe(2);
  });
});

describe("one service, one epoch: what one file's answers showed counts for the others", () => {
  it("two weeks' epoch shown by one file's renew: another file adopted, and one uploaded to a date, in the same up are counted in it", async () => {
    const e = await start(14 * DAY);
    const first = { source: textAsset(`shown ${Math.random()}`), name: "a.txt", retentionEpochs: 2, __urn: urn("a") };
    const stack = stackOn(e);
    expectApplied((await stack.up({ a: first })).steps);
    expectApplied((await stack.up({ a: { ...first, retentionEpochs: 3 } })).steps);
    expect(stack.get("a")!.state.__epochMsSeen).toBe(14 * DAY * 1000);
    // A file stored for one epoch (less than two weeks left: more than a day's epochs by the setting).
    const adopted = (await e.uploadFile({ content: `adopted ${Math.random()}`, filename: "b.txt", epochs: 1 })).blobId;
    const until = new Date(Date.now() + 40 * DAY * 1000).toISOString();
    e.clearRequests();
    // The next `up`: one provider process diffs the file the stack holds, then creates the new ones.
    const { steps } = await stack.up({
      a: { ...first, retentionEpochs: 3 },
      b: { blobId: adopted, retentionEpochs: 3, __urn: urn("b") },
      c: { source: textAsset(`dated ${Math.random()}`), name: "c.txt", retainUntil: until, __urn: urn("c") },
    });
    expectApplied(steps);
    expect(steps.map((s) => [s.name, s.op])).toEqual([
      ["a", "same"],
      ["b", "create"],
      ["c", "create"],
    ]);
    // 3 epochs from the start of this one: 2 more than the adopted file has.
    expect(entry(e, adopted).epochsBought).toBe(2);
    expect(stack.get("b")!.state.__retentionStartEpochs).toBe(3);
    // Uploaded for the 3 epochs that reach the date, in one request.
    expect(
      e
        .requests()
        .filter((r) => r.route === "upload")
        .map((r) => (r.requestBody as { epochs?: unknown }).epochs),
    ).toEqual(["3"]);
    expect(renews(e)).toEqual([2]);
    const cExpires = Date.parse(String(stack.get("c")!.state.expiresAt));
    expect(cExpires).toBeGreaterThanOrEqual(Date.parse(until));
    expect(cExpires).toBeLessThan(Date.parse(until) + 14 * DAY * 1000);
  });
});

describe("a state the previous release wrote (no epoch counts) upgrades in place", () => {
  for (const seconds of [DAY, 3600]) {
    it(`against a service whose epoch is ${seconds} s: nothing sent at preview, nothing bought or replaced unchanged, a raise of 1 buys 1`, async () => {
      const e = await start(seconds);
      const inputs = { source: textAsset(`legacy ${seconds} ${Math.random()}`), name: "l.txt", retentionEpochs: 3, __urn: urn("l") };
      const stack = stackOn(e);
      const outs = await up(stack, inputs);
      const id = stack.get("f")!.id;
      // What the previous release recorded: its retention start as milliseconds after createdAt, the
      // start of the epoch of the upload as its setting's grid put it; no epoch counts, no length.
      const { __retentionStartEpochs: _s, __epochMsSeen: _seen, __epochMsAtLeast: _least, __epochMsBelow: _below, ...rest } = outs;
      // Its start: the start of the epoch of the upload, on the grid of the upload's expiry in its setting's epochs.
      const uploadedTo = Date.parse(String(outs.expiresAt));
      const startMs = uploadedTo - Math.ceil((uploadedTo - Date.now()) / (DAY * 1000)) * DAY * 1000;
      // Against an hour's epoch it also bought the 2 epochs its 1-day grid said the upload lacked.
      if (seconds !== DAY) {
        const res = await fetch(`${e.url}/v1/files/${encodeURIComponent(id)}/renew`, {
          method: "POST",
          headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
          body: JSON.stringify({ epochs: 2 }),
        });
        expect(res.status).toBe(200);
      }
      const file = entry(e, id);
      const expiresAt = file.expiresAt;
      const previous: Props = { ...rest, expiresAt, __retentionStartAfterCreated: startMs - Date.parse(file.createdAt) };
      const before = bought(e, id);
      e.clearRequests();
      const provider = await newRun(e);
      expect(await provider.diff(id, previous, inputs)).toMatchObject({ changes: false, replaces: [] });
      expect(e.requests()).toEqual([]);
      stack.record("f", { ...stack.get("f")!, state: previous });
      await up(stack, inputs, true);
      await up(stack, inputs);
      expect(renews(e)).toEqual([]);
      expect(bought(e, id)).toBe(before);
      const state = await up(stack, { ...inputs, retentionEpochs: 4 });
      expect(renews(e)).toEqual([1]);
      expect(state).not.toHaveProperty("__retentionStartAfterCreated");
      // Once the raise's answer shows the length, the start is counted in it from the upload's
      // epoch: at an hour, 3 uploaded, 2 bought by the release before, 1 now.
      expect(state.__retentionStartEpochs).toBe(seconds === DAY ? 4 : 6);
    });
  }
});

describe("two weeks' epoch, no answer showing it yet: a count the setting guessed and the service's horizon refutes buys what the service's epochs lack", () => {
  const WEEKS = 14 * DAY;
  /** Epochs the entry is stored for past the start of the current epoch. */
  const ahead = (e: Emulator, blobId: string) => entry(e, blobId).endEpoch - e.currentEpoch();
  const renewElsewhere = async (e: Emulator, blobId: string, epochs: number) => {
    const res = await fetch(`${e.url}/v1/files/${encodeURIComponent(blobId)}/renew`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ epochs }),
    });
    expect(res.status).toBe(200);
  };

  it("an adopted file with 5 epochs left, 8 declared: one epoch to learn the length, then the 2 lacking; unchanged ups buy nothing", async () => {
    const e = await start(WEEKS);
    const blobId = (await e.uploadFile({ content: `adopted ${Math.random()}`, filename: "a.txt", epochs: 5 })).blobId;
    const inputs = { blobId, retentionEpochs: 8, __urn: urn("a") };
    const stack = stackOn(e);
    const outs = await up(stack, inputs);
    expect(renews(e)).toEqual([1, 2]);
    expect(ahead(e, blobId)).toBe(8);
    expect(outs.__epochMsSeen).toBe(WEEKS * 1000);
    for (let round = 1; round <= 3; round++) await up(stack, inputs, round === 2);
    expect(renews(e)).toEqual([1, 2]);
  });

  it("content another party stored for 4 epochs, 8 declared by an upload answered 'already stored': the entry ends 8 epochs ahead", async () => {
    emu = await startEmulator({ port: 0, epochSeconds: WEEKS, duplicateUpload: "existing" });
    const e = emu;
    const text = `shared ${Math.random()}`;
    const blobId = (await e.uploadFile({ content: text, filename: "s.txt", epochs: 4 })).blobId;
    const inputs = { source: textAsset(text), name: "s.txt", retentionEpochs: 8, __urn: urn("s") };
    const stack = stackOn(e);
    await up(stack, inputs);
    expect(stack.get("f")!.id).toBe(blobId);
    expect(ahead(e, blobId)).toBe(8);
    expect(renews(e)).toEqual([1, 3]);
    await up(stack, inputs, true);
    expect(ahead(e, blobId)).toBe(8);
  });

  it("a renew made elsewhere on an adopted file, then a raise past it: the raise buys what the service's epochs lack", async () => {
    const e = await start(WEEKS);
    const blobId = (await e.uploadFile({ content: `moved ${Math.random()}`, filename: "m.txt", epochs: 3 })).blobId;
    const stack = stackOn(e);
    await up(stack, { blobId, retentionEpochs: 2, __urn: urn("m") });
    expect(renews(e)).toEqual([]);
    await renewElsewhere(e, blobId, 2);
    e.clearRequests();
    await up(stack, { blobId, retentionEpochs: 2, __urn: urn("m") }, true);
    expect(renews(e)).toEqual([]);
    await up(stack, { blobId, retentionEpochs: 7, __urn: urn("m") });
    expect(ahead(e, blobId)).toBe(7);
  });

  it("a state of the release before, raised from 4 to 6: buys the 2 the service's epochs lack", async () => {
    const e = await start(WEEKS);
    const inputs = { source: textAsset(`legacy weeks ${Math.random()}`), name: "l.txt", retentionEpochs: 4, __urn: urn("l") };
    const stack = stackOn(e);
    const outs = await up(stack, inputs);
    const id = stack.get("f")!.id;
    const { __retentionStartEpochs: _s, __epochMsSeen: _seen, __epochMsAtLeast: _least, __epochMsBelow: _below, __retentionStartMomentMs: _m, ...rest } = outs;
    const uploadedTo = Date.parse(String(outs.expiresAt));
    const startMs = uploadedTo - Math.ceil((uploadedTo - Date.now()) / (DAY * 1000)) * DAY * 1000;
    const file = entry(e, id);
    const previous: Props = { ...rest, expiresAt: file.expiresAt, __retentionStartAfterCreated: startMs - Date.parse(file.createdAt) };
    e.clearRequests();
    stack.record("f", { ...stack.get("f")!, state: previous });
    await up(stack, inputs, true);
    expect(renews(e)).toEqual([]);
    await up(stack, { ...inputs, retentionEpochs: 6 });
    expect(ahead(e, id)).toBe(6);
    expect(renews(e)).toEqual([1, 1]);
  });

  it("an adopted file with 2 epochs left (28 days, more than 6 a day's), 6 declared: 1 epoch learns the length, then the 3 lacking; said once; unchanged ups buy nothing", async () => {
    const e = await start(WEEKS);
    const lines = printed();
    const blobId = (await e.uploadFile({ content: `unconfirmed ${Math.random()}`, filename: "u.txt", epochs: 2 })).blobId;
    const stack = stackOn(e);
    const inputs = { blobId, retentionEpochs: 6, __urn: urn("u") };
    const outs = await up(stack, inputs);
    expect(renews(e)).toEqual([1, 3]);
    expect(ahead(e, blobId)).toBe(6);
    expect(outs.__epochMsSeen).toBe(WEEKS * 1000);
    for (let round = 1; round <= 2; round++) await up(stack, inputs, round === 1);
    expect(renews(e)).toEqual([1, 3]);
    const said = lines.join("\n");
    expect(said.match(/not known to this stack/g)).toHaveLength(1);
    expect(said.match(/the service's epoch is 14 days \(1209600 s\) \(a renew's answer\), not a day/g)).toHaveLength(1);
  });

  for (const mode of ["existing", "refuse"] as const) {
    it(`content a first stack uploaded for 3, a second stack declaring 6 (${mode}): the entry ends 6 epochs ahead`, async () => {
      emu = await startEmulator({ port: 0, epochSeconds: WEEKS, duplicateUpload: mode });
      const e = emu;
      printed();
      const text = `two stacks ${mode} ${Math.random()}`;
      const first = stackOn(e);
      await up(first, { source: textAsset(text), name: "t.txt", retentionEpochs: 3, __urn: urn("t") });
      const blobId = first.get("f")!.id;
      expect(ahead(e, blobId)).toBe(3);
      const second = stackOn(e);
      await up(second, { source: textAsset(text), name: "t.txt", retentionEpochs: 6, __urn: urn("t2") });
      expect(second.get("f")!.id).toBe(blobId);
      expect(ahead(e, blobId)).toBe(6);
      for (let round = 1; round <= 2; round++) await up(second, { source: textAsset(text), name: "t.txt", retentionEpochs: 6, __urn: urn("t2") }, round === 1);
      expect(ahead(e, blobId)).toBe(6);
      expect(entry(e, blobId).epochsBought).toBe(3);
    });
  }
});

describe("a count from a start guessed at adoption buys one epoch to learn the length, then the rest in it", () => {
  const CASES: Array<[string, number, string | undefined, number, number, number[]]> = [
    ["an hour's epoch, the setting unset", 3600, undefined, 10, 20, [1, 9]],
    ["an hour's epoch, the setting unset", 3600, undefined, 20, 30, [1, 9]],
    ["a day's epoch, the setting a day (the stack's word: no epoch to learn it)", DAY, String(DAY), 3, 10, [7]],
  ];
  for (const [label, seconds, setting, had, declared, bought] of CASES) {
    it(`${label}: an adopted file with ${had} epochs left, ${declared} declared, ends ${declared} epochs ahead; unchanged ups buy nothing`, async () => {
      const e = await start(seconds);
      printed();
      const blobId = (await e.uploadFile({ content: `guessed ${Math.random()}`, filename: "g.txt", epochs: had })).blobId;
      const run = () => configuredProvider(e, setting ? { "tuskr:epochSeconds": setting } : {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
      const inputs = { blobId, retentionEpochs: declared, __urn: urn("g") };
      const { outs } = await (await run()).create(inputs);
      // The guess alone would have bought its whole count in one renew (19, 29, 9).
      expect(renews(e)).toEqual(bought);
      expect(entry(e, blobId).endEpoch - e.currentEpoch()).toBe(declared);
      expect(outs.__epochMsSeen).toBe(seconds * 1000);
      let state = outs as Props;
      for (let round = 1; round <= 2; round++) {
        const provider = await run();
        const olds = round === 1 ? ((await provider.read(blobId, state)).props as Props) : state;
        if ((await provider.diff(blobId, olds, inputs)).changes) state = (await provider.update(blobId, olds, inputs)).outs as Props;
      }
      expect(renews(e)).toEqual(bought);
    });
  }

  it("an hour's epoch: content another stack uploaded for 10 epochs, 20 declared by an upload answered 'already stored', ends 20 epochs ahead", async () => {
    emu = await startEmulator({ port: 0, epochSeconds: 3600, duplicateUpload: "existing" });
    const e = emu;
    printed();
    const text = `shared hours ${Math.random()}`;
    const first = await (await newRun(e)).create({ source: textAsset(text), name: "s.txt", retentionEpochs: 10, __urn: urn("s") });
    // The stack that uploaded it counts in epochs from its upload: a raise is one renew.
    await (await newRun(e)).update(first.id, first.outs, { source: textAsset(text), name: "s.txt", retentionEpochs: 12, __urn: urn("s") });
    expect(renews(e)).toEqual([1, 1]);
    e.clearRequests();
    const second = await (await newRun(e)).create({ source: textAsset(text), name: "s.txt", retentionEpochs: 20, __urn: urn("s2") });
    expect(second.id).toBe(first.id);
    expect(renews(e)).toEqual([1, 7]);
    expect(entry(e, first.id).endEpoch - e.currentEpoch()).toBe(20);
  });
});

describe("one renew's answer is not the service's epoch on its word alone", () => {
  it("an answer moving the expiry 3 days more than the 2 epochs bought, on a file whose upload bounds the epoch: not learnt, said, read back", async () => {
    const e = await start(DAY);
    let lie = true;
    const proxy = await rewritingProxy(e.url, {
      json: (method, path, status, body) => {
        if (!(lie && method === "POST" && path.endsWith("/renew") && status === 200)) return body;
        lie = false;
        const record = body as Props;
        return { ...record, expiresAt: new Date(Date.parse(record.expiresAt) + 3 * DAY * 1000).toISOString() };
      },
    });
    const lines = printed();
    try {
      const run = () => configuredProvider(proxy, {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
      const inputs = { source: textAsset(`shifted ${Math.random()}`), name: "s.txt", retentionEpochs: 3, __urn: urn("s") };
      const { id, outs } = await (await run()).create(inputs);
      const raised = (await (await run()).update(id, outs, { ...inputs, retentionEpochs: 5 })).outs as Props;
      // The service's record, read back, shows what moved: a day per epoch, and the true expiry.
      expect(raised.__epochMsSeen).toBe(DAY * 1000);
      expect(raised.expiresAt).toBe(entry(e, id).expiresAt);
      expect(lines.join("\n")).toMatch(/the renew's answer said expiresAt \S+, the file's record says \S+: the record counts/);
      expect(lines.join("\n")).not.toMatch(/the service's epoch is 216000 s/);
    } finally {
      await proxy.close();
    }
  });
});

describe("a length learnt however the answer came, and corrected by a shorter one", () => {
  const crashRun = (e: Emulator) => configuredProvider(e, {}, { timeoutMs: 400, retry: { baseDelayMs: 1, maxDelayMs: 5 } });

  for (const idempotency of ["honour", "ignore"] as const) {
    it(`two weeks' epoch: the renew bought to learn it is applied and its answer lost, the read-back shows it; the file ends at its declared end (keys ${idempotency === "honour" ? "honoured" : "ignored"})`, async () => {
      emu = await startEmulator({ port: 0, epochSeconds: 14 * DAY, idempotency });
      const e = emu;
      printed();
      const blobId = (await e.uploadFile({ content: `probe lost ${Math.random()}`, filename: "p.txt", epochs: 4 })).blobId;
      e.setFaults({ script: [{ route: "renew", fault: "apply-then-hang" }] });
      const inputs = { blobId, retentionEpochs: 8, __urn: urn("p") };
      const crashed = new EngineStack(() => crashRun(e));
      // The create goes through, or fails with what it did recorded (a partial failure): either way the stack holds the file.
      const [created] = (await crashed.up({ f: inputs })).steps;
      expect(["ok", "partial"]).toContain(created.outcome);
      e.setFaults({});
      const stack = crashed.fork(() => newRun(e));
      for (let round = 1; round <= 2; round++) await up(stack, inputs, round === 1);
      expect(entry(e, blobId).endEpoch - e.currentEpoch()).toBe(8);
    });
  }

  it("an hour's epoch, keys echoed by another file's answer in the same up: no proof; b's renew, its answer lost, is not resent", async () => {
    const e = await start(3600);
    printed();
    const a = (await e.uploadFile({ content: `a ${Math.random()}`, filename: "a.txt", epochs: 1 })).blobId;
    const b = (await e.uploadFile({ content: `b ${Math.random()}`, filename: "b.txt", epochs: 1 })).blobId;
    // b's read waits until a's renew has echoed its key; then b's first renew is applied and its answer lost.
    e.setFaults({
      script: [
        { route: "get", blobId: b, fault: "latency", latencyMs: 300 },
        { route: "renew", blobId: b, fault: "apply-then-drop" },
      ],
    });
    const provider = await newRun(e);
    const [, made] = await Promise.allSettled([
      provider.create({ blobId: a, retentionEpochs: 2, __urn: urn("a") }),
      provider.create({ blobId: b, retentionEpochs: 8, __urn: urn("b") }),
    ]);
    // b counts in the length a's renew showed, so its renew is read back exactly; or it stays unknown.
    if (made.status === "rejected") expect(String(made.reason)).toMatch(/RENEW_OUTCOME_UNKNOWN|may or may not have been applied/);
    else expect(entry(e, b).endEpoch - e.currentEpoch()).toBe(8);
    expect(e.requests().filter((r) => r.route === "renew" && r.blobId === b)).toHaveLength(1);
  });

  it("an hour's epoch: the 1 epoch bought first answered as a replay of another request shows no length; the rest is not bought on the guess, the up fails, the next buys it", async () => {
    const e = await start(3600);
    printed();
    const blobId = (await e.uploadFile({ content: `replayed ${Math.random()}`, filename: "r.txt", epochs: 1 })).blobId;
    let claim = true;
    const proxy = await rewritingProxy(e.url, {
      headers: (method, path, status) => {
        if (!(claim && method === "POST" && path.endsWith("/renew") && status === 200)) return undefined;
        claim = false;
        return { "Idempotent-Replayed": "true" };
      },
    });
    try {
      const run = () => configuredProvider(proxy, {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
      const inputs = { blobId, retentionEpochs: 8, __urn: urn("r") };
      const failed = await (await run()).create(inputs).then(
        () => undefined,
        (err: Error & { properties?: Props }) => err,
      );
      expect(failed?.message).toMatch(/bought to learn the service's epoch showed no length, so nothing more is bought on a guess; run `pulumi up` again/);
      expect(renews(e)).toEqual([1]);
      await (await run()).update(blobId, failed!.properties!, inputs);
      expect(renews(e)).toEqual([1, 1, 5]);
      expect(entry(e, blobId).endEpoch - e.currentEpoch()).toBe(8);
    } finally {
      await proxy.close();
    }
  });

  it("a length recorded longer than the service's (another purchase lengthened a move): the next renew's shorter move is taken", async () => {
    const e = await start(DAY);
    const lines = printed();
    const blobId = (await e.uploadFile({ content: `longer ${Math.random()}`, filename: "l.txt", epochs: 3 })).blobId;
    const stack = stackOn(e);
    const outs = await up(stack, { blobId, retentionEpochs: 3, __urn: urn("l") });
    stack.record("f", { ...stack.get("f")!, state: { ...outs, __epochMsSeen: 1.5 * DAY * 1000 } });
    const raised = await up(stack, { blobId, retentionEpochs: 5, __urn: urn("l") });
    expect(raised.__epochMsSeen).toBe(DAY * 1000);
    expect(lines.join("\n")).toMatch(
      /the service's epoch is 1 day \(86400 s\) \(a renew's answer\), shorter than the 129600 s recorded before .*counted in the shorter/,
    );
  });

  it("an hour's epoch, a count guessed in days that the service would refuse past its horizon: one epoch learns the length, the rest is counted in it", async () => {
    const e = await start(3600);
    printed();
    const blobId = (await e.uploadFile({ content: `hours ${Math.random()}`, filename: "h.txt", epochs: 30 })).blobId;
    await (await newRun(e)).create({ blobId, retentionEpochs: 40, __urn: urn("h") });
    expect(entry(e, blobId).endEpoch - e.currentEpoch()).toBe(40);
    // The guess (38) is not sent: a count from a guessed start buys 1 first, then the 9 lacking.
    expect(renews(e)).toEqual([1, 9]);
  });
});

describe("a lost answer never costs an epoch", () => {
  // An uploaded file raised from 2 to 10: the renews the raise sends (1 to learn the length, then
  // 7), one of them applied and its answer lost; the next `up` reads and ends the file at 10.
  for (const seconds of [3600, 14 * DAY]) {
    for (const idempotency of ["honour", "ignore"] as const) {
      for (const lost of [0, 1]) {
        it(`${seconds} s epochs, keys ${idempotency === "honour" ? "honoured" : "ignored"}: the ${lost === 0 ? "first" : "second"} renew's answer lost`, async () => {
          emu = await startEmulator({ port: 0, epochSeconds: seconds, idempotency });
          const e = emu;
          printed();
          const inputs = { source: textAsset(`lost ${seconds} ${idempotency} ${lost} ${Math.random()}`), name: "l.txt", retentionEpochs: 2, __urn: urn("l") };
          const stack = stackOn(e);
          await up(stack, inputs);
          const id = stack.get("f")!.id;
          const pass = { route: "renew" as const, fault: "latency" as const, latencyMs: 0 };
          e.setFaults({ script: [...(lost === 1 ? [pass] : []), { route: "renew", fault: "apply-then-drop" }] });
          const raised = { ...inputs, retentionEpochs: 10 };
          // It goes through, or fails with what it did recorded: either way the stack holds the file.
          const [step] = (await stack.up({ f: raised })).steps;
          expect(step.outcome).not.toBe("failed");
          e.setFaults({});
          for (let round = 1; round <= 2; round++) expectApplied((await stack.up({ f: raised }, { refresh: round === 1 })).steps);
          expect(entry(e, id).endEpoch - entry(e, id).startEpoch).toBe(10);
          expect(bought(e, id)).toBe(10);
        });
      }
    }
  }
});

describe("a create killed after its uploads were applied, the length not known", () => {
  for (const idempotency of ["honour", "ignore"] as const) {
    it(`keys ${idempotency === "honour" ? "honoured: the replay is each file's own upload, nothing more bought" : "ignored: the stored entries are taken over, and at most 1 epoch of one file learns the length, said once"}`, async () => {
      emu = await startEmulator({ port: 0, idempotency, duplicateUpload: "existing" });
      const e = emu;
      const lines = printed();
      const declared = {
        a: { source: textAsset(`killed a ${Math.random()}`), name: "a.txt", retentionEpochs: 4, __urn: urn("a") },
        b: { source: textAsset(`killed b ${Math.random()}`), name: "b.txt", retentionEpochs: 2, __urn: urn("b") },
      };
      // The killed run: both uploads applied, neither answered, nothing recorded.
      e.setFaults({
        script: [
          { route: "upload", fault: "apply-then-drop" },
          { route: "upload", fault: "apply-then-drop" },
        ],
      });
      const killed = stackOn(e);
      await killed.up(declared);
      e.setFaults({});
      const stack = stackOn(e);
      expectApplied((await stack.up(declared)).steps);
      for (let round = 1; round <= 2; round++) expectApplied((await stack.up(declared, { refresh: round === 1 })).steps);
      const ahead = (name: string) => e.files().find((f) => f.name === name)!.endEpoch - e.currentEpoch();
      const extra = ahead("a.txt") - 4 + (ahead("b.txt") - 2);
      expect(e.files()).toHaveLength(2);
      expect(extra).toBe(idempotency === "honour" ? 0 : 1);
      if (idempotency === "ignore") expect(lines.join("\n").match(/not known to this stack/g)).toHaveLength(1);
    });
  }
});

describe("a stack the previous release (0.1.0 before this change) made upgrades in place", () => {
  it("an uploaded file's state with the upload's bounds: nothing at preview, nothing bought unchanged; the bounds leave at the next write", async () => {
    const e = await start(DAY);
    printed();
    const inputs = { source: textAsset(`previous ${Math.random()}`), name: "p.txt", retentionEpochs: 3, __urn: urn("p") };
    const stack = stackOn(e);
    const outs = await up(stack, inputs);
    const id = stack.get("f")!.id;
    // What the release before recorded for it: its retention start counted, and the bounds the upload's answer showed.
    const { __epochMsSeen: _seen, ...rest } = outs;
    const previous: Props = { ...rest, __retentionStartEpochs: 3, __epochMsAtLeast: DAY * 1000 * 0.9, __epochMsBelow: DAY * 1000 * 1.4 };
    stack.record("f", { ...stack.get("f")!, state: previous });
    e.clearRequests();
    expect(await (await newRun(e)).diff(id, previous, inputs)).toMatchObject({ changes: false, replaces: [] });
    expect(e.requests()).toEqual([]);
    await up(stack, inputs, true);
    await up(stack, inputs);
    expect(renews(e)).toEqual([]);
    expect(e.requests().map((r) => r.route)).toEqual(["get"]);
    expect(bought(e, id)).toBe(3);
    const refreshed = stack.get("f")!.state;
    expect(refreshed).not.toHaveProperty("__epochMsAtLeast");
    expect(refreshed).not.toHaveProperty("__epochMsBelow");
  });
});
