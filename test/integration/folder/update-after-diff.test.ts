import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, type Emulator, startEmulator } from "../../../emulator";
import { noticeLine } from "../../../provider/engine/notice";
import { SECRET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { StoredFilePlugin } from "../../../provider/plugin/provider";
import { EngineStack } from "../../helpers/provider-driver";
import { StoredFileCore } from "../../../provider/file/core";
import { StoredFolderCore, type StoredFolderRequest, stepDigest } from "../../../provider/folder/core";
import { validatedInputs } from "../../../provider/folder/inputs";
import { recordedManifest, unpackEntries } from "../../../provider/folder/entries";
import type { StoredFolderState } from "../../../provider/folder/schema";

/**
 * The engine calls a folder's diff, then its update, with the same olds and news: the update
 * carries the entries that diff found as declared instead of planning each again (at 100,000
 * files, seconds). Olds or news other than the diff's are planned whole.
 */

const URN = "urn:pulumi:dev::proj::tuskr:index:StoredFolder::site";
const FILES = 20;
let emu: Emulator;
let dir: string;
let logs: string[];
let files: StoredFileCore;
let core: StoredFolderCore;

beforeEach(async () => {
  emu = await startEmulator({ port: 0 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "update-after-diff-"));
  for (let i = 0; i < FILES; i++) fs.writeFileSync(path.join(dir, `f${i}.txt`), `file ${i}\n`);
  logs = [];
  files = new StoredFileCore({ retry: { baseDelayMs: 1, maxDelayMs: 5 } }, (n) => void logs.push(noticeLine(n)));
  const e = emu;
  files.configure({ get: (k: string) => ({ "tuskr:apiKey": EMULATOR_DEFAULT_API_KEY, "tuskr:baseUrl": e.url })[k] } as never);
  core = new StoredFolderCore(files, (n) => void logs.push(noticeLine(n)));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await emu.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const checked = (olds: object, declared: Record<string, unknown>) => {
  const out = core.check(() => olds, validatedInputs({ path: dir, retentionEpochs: 2, ...declared }, []), [], URN);
  expect(out.failures).toEqual([]);
  return { inputs: out.inputs, urn: URN, secretInputs: [] as string[] };
};

/** A front door's diff and update: each sends the step's digest of the olds and news it was given. */
const diff = (id: string, state: StoredFolderState, req: StoredFolderRequest) => core.diff(id, state, { ...req, sent: stepDigest(state, req) });
const update = (id: string, state: StoredFolderState, req: StoredFolderRequest, before = () => state) =>
  core.update(id, before, { ...req, sent: stepDigest(state, req) });

/** How many recorded entries the update plans (through the planner `changeTeller` makes), of `files` or of every StoredFileCore. */
function countPlans(of: StoredFileCore = files): () => number {
  const planned = new Set<object>();
  const teller = StoredFileCore.prototype.changeTeller;
  vi.spyOn(of, "changeTeller").mockImplementation(function (this: StoredFileCore) {
    const tell = teller.call(this);
    return (...args) => {
      planned.add(args[0]);
      return tell(...args);
    };
  });
  return () => planned.size;
}

it("one file edited of 20: the update after its diff plans none of the 19 unchanged again, and sends one upload and its read-back", async () => {
  const plain = checked({}, {});
  const created = await core.create(plain);
  fs.writeFileSync(path.join(dir, "f3.txt"), "edited\n");
  const req = checked(plain.inputs, {});
  expect(diff(created.id, created.state, req).changes).toBe(true);
  const planned = countPlans();
  emu.clearRequests();
  // The recorded state is not even read: the diff's verdicts hold every recorded entry it needs.
  const before = vi.fn(() => created.state);
  const updated = await update(created.id, created.state, req, before);
  expect(before).not.toHaveBeenCalled();
  expect(planned()).toBe(0);
  expect(emu.requests().map((r) => r.method)).toEqual(["POST", "GET"]);
  // Nothing else is dropped or changed: the next diff finds nothing to do.
  expect(diff(created.id, updated, checked(req.inputs, {})).changes).toBe(false);
  expect(Object.keys(updated.blobIds ?? {})).toHaveLength(FILES);
});

it("an update whose news are not the diff's (a tag the diff did not see) plans every entry: 20 PATCHes", async () => {
  const plain = checked({}, {});
  const created = await core.create(plain);
  expect(diff(created.id, created.state, checked(plain.inputs, {})).changes).toBe(false);
  const tagged = checked(plain.inputs, { tag: "release-2" });
  const planned = countPlans();
  emu.clearRequests();
  const before = vi.fn(() => created.state);
  const updated = await update(created.id, created.state, tagged, before);
  expect(before).toHaveBeenCalledTimes(1);
  expect(planned()).toBe(FILES);
  expect(emu.requests().filter((r) => r.method === "PATCH")).toHaveLength(FILES);
  expect(diff(created.id, updated, checked(tagged.inputs, { tag: "release-2" })).changes).toBe(false);
});

it("an update whose olds are not the diff's (another recorded state) plans every entry", async () => {
  const plain = checked({}, {});
  const created = await core.create(plain);
  const tagged = checked(plain.inputs, { tag: "release-2" });
  diff(created.id, created.state, tagged);
  const withTag = await update(created.id, created.state, tagged);
  // The diff of the next step is made on `withTag`; an update handed the older state must not take its verdicts.
  expect(diff(created.id, withTag, tagged).changes).toBe(false);
  const planned = countPlans();
  emu.clearRequests();
  await update(created.id, created.state, tagged);
  expect(planned()).toBe(FILES);
  // Each entry read before its PATCH, found tagged already by the update before: nothing sent twice.
  expect(emu.requests().map((r) => r.method)).toEqual(Array(FILES).fill("GET"));
});

it("a diff older than a minute is not taken: its update plans every entry", async () => {
  const plain = checked({}, {});
  const created = await core.create(plain);
  fs.writeFileSync(path.join(dir, "f3.txt"), "edited again\n");
  const req = checked(plain.inputs, {});
  const now = Date.now();
  diff(created.id, created.state, req);
  vi.spyOn(Date, "now").mockReturnValue(now + 61_000);
  const planned = countPlans();
  await update(created.id, created.state, req);
  // Every recorded entry but the edited file's (a new content: uploaded, nothing to plan).
  expect(planned()).toBe(FILES - 1);
});

it("two folders diffed before either is updated: each update carries its own folder's verdicts", async () => {
  const other = fs.mkdtempSync(path.join(os.tmpdir(), "update-after-diff-b-"));
  for (let i = 0; i < FILES; i++) fs.writeFileSync(path.join(other, `g${i}.txt`), `other ${i}\n`);
  const urnB = `${URN}-b`;
  const checkedB = (olds: object) => {
    const out = core.check(() => olds, validatedInputs({ path: other, retentionEpochs: 2 }, []), [], urnB);
    expect(out.failures).toEqual([]);
    return { inputs: out.inputs, urn: urnB, secretInputs: [] as string[] };
  };
  const inA = checked({}, {});
  const inB = checkedB({});
  const a = await core.create(inA);
  const b = await core.create(inB);
  fs.writeFileSync(path.join(dir, "f1.txt"), "edited a\n");
  fs.writeFileSync(path.join(other, "g1.txt"), "edited b\n");
  const reqA = checked(inA.inputs, {});
  const reqB = checkedB(inB.inputs);
  diff(a.id, a.state, reqA);
  diff(b.id, b.state, reqB);
  const planned = countPlans();
  await update(a.id, a.state, reqA);
  await update(b.id, b.state, reqB);
  expect(planned()).toBe(0);
  fs.rmSync(other, { recursive: true, force: true });
});

/** A folder on a service of short epochs (the setting says the same length), its core, and its files' ends. */
async function shortEpochs(epochSeconds: number) {
  await emu.close();
  emu = await startEmulator({ port: 0, epochSeconds });
  const e = emu;
  files = new StoredFileCore({ retry: { baseDelayMs: 1, maxDelayMs: 5 } }, (n) => void logs.push(noticeLine(n)));
  const settings: Record<string, string> = { "tuskr:apiKey": EMULATOR_DEFAULT_API_KEY, "tuskr:baseUrl": e.url, "tuskr:epochSeconds": String(epochSeconds) };
  files.configure({ get: (k: string) => settings[k] } as never);
  core = new StoredFolderCore(files, (n) => void logs.push(noticeLine(n)));
}
const ends = (state: StoredFolderState) =>
  [...unpackEntries(state.entries, { manifest: recordedManifest(state), blobIds: state.blobIds ?? {}, urls: state.urls ?? {} }).values()].map((x) =>
    Date.parse(String(x.expiresAt)),
  );
/** Moves the clock `shiftMs` ahead of the real one, for the provider's every reading of it. */
const shiftClock = (shiftMs: number) => {
  const real = Date.now.bind(Date);
  vi.spyOn(Date, "now").mockImplementation(() => real() + shiftMs);
};

/** A folder created as `declared`, one file edited, and the diff of that edit made now (`t0`). */
async function editedThenDiffed(declared: Record<string, unknown>) {
  const plain = checked({}, declared);
  const created = await core.create(plain);
  fs.writeFileSync(path.join(dir, "f3.txt"), "edited\n");
  const req = checked(plain.inputs, declared);
  const t0 = Date.now();
  expect(diff(created.id, created.state, req).changes).toBe(true);
  return { created, req, t0 };
}

it("a keep-alive that falls due between the diff and its update: every entry due is renewed, not carried as the diff judged it", async () => {
  await shortEpochs(30);
  const declared = { keepAlive: { minRemainingEpochs: 2, renewEpochs: 3 } };
  const { created, req, t0 } = await editedThenDiffed(declared);
  // Just past the moment the untouched files have fewer than 2 epochs left (within the minute a verdict is kept).
  const shift = Math.min(...ends(created.state)) - t0 - 30_000 + 500;
  expect(shift).toBeGreaterThan(0);
  expect(shift).toBeLessThan(60_000);
  shiftClock(shift);
  emu.clearRequests();
  const updated = await update(created.id, created.state, req);
  expect(emu.requests().filter((r) => r.route === "renew")).toHaveLength(FILES);
  expect(diff(created.id, updated, checked(req.inputs, declared)).changes).toBe(false);
});

it("an entry that expires between the diff and its update is uploaded again, not carried as stored", async () => {
  await shortEpochs(20);
  const declared = { retentionEpochs: 1 };
  const { created, req, t0 } = await editedThenDiffed(declared);
  const shift = Math.max(...ends(created.state)) - t0 + 500;
  expect(shift).toBeLessThan(60_000);
  shiftClock(shift);
  emu.clearRequests();
  await update(created.id, created.state, req);
  // Each content sent again, as an update without the diff before it does (not one upload: the edited file's).
  expect(emu.requests().filter((r) => r.route === "upload")).toHaveLength(FILES);
});

describe("through each front door, as the engine calls it (each call's olds and news a copy off the wire)", () => {
  const program = { path: "", retentionEpochs: 2 };
  const stacks = {
    dynamic: async () => {
      // The dynamic provider prints its notices, as the SDK's host shows them: not this test's concern.
      vi.spyOn(console, "log").mockImplementation(() => {});
      const { storedFolderProvider } = await import("../../../provider/dynamic/stored-folder-provider");
      await storedFolderProvider.configure({ config: { get: (k: string) => ({ "tuskr:apiKey": EMULATOR_DEFAULT_API_KEY, "tuskr:baseUrl": emu.url })[k] } });
      return { stack: new EngineStack(storedFolderProvider), declared: { ...program, path: dir, __urn: URN } };
    },
    plugin: async () => {
      const plugin = new StoredFilePlugin(() => {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
      await plugin.configure({ apiKey: { [SIG_KEY]: SECRET_SIG, value: EMULATOR_DEFAULT_API_KEY }, baseUrl: emu.url });
      return { stack: new EngineStack({ plugin: plugin.folder, urn: URN }), declared: { ...program, path: dir } };
    },
  };
  for (const [door, open] of Object.entries(stacks)) {
    it(`${door}: one file edited of 20, the update after its diff plans none of the 19 unchanged`, async () => {
      const { stack, declared } = await open();
      expect((await stack.up({ site: declared })).steps.map((s) => s.outcome)).toEqual(["ok"]);
      fs.writeFileSync(path.join(dir, "f3.txt"), "edited\n");
      const planned = countPlans(StoredFileCore.prototype);
      emu.clearRequests();
      const { steps } = await stack.up({ site: declared });
      expect(steps.map((s) => [s.op, s.outcome])).toEqual([["update", "ok"]]);
      expect(planned()).toBe(0);
      expect(emu.requests().map((r) => r.method)).toEqual(["POST", "GET"]);
    });
  }
});
