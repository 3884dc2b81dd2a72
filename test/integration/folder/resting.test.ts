import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, type Emulator, startEmulator } from "../../../emulator";
import { StoredFolderCore } from "../../../provider/folder/core";
import { RESTING } from "../../../provider/folder/resting";
import { EngineStack } from "../../helpers/provider-driver";
import { SECRET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { STORED_FOLDER_TYPES } from "../../../provider/engine/urns";

/**
 * A write after which nothing is left to do records that verdict (folder/resting.ts): the next
 * diff of the unchanged folder takes it and reads no entry. A changed file, a state changed since,
 * or time that may change an entry's plan (its epochs left) makes the diff read every entry again.
 */

const URN = "urn:pulumi:dev::proj::pulumi-nodejs:dynamic/tuskr:StoredFolder::site";
const DAY = 86_400_000;
const secret = (value: unknown) => ({ [SIG_KEY]: SECRET_SIG, value });
let emu: Emulator;
let dir: string;
let stack: EngineStack;
let said: string[];

beforeEach(async () => {
  emu = await startEmulator({ port: 0 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "resting-"));
  for (let i = 0; i < 5; i++) fs.writeFileSync(path.join(dir, `f${i}.txt`), `file ${i}\n`);
  said = [];
  // The dynamic provider prints its notices, as the SDK's host shows them.
  vi.spyOn(console, "log").mockImplementation((line: unknown) => void said.push(String(line)));
  const { storedFolderProvider } = await import("../../../provider/dynamic/stored-folder-provider");
  await storedFolderProvider.configure({ config: { get: (k: string) => ({ "tuskr:apiKey": EMULATOR_DEFAULT_API_KEY, "tuskr:baseUrl": emu.url })[k] } });
  stack = new EngineStack(storedFolderProvider);
});
afterEach(async () => {
  vi.restoreAllMocks();
  await emu.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const declared = { path: "", retentionEpochs: 6, __urn: URN };
const program = () => ({ site: { ...declared, path: dir } });
/** Each diff that reads the entries (the core's); one that takes the recorded verdict does not call it. */
const fullDiffs = () => vi.spyOn(StoredFolderCore.prototype, "diff");

it("an unchanged folder's diff takes its last write's verdict: no entry read, nothing sent; an edit is read, planned and sent", async () => {
  await stack.up(program());
  expect(typeof stack.get("site")?.state[RESTING]).toBe("string");
  const diffs = fullDiffs();
  emu.clearRequests();
  expect((await stack.up(program())).steps.map((s) => s.op)).toEqual(["same"]);
  expect(diffs).not.toHaveBeenCalled();
  expect(emu.requests()).toEqual([]);

  fs.writeFileSync(path.join(dir, "f3.txt"), "edited\n");
  expect((await stack.up(program())).steps.map((s) => [s.op, s.outcome])).toEqual([["update", "ok"]]);
  expect(diffs).toHaveBeenCalledTimes(1);
  expect(emu.requests().map((r) => r.method)).toEqual(["POST", "GET"]);
  // The update recorded its own verdict.
  expect((await stack.up(program())).steps.map((s) => s.op)).toEqual(["same"]);
  expect(diffs).toHaveBeenCalledTimes(1);
});

it("once time may change an entry's plan, the diff reads the entries again and warns of their expiry", async () => {
  await stack.up(program());
  const diffs = fullDiffs();
  said = [];
  const at = Date.now();
  // Four epochs on, the files have two or three left: within the three the warning watches.
  vi.spyOn(Date, "now").mockReturnValue(at + 4 * DAY);
  expect((await stack.up(program())).steps.map((s) => s.op)).toEqual(["same"]);
  expect(diffs).toHaveBeenCalledTimes(1);
  expect(said.filter((line) => /expiring soon/.test(line))).toHaveLength(5);
});

it("a folder whose files expire soon: the verdict says what reading every entry says", async () => {
  // Two epochs stored, three the warning window: every diff warns of each file.
  const soon = { site: { ...declared, path: dir, retentionEpochs: 2 } };
  await stack.up(soon);
  const diffs = fullDiffs();
  said = [];
  await stack.up(soon);
  expect(diffs).not.toHaveBeenCalled();
  const fromVerdict = said;
  expect(fromVerdict.filter((line) => /expiring soon/.test(line))).toHaveLength(5);

  // The same state without its verdict: read whole, it says the same.
  const recorded = stack.get("site")!;
  const { [RESTING]: _, ...without } = recorded.state;
  stack.record("site", { ...recorded, state: without });
  said = [];
  await stack.up(soon);
  expect(diffs).toHaveBeenCalledTimes(1);
  expect(said).toEqual(fromVerdict);
});

it("a refresh that finds nothing changed keeps the verdict; a state changed otherwise is read whole", async () => {
  await stack.up(program());
  const diffs = fullDiffs();
  expect((await stack.up(program(), { refresh: true })).steps.map((s) => s.op)).toEqual(["read", "same"]);
  expect(diffs).not.toHaveBeenCalled();

  // A state edited by hand (one entry's expiry moved back): not what the verdict was made for.
  const recorded = stack.get("site")!;
  stack.record("site", { ...recorded, state: { ...recorded.state, earliestExpiresAt: "2020-01-01T00:00:00.000Z" } });
  await stack.up(program());
  expect(diffs).toHaveBeenCalledTimes(1);
});

it("a verdict holds only with the epoch facts it was made with, and from the moment it was made", async () => {
  const files = (await import("../../../provider/dynamic/stored-file-provider")).storedFileProvider.core;
  const core = new StoredFolderCore(files, () => {});
  const req = { inputs: core.check(() => ({}), { inputs: { path: dir, retentionEpochs: 6 }, failures: [] }, [], URN).inputs, urn: URN, secretInputs: [] };
  const { state } = await core.create(req);
  const resting = core.restingAfter(state, req)!;
  expect(resting.until).toBeGreaterThan(Date.now());
  expect(core.rests(resting, URN)).toBe(true);
  expect(core.rests({ ...resting, epochMs: resting.epochMs + 1000 }, URN)).toBe(false);
  expect(core.rests({ ...resting, epochKnown: !resting.epochKnown }, URN)).toBe(false);
  expect(core.rests({ ...resting, warnWithinEpochs: resting.warnWithinEpochs + 1 }, URN)).toBe(false);
  expect(core.rests({ ...resting, from: Date.now() + 60_000 }, URN)).toBe(false);
  expect(core.rests({ ...resting, until: Date.now() - 1 }, URN)).toBe(false);
});

it("the plugin's tuskr:index:StoredFolder records its verdict, secret, and takes it; a value marked secret anew is read and recorded", async () => {
  const { StoredFilePlugin } = await import("../../../provider/plugin/provider");
  const plugin = new StoredFilePlugin((notice) => void said.push(notice.text), { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
  await plugin.configure({ apiKey: secret(EMULATOR_DEFAULT_API_KEY), baseUrl: emu.url });
  const folder = new EngineStack({ plugin: plugin.folder, urn: `urn:pulumi:dev::proj::${STORED_FOLDER_TYPES.plugin}::site` });
  const declare = (tag: unknown) => ({ site: { path: dir, retentionEpochs: 6, tag } });
  await folder.up(declare("docs"));
  expect(folder.get("site")?.state[RESTING]).toEqual(secret(expect.any(String)));
  const diffs = fullDiffs();
  emu.clearRequests();
  expect((await folder.up(declare("docs"))).steps.map((s) => s.op)).toEqual(["same"]);
  expect(diffs).not.toHaveBeenCalled();
  expect((await folder.up(declare("docs"), { refresh: true })).steps.map((s) => s.op)).toEqual(["read", "same"]);
  expect(diffs).not.toHaveBeenCalled();

  // The same tag, now secret: the full diff finds the secret name to record.
  expect((await folder.up(declare(secret("docs")))).steps.map((s) => s.op)).toEqual(["update"]);
  expect(diffs).toHaveBeenCalledTimes(1);
  expect(emu.requests().filter((r) => r.method !== "GET")).toEqual([]);
  expect((await folder.up(declare(secret("docs")))).steps.map((s) => s.op)).toEqual(["same"]);
  expect(diffs).toHaveBeenCalledTimes(1);
});

it("the plugin's verdict is its URN's: under another name (an alias) its notices, which name the folder, are said anew", async () => {
  const { StoredFilePlugin } = await import("../../../provider/plugin/provider");
  const plugin = new StoredFilePlugin((notice) => void said.push(notice.text), { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
  await plugin.configure({ apiKey: secret(EMULATOR_DEFAULT_API_KEY), baseUrl: emu.url });
  const urnOf = (name: string) => `urn:pulumi:dev::proj::${STORED_FOLDER_TYPES.plugin}::${name}`;
  const declared = { path: dir, retentionEpochs: 6 };
  const checked = await plugin.folder.check(urnOf("site"), {}, declared);
  const { outs } = await plugin.folder.create(urnOf("site"), checked.inputs);
  const diffs = fullDiffs();
  await plugin.folder.diff(dir, urnOf("site"), outs, checked.inputs, checked.inputs);
  expect(diffs).not.toHaveBeenCalled();
  const renamed = await plugin.folder.check(urnOf("renamed"), checked.inputs, declared);
  await plugin.folder.diff(dir, urnOf("renamed"), outs, renamed.inputs, checked.inputs);
  expect(diffs).toHaveBeenCalledTimes(1);
});
