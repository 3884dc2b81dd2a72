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

/**
 * examples/gitops as its workflow runs it: staging then production, `pulumi up --refresh` each,
 * daily, against one service with one key. Both stacks upload the same files/, and the service
 * keeps one entry per content, so both stacks' StoredFiles are the same two entries. The folder
 * is the real StoredFolder with the example's declaration (examples/gitops/release.ts) and each
 * stack's Pulumi.<stack>.yaml; the engine is modelled as in folder-sequences.test.ts, one
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

interface Recorded {
  id: string;
  state: Record<string, unknown>;
  inputs: Record<string, unknown>;
}
const viaWire = <T>(v: T): T => JSON.parse(JSON.stringify(v));

/** `pulumi up --refresh` of one stack: each recorded resource read, then the program's resources checked, diffed and applied. */
async function upRefresh(provider: StoredFileProvider, stack: StackName, state: Map<string, Recorded>): Promise<void> {
  for (const [name, r] of state) {
    const read = await provider.read(r.id, viaWire(r.state));
    if (!read.props) state.delete(name);
    else state.set(name, { id: r.id, state: viaWire(read.props), inputs: viaWire({ ...r.inputs, ...read.inputs }) });
  }
  for (const [name, news] of await declared(stack)) {
    const before = state.get(name);
    const checked = await provider.check(viaWire(before?.inputs ?? {}), viaWire(news));
    expect(checked.failures ?? []).toEqual([]);
    const inputs = viaWire(checked.inputs);
    if (!before) {
      const { id, outs } = await provider.create(inputs);
      state.set(name, { id, state: viaWire(outs), inputs });
      continue;
    }
    const diff = await provider.diff(before.id, viaWire(before.state), inputs);
    expect(diff.replaces ?? []).toEqual([]);
    if (diff.changes) {
      const { outs } = await provider.update(before.id, viaWire(before.state), inputs);
      state.set(name, { id: before.id, state: viaWire(outs), inputs });
    } else {
      state.set(name, { ...before, inputs });
    }
  }
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
    const providers = new Map<StackName, StoredFileProvider>();
    const states = new Map<StackName, Map<string, Recorded>>();
    for (const stack of STACKS) {
      const provider = new StoredFileProvider({}, (notice) => logged.push(`${stack}: ${noticeLine(notice)}`));
      await configureProvider(provider, emu, stackConfig(stack).settings);
      providers.set(stack, provider);
      states.set(stack, new Map());
    }
    const round = async () => {
      for (const stack of STACKS) await upRefresh(providers.get(stack)!, stack, states.get(stack)!);
    };
    await round();
    // Both stacks hold the same two entries: one per content.
    const entries = (stack: StackName) => [...states.get(stack)!.values()].map((r) => r.id).sort();
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
    const declaration = (tag: string) => ({ source: { [SIG_KEY]: ASSET_SIG, text }, tag, retentionEpochs: 2 });
    const stacks = await Promise.all(
      (["blue", "green"] as const).map(async (tag) => {
        const provider = new StoredFileProvider({}, (notice) => logged.push(`${tag}: ${noticeLine(notice)}`));
        await configureProvider(provider, emu, {});
        return { tag, provider, recorded: undefined as Recorded | undefined };
      }),
    );
    const up = async (s: (typeof stacks)[number]) => {
      const news = { ...declaration(s.tag), __urn: `urn:pulumi:${s.tag}::p::pulumi-nodejs:dynamic:Resource::f` };
      if (!s.recorded) {
        const { id, outs } = await s.provider.create(viaWire(news));
        s.recorded = { id, state: viaWire(outs), inputs: news };
        return;
      }
      const read = await s.provider.read(s.recorded.id, viaWire(s.recorded.state));
      const { outs } = await s.provider.update(s.recorded.id, viaWire(read.props!), viaWire(news));
      s.recorded = { ...s.recorded, state: viaWire(outs) };
    };
    for (let round = 0; round < 3; round++) for (const s of stacks) await up(s);
    const said = (stack: string) => logged.filter((l) => l.startsWith(`${stack}:`) && /another stack declares it/.test(l));
    expect(said("blue").at(-1)).toMatch(/tag is "green" again after this stack's last up set "blue"/);
    expect(said("green").at(-1)).toMatch(/tag is "blue" again after this stack's last up set "green"/);
    // The first difference each stack meets is not yet another declaration: it may be a hand edit.
    expect(logged.find((l) => /differs from what this stack set/.test(l))).toBeDefined();
  });
});
