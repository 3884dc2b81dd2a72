import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { DUPLICATE_UPLOAD_MODES, type Emulator, startEmulator } from "../../../emulator";
import { releaseArgs } from "../../../examples/gitops/release";
import { StoredFolder } from "../../../provider/dynamic/stored-folder";
import { StoredFileProvider } from "../../../provider/dynamic/stored-file-provider";
import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { noticeLine } from "../../../provider/engine/notice";
import { folderRegistrations } from "../../helpers/folder-program";
import { configureProvider } from "../../helpers/provider-fixture";
import { EngineStack, type StepRecord } from "../../helpers/provider-driver";

/**
 * examples/gitops as its workflow runs it: staging then production, `pulumi up --refresh` each,
 * daily, against one service with one key. Both stacks upload the same files/, and the service
 * keeps one entry per content, so both stacks' StoredFiles are the same two entries. The folder
 * is the real StoredFolder with the example's declaration (examples/gitops/release.ts) and each
 * stack's Pulumi.<stack>.yaml; the engine is test/helpers/provider-driver.ts's model, one
 * provider per stack as the engine runs one per stack.
 */

const example = path.resolve(__dirname, "../../../examples/gitops");
const STACKS = ["staging", "production"] as const;
type StackName = (typeof STACKS)[number];

/** The stack's config values for the program, as `Pulumi.<stack>.yaml` commits them. */
function stackConfig(stack: StackName) {
  const config = (parse(fs.readFileSync(path.join(example, `Pulumi.${stack}.yaml`), "utf8")) as { config: Record<string, unknown> }).config;
  const value = (key: string) => config[`tuskr-gitops:${key}`];
  return {
    retentionEpochs: value("retentionEpochs") as number,
    keepAlive: value("keepAlive") as { minRemainingEpochs: number; renewEpochs: number } | undefined,
    settings: Object.fromEntries(
      Object.entries(config)
        .filter(([k]) => k.startsWith("tuskr:"))
        .map(([k, v]) => [k, String(v)]),
    ),
  };
}

/** What the example's program registers in `stack`: each StoredFile's name and inputs, `source` in the engine's wire form. */
async function declared(stack: StackName): Promise<Map<string, Record<string, unknown>>> {
  const { settings: _, ...values } = stackConfig(stack);
  return folderRegistrations(
    "tuskr-gitops",
    stack,
    () => new StoredFolder("release", { ...releaseArgs(values), path: path.join(example, "files") }),
    (name) => `urn:pulumi:${stack}::tuskr-gitops::release$${name}`,
  );
}

/** An up that went through: every check passed, no step failed, and none replaced a file (each content keeps its entry). */
function expectApplied(steps: StepRecord[]): void {
  expect(steps.flatMap((s) => s.failures ?? [])).toEqual([]);
  expect(steps.filter((s) => s.outcome === "failed" || s.outcome === "partial")).toEqual([]);
  expect(steps.flatMap((s) => s.diff?.replaces ?? [])).toEqual([]);
}

// What a second upload of stored bytes does is not documented: the stacks converge under each behaviour the emulator offers.
describe.each(DUPLICATE_UPLOAD_MODES)("examples/gitops: two stacks, one service, one key (a second upload: %s)", (duplicateUpload) => {
  let emu: Emulator;
  beforeAll(async () => {
    emu = await startEmulator({ port: 0, duplicateUpload });
  });
  afterAll(async () => {
    await emu?.close();
  });

  it("after the first round (staging, then production), no round PATCHes an entry or says it was changed elsewhere", async () => {
    const logged: string[] = [];
    const stacks = new Map<StackName, EngineStack>();
    for (const stack of STACKS) {
      const provider = new StoredFileProvider({}, (notice) => logged.push(`${stack}: ${noticeLine(notice)}`));
      await configureProvider(provider, emu, stackConfig(stack).settings);
      stacks.set(stack, new EngineStack(provider));
    }
    // `pulumi up --refresh` of each stack in turn.
    const round = async () => {
      for (const stack of STACKS) expectApplied((await stacks.get(stack)!.up(await declared(stack), { refresh: true })).steps);
    };
    await round();
    // Both stacks hold the same two entries: one per content.
    const entries = (stack: StackName) =>
      stacks
        .get(stack)!
        .entries()
        .map(([, r]) => r.id)
        .sort();
    expect(entries("staging")).toHaveLength(2);
    expect(entries("production")).toEqual(entries("staging"));
    emu.clearRequests();
    logged.length = 0;
    // The daily schedule: an epoch passes between rounds.
    for (let day = 0; day < 4; day++) {
      await emu.advanceEpochs(1);
      await round();
    }
    const writes = emu.requests().filter((r) => r.method !== "GET");
    expect(writes.filter((r) => r.route === "patch" || r.method === "PATCH")).toEqual([]);
    expect(writes.filter((r) => r.route === "upload")).toEqual([]);
    expect(logged.filter((l) => /changed outside|differs from/.test(l))).toEqual([]);
    // Each entry is kept until the latest end a stack declares (production's).
    for (const file of emu.files()) expect(file.endEpoch).toBeGreaterThanOrEqual(stackConfig("production").retentionEpochs);
  });
});

describe("two stacks declaring different values for one content", () => {
  let emu: Emulator;
  beforeAll(async () => {
    emu = await startEmulator({ port: 0 });
  });
  afterAll(async () => {
    await emu?.close();
  });

  it("once a value comes back after an up set it back, the refresh says another stack declares it, naming the value", async () => {
    const logged: string[] = [];
    const text = `shared ${Math.random()}`;
    // The asset as the engine sends it, with its hash: without one each diff would see new content.
    const hash = createHash("sha256").update(text).digest("hex");
    const declaration = (tag: string) => ({ source: { [SIG_KEY]: ASSET_SIG, text, hash }, tag, retentionEpochs: 2 });
    const stacks = await Promise.all(
      (["blue", "green"] as const).map(async (tag) => {
        const provider = new StoredFileProvider({}, (notice) => logged.push(`${tag}: ${noticeLine(notice)}`));
        await configureProvider(provider, emu, {});
        return { tag, stack: new EngineStack(provider) };
      }),
    );
    // `pulumi up --refresh` of each stack in turn: the other stack's value is read back, then set back.
    for (let round = 0; round < 3; round++) {
      for (const { tag, stack } of stacks) {
        const { steps } = await stack.up({ f: { ...declaration(tag), __urn: `urn:pulumi:${tag}::p::pulumi-nodejs:dynamic:Resource::f` } }, { refresh: true });
        expectApplied(steps);
        expect(steps.at(-1)?.op).toBe(round === 0 ? "create" : "update");
      }
    }
    const said = (stack: string) => logged.filter((l) => l.startsWith(`${stack}:`) && /another stack declares it/.test(l));
    expect(said("blue").at(-1)).toMatch(/tag is "green" again after this stack's last up set "blue"/);
    expect(said("green").at(-1)).toMatch(/tag is "blue" again after this stack's last up set "green"/);
    // The first difference each stack meets is not yet another declaration: it may be a hand edit.
    expect(logged.find((l) => /differs from what this stack set/.test(l))).toBeDefined();
  });
});
