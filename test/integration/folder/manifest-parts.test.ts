import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, type Emulator, startEmulator } from "../../../emulator";
import { pathMap, pathText } from "../../../provider/folder/entries";
import { EngineStack } from "../../helpers/provider-driver";

/**
 * The TypeScript folder records its manifest among its inputs as one text, past 64 KiB in parts
 * (the SDK's protobuf writer holds a single long string 25 times over). A stack recorded with the
 * one text by an earlier release upgrades with no request and no change.
 */

const URN = "urn:pulumi:dev::proj::pulumi-nodejs:dynamic/tuskr:StoredFolder::site";
// Some 80 bytes a path in the manifest's text: past 64 KiB.
const FILES = 1000;
let emu: Emulator;
let dir: string;
let stack: EngineStack;
let declared: Record<string, unknown>;

beforeEach(async () => {
  emu = await startEmulator({ port: 0 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "manifest-parts-"));
  for (let i = 0; i < FILES; i++) fs.writeFileSync(path.join(dir, `f${String(i).padStart(4, "0")}.txt`), `file ${i}\n`);
  // The dynamic provider prints its notices, as the SDK's host shows them: not this test's concern.
  vi.spyOn(console, "log").mockImplementation(() => {});
  const { storedFolderProvider } = await import("../../../provider/dynamic/stored-folder-provider");
  await storedFolderProvider.configure({ config: { get: (k: string) => ({ "tuskr:apiKey": EMULATOR_DEFAULT_API_KEY, "tuskr:baseUrl": emu.url })[k] } });
  stack = new EngineStack(storedFolderProvider);
  declared = { path: dir, retentionEpochs: 2, __urn: URN };
});
afterEach(async () => {
  vi.restoreAllMocks();
  await emu.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const recordedManifest = () => stack.get("site")?.inputs.manifest;

it("a folder whose manifest text passes 64 KiB records it in parts, and an edit changes one part and sends one upload", async () => {
  expect((await stack.up({ site: declared })).steps.map((s) => s.outcome)).toEqual(["ok"]);
  const parts = recordedManifest() as Record<string, string>;
  expect(typeof parts).toBe("object");
  expect(Object.keys(parts).length).toBeGreaterThan(1);
  expect(Object.keys(pathMap(parts))).toHaveLength(FILES);

  emu.clearRequests();
  expect((await stack.up({ site: declared })).steps.map((s) => s.op)).toEqual(["same"]);
  expect(emu.requests()).toEqual([]);

  fs.writeFileSync(path.join(dir, "f0500.txt"), "edited\n");
  const { steps } = await stack.up({ site: declared });
  expect(steps.map((s) => [s.op, s.outcome])).toEqual([["update", "ok"]]);
  expect(emu.requests().map((r) => r.method)).toEqual(["POST", "GET"]);
  // One part changed, under its key (what the preview shows); the others as they were.
  const after = recordedManifest() as Record<string, string>;
  expect(Object.keys(after)).toEqual(Object.keys(parts));
  expect(Object.keys(after).filter((key) => after[key] !== parts[key])).toHaveLength(1);
});

it("a stack whose manifest an earlier release recorded as one text: the next up sends nothing and changes nothing, and records the parts", async () => {
  await stack.up({ site: declared });
  const now = stack.get("site")!;
  // As the release before recorded it: the whole manifest one text.
  stack.record("site", { ...now, inputs: { ...now.inputs, manifest: pathText(pathMap(now.inputs.manifest)) } });
  expect(typeof recordedManifest()).toBe("string");

  emu.clearRequests();
  const { steps } = await stack.up({ site: declared });
  expect(steps.map((s) => s.op)).toEqual(["same"]);
  expect(emu.requests()).toEqual([]);
  expect(typeof recordedManifest()).toBe("object");
  expect(pathMap(recordedManifest())).toEqual(pathMap(now.inputs.manifest));
});
