import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, type Emulator, startEmulator } from "../../../emulator";
import { SECRET_SIG, SIG_KEY, UNKNOWN } from "../../../provider/engine/markers";
import { noticeLine } from "../../../provider/engine/notice";
import { STORED_FOLDER_TYPES } from "../../../provider/engine/urns";
import { handedOverHashes, recordedManifest, unpackEntries } from "../../../provider/folder/entries";
import { partOf } from "../../../provider/folder/parts";
import { StoredFilePlugin } from "../../../provider/plugin/provider";
import { EngineStack } from "../../helpers/provider-driver";
import { reclaimAfter } from "../../../provider/folder/memory";
import { summarizePreview } from "../../../provider/cli/summary";

// What each phase counts toward the next full collection, seen (the collections themselves still made).
vi.mock("../../../provider/folder/memory", async (original) => {
  const real = await original<typeof import("../../../provider/folder/memory")>();
  return { ...real, reclaimAfter: vi.fn(real.reclaimAfter) };
});

/**
 * A folder kept as `parts` resources (the plugin's tuskr:index:StoredFolder, each part declared as
 * another language declares it) against the emulator: each content in one part, one walk shared by
 * the parts of a step, and a change that costs only the parts it touches.
 */

const urnOf = (name: string) => `urn:pulumi:dev::proj::${STORED_FOLDER_TYPES.plugin}::${name}`;
const secret = (value: unknown) => ({ [SIG_KEY]: SECRET_SIG, value });

let emu: Emulator;
let dir: string;
let logged: string[];
beforeEach(async () => {
  emu = await startEmulator({ port: 0 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-parts-"));
  logged = [];
});
afterEach(async () => {
  await emu.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function newPlugin(): Promise<StoredFilePlugin> {
  const plugin = new StoredFilePlugin((notice) => logged.push(noticeLine(notice)), { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
  await plugin.configure({ apiKey: secret(EMULATOR_DEFAULT_API_KEY), baseUrl: emu.url });
  return plugin;
}

const write = (rel: string, text: string) => {
  fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
  fs.writeFileSync(path.join(dir, rel), text);
};
const writes = () =>
  emu
    .requests()
    .map((r) => r.route)
    .filter((r) => r !== "get")
    .sort();

/** The program: the same folder as three parts, part i named `site<i>`. */
const program = (shared: Record<string, unknown> = {}) => new Map([0, 1, 2].map((part) => [`site${part}`, { path: dir, parts: 3, part, ...shared }]));

/** 40 files, each its own content, stored as 3 parts through the plugin; `declare(parts, part)` a part's inputs. */
async function fortyFilesInThreeParts() {
  for (let i = 0; i < 40; i++) write(`p${i}.html`, `<p>page ${i}</p>`);
  const plugin = await newPlugin();
  const declare = (parts: number, part: number) => ({ path: dir, retentionEpochs: 3, parts, part });
  const first = await Promise.all([0, 1, 2].map((part) => plugin.folder.check(urnOf(`site${part}`), {}, declare(3, part))));
  const recorded = await Promise.all(
    first.map(async ({ inputs }, part) => ({ inputs, outs: (await plugin.folder.create(urnOf(`site${part}`), inputs)).outs! })),
  );
  return { plugin, declare, recorded };
}

describe("StoredFolder in parts (the plugin's tuskr:index:StoredFolder)", () => {
  it("three parts keep each content once and every path among them; an edit updates only the parts it touches, with one upload", async () => {
    for (let i = 0; i < 30; i++) write(`p${i}.html`, `<p>page ${i % 24}</p>`);
    const stack = new EngineStack({ plugin: async () => (await newPlugin()).folder, urn: urnOf("site") });
    const first = await stack.up(program({ retentionEpochs: 2 }), { concurrent: true });
    expect(first.done).toBe(true);
    expect(first.steps.map((s) => [s.op, s.outcome])).toEqual(Array(3).fill(["create", "ok"]));
    // 30 paths, 24 contents: each uploaded once, by its one part.
    expect(writes()).toEqual(Array(24).fill("upload"));
    const manifests = [0, 1, 2].map((i) => recordedManifest(stack.get(`site${i}`)!.state));
    for (const m of manifests) expect(Object.keys(m).length).toBeGreaterThan(0);
    const paths = manifests.flatMap((m) => Object.keys(m));
    expect(paths.sort()).toEqual(Array.from({ length: 30 }, (_, i) => `p${i}.html`).sort());
    // Identical files share their part: p0 and p24 hold the same bytes.
    const holder = (rel: string) => manifests.findIndex((m) => rel in m);
    expect(holder("p24.html")).toBe(holder("p0.html"));

    emu.clearRequests();
    const same = await stack.up(program({ retentionEpochs: 2 }), { concurrent: true });
    expect(same.steps.map((s) => s.op)).toEqual(["same", "same", "same"]);
    expect(emu.requests()).toEqual([]);

    // p5 gets new bytes: its old content leaves its part, the new one joins its own part.
    write("p5.html", "<p>an edit</p>");
    emu.clearRequests();
    const edited = await stack.up(program({ retentionEpochs: 2 }), { concurrent: true });
    const touched = edited.steps.filter((s) => s.op !== "same").map((s) => s.name);
    expect(touched.length).toBeGreaterThanOrEqual(1);
    expect(touched.length).toBeLessThanOrEqual(2);
    expect(touched).toContain(`site${holder("p5.html")}`);
    expect(writes()).toEqual(["upload"]);
    const after = [0, 1, 2].map((i) => recordedManifest(stack.get(`site${i}`)!.state));
    expect(after.filter((m) => "p5.html" in m)).toHaveLength(1);
    expect(after.flatMap((m) => Object.keys(m))).toHaveLength(30);
  });

  it("a content that moves part keeps its entry: from one resource to 3 parts, then 4, epochs later, nothing is sent or bought", async () => {
    for (let i = 0; i < 40; i++) write(`p${i}.html`, `<p>page ${i}</p>`);
    const stack = new EngineStack({ plugin: async () => (await newPlugin()).folder, urn: urnOf("site0") });
    const bought = () => emu.files().reduce((n, f) => n + f.uploadEpochs + f.epochsBought, 0);
    const entriesOf = (names: string[]) =>
      new Map(
        names.flatMap((name) => {
          const state = stack.get(name)!.state;
          const byPath = (field: string) => state[field] as Record<string, string>;
          return [...unpackEntries(state.entries, { manifest: recordedManifest(state), blobIds: byPath("blobIds"), urls: byPath("urls") })];
        }),
      );
    const declare = (parts: number) =>
      parts === 1
        ? new Map([["site0", { path: dir, retentionEpochs: 3 }]])
        : new Map(Array.from({ length: parts }, (_, part) => [`site${part}`, { path: dir, retentionEpochs: 3, parts, part }]));
    expect((await stack.up(declare(1))).done).toBe(true);
    const stored = bought();
    const asStored = entriesOf(["site0"]);
    expect(asStored.size).toBe(40);

    for (const parts of [3, 4]) {
      await emu.advanceEpochs(1);
      emu.clearRequests();
      logged = [];
      // Stepped in order, as TypeScript's parts depend each on the one before.
      const run = await stack.up(declare(parts));
      expect(run.done).toBe(true);
      // The contents that left a part are recorded by their new one, as they were: no upload, no renew.
      expect(emu.requests()).toEqual([]);
      expect(bought()).toBe(stored);
      const names = Array.from({ length: parts }, (_, part) => `site${part}`);
      expect(entriesOf(names)).toEqual(asStored);
      for (const name of names.slice(1)) expect(Object.keys(recordedManifest(stack.get(name)!.state)).length).toBeGreaterThan(0);
    }
  });

  it("each part records the count of parts before the count last changed (TypeScript's parts read it to order themselves): kept by updates and refreshes while the count stays", async () => {
    for (let i = 0; i < 12; i++) write(`p${i}.html`, `<p>page ${i}</p>`);
    const stack = new EngineStack({ plugin: async () => (await newPlugin()).folder, urn: urnOf("site0") });
    const declare = (parts: number, tag = "a") =>
      parts === 1
        ? new Map([["site0", { path: dir, tag }]])
        : new Map(Array.from({ length: parts }, (_, part) => [`site${part}`, { path: dir, tag, parts, part }]));
    const counts = () => stack.entries().map(([name, r]) => [name, r.state.partsBefore]);
    expect((await stack.up(declare(1))).done).toBe(true);
    expect(counts()).toEqual([["site0", undefined]]);
    expect((await stack.up(declare(3))).done).toBe(true);
    // The lone resource was one part; the parts created with the count have none to say.
    expect(counts()).toEqual([
      ["site0", 1],
      ["site1", undefined],
      ["site2", undefined],
    ]);
    // Every part updated (a new tag), and refreshed, with the count as it was: each keeps what it recorded.
    expect((await stack.up(declare(3, "b"))).done).toBe(true);
    expect(writes()).toContain("patch");
    await stack.refresh();
    expect(counts()).toEqual([
      ["site0", 1],
      ["site1", undefined],
      ["site2", undefined],
    ]);
    expect((await stack.up(declare(4, "b"))).done).toBe(true);
    expect(counts()).toEqual([
      ["site0", 3],
      ["site1", 3],
      ["site2", 3],
      ["site3", undefined],
    ]);
  });

  it("a raise cut short twice before the new parts: the third `up` hands over what was dropped, nothing sent; a day later it is forgotten", async () => {
    const { declare, recorded } = await fortyFilesInThreeParts();
    const at = (part: number) => [dir, urnOf(`site${part}`)] as const;
    const type = STORED_FOLDER_TYPES.plugin;
    // A file of the first part removed in the same `up` is not handed over: it goes to no part.
    const removed = Object.entries(recordedManifest(recorded[0].outs)).find(([, hash]) => partOf(hash, 5) !== 0)!;
    fs.rmSync(path.join(dir, removed[0]));
    const handed = (outs: Record<string, unknown>) => unpackEntries((outs.handedOver as { value: string }).value, { manifest: {}, blobIds: {}, urls: {} });
    // The raise to 5: the first part is updated, then the process dies before any other part is stepped.
    const killed = await newPlugin();
    const first = await killed.folder.check(urnOf("site0"), recorded[0].inputs, declare(5, 0));
    await killed.folder.diff(...at(0), recorded[0].outs, first.inputs, recorded[0].inputs);
    // (The engine may send the update long after the check: the walk it made still says what the folder holds.)
    const later = Date.now() + 5 * 60_000;
    let clock = vi.spyOn(Date, "now").mockImplementation(() => later);
    const cut = (await killed.folder.update(...at(0), recorded[0].outs, first.inputs)).outs;
    clock.mockRestore();
    // Secret whatever the step declares: it holds the values earlier steps declared.
    expect(cut.handedOver).toEqual(secret(expect.any(String)));
    expect(Date.parse(String(cut.handedOverAt))).toBe(later);
    const dropped = handed(cut);
    expect(dropped.size).toBeGreaterThan(0);
    expect(dropped.has(removed[1])).toBe(false);
    // The next `up` dies too, after the second part: the first changes nothing and keeps what it handed over.
    const again = await newPlugin();
    const checked0 = await again.folder.check(urnOf("site0"), first.inputs, declare(5, 0));
    expect((await again.folder.diff(...at(0), cut, checked0.inputs, first.inputs)).changes).toBe(false);
    const checked1 = await again.folder.check(urnOf("site1"), recorded[1].inputs, declare(5, 1));
    expect((await again.folder.diff(...at(1), recorded[1].outs, checked1.inputs, recorded[1].inputs)).changes).toBe(true);
    const cut1 = (await again.folder.update(...at(1), recorded[1].outs, checked1.inputs)).outs;
    const dropped1 = handed(cut1);
    expect(dropped1.size).toBeGreaterThan(0);
    // The third `up`, in a new process, each part after the one before: the first two change nothing.
    const plugin = await newPlugin();
    emu.clearRequests();
    logged = [];
    const olds = [{ inputs: first.inputs, outs: cut }, { inputs: checked1.inputs, outs: cut1 }, recorded[2]];
    const outs: Record<string, unknown>[] = [];
    const steps: Array<Record<string, unknown>> = [];
    for (const part of [0, 1, 2, 3, 4]) {
      const checked = await plugin.folder.check(urnOf(`site${part}`), olds[part]?.inputs ?? {}, declare(5, part));
      const newState = { type, inputs: checked.inputs, dependencies: part > 0 ? [urnOf(`site${part - 1}`)] : [] };
      const urn = urnOf(`site${part}`);
      if (!olds[part]) {
        steps.push({ op: "create", urn, newState });
        outs.push((await plugin.folder.create(urn, checked.inputs)).outs!);
        continue;
      }
      const oldState = { type, inputs: olds[part].inputs, outputs: { ...olds[part].outs, ...(olds[part].outs.handedOver ? { handedOver: "[secret]" } : {}) } };
      const diff = await plugin.folder.diff(...at(part), olds[part].outs, checked.inputs, olds[part].inputs);
      expect(diff.changes).toBe(part === 2);
      steps.push({ op: diff.changes ? "update" : "same", urn, oldState, newState });
      outs.push(diff.changes ? (await plugin.folder.update(...at(part), olds[part].outs, checked.inputs)).outs : olds[part].outs);
    }
    expect(emu.requests()).toEqual([]);
    // Each dropped content is kept by one of the new parts, its entry as it was stored.
    const taken = new Map(
      [3, 4].flatMap((part) => [
        ...unpackEntries(outs[part].entries, {
          manifest: recordedManifest(outs[part]),
          blobIds: outs[part].blobIds as Record<string, string>,
          urls: outs[part].urls as Record<string, string>,
        }),
      ]),
    );
    for (const [hash, entry] of [...dropped, ...dropped1]) expect(taken.get(hash)?.createdAt).toBe(entry.createdAt);
    // The pull-request summary of that `up`, where the preview shows the handed-over entries as secret: the contents
    // the first two parts recorded as handed over are moved in, no upload, their epochs not counted.
    const md = summarizePreview({ steps });
    expect(md).not.toMatch(/upload\(s\)/);
    const movedIn = [...md.matchAll(/(\d+) content\(s\) moved in from another part/g)].reduce((n, m) => n + Number(m[1]), 0);
    expect(movedIn).toBe(taken.size);
    expect(md).toContain("epochs not counted: the entries it takes from another part are secret in the preview");
    // A state that recorded no contents handed over: those the new parts take are uploads at most.
    const unrecorded = steps.map((step) => {
      const { handedOverContents: _, ...outputs } = ((step.oldState as { outputs?: Record<string, unknown> } | undefined)?.outputs ?? {}) as Record<
        string,
        unknown
      >;
      return step.oldState ? { ...step, oldState: { ...(step.oldState as object), outputs } } : step;
    });
    const blind = summarizePreview({ steps: unrecorded });
    const atMost = [...blind.matchAll(/(\d+) upload\(s\) at most/g)].reduce((n, m) => n + Number(m[1]), 0);
    expect(atMost).toBe(dropped.size + dropped1.size);
    expect(blind).toContain("epochs not counted: another part hands over entries the preview keeps secret");
    // A day after the raise, the first part's next diff forgets what it handed over: an update that sends nothing.
    const dayLater = later + 24 * 60 * 60_000;
    clock = vi.spyOn(Date, "now").mockImplementation(() => dayLater);
    try {
      logged = [];
      const late = await newPlugin();
      const checked = await late.folder.check(urnOf("site0"), first.inputs, declare(5, 0));
      expect((await late.folder.diff(...at(0), cut, checked.inputs, first.inputs)).changes).toBe(true);
      expect(logged.join("\n")).toContain(`${dropped.size} entries handed to other parts when \`parts\` changed, kept a day, now forgotten`);
      const forgot = (await late.folder.update(...at(0), cut, checked.inputs)).outs;
      expect(emu.requests()).toEqual([]);
      expect(forgot.handedOver).toBeUndefined();
      expect(forgot.handedOverAt).toBeUndefined();
      const summary = summarizePreview({
        steps: [{ op: "update", urn: urnOf("site0"), oldState: { type, inputs: first.inputs, outputs: cut }, newState: { type, inputs: checked.inputs } }],
      });
      expect(summary).toContain("the entries it handed to other parts when `parts` changed, kept a day, now forgotten");
      const next = await late.folder.check(urnOf("site0"), checked.inputs, declare(5, 0));
      expect((await late.folder.diff(...at(0), forgot, next.inputs, checked.inputs)).changes).toBe(false);
    } finally {
      clock.mockRestore();
    }
  });

  it("what a part hands over is kept a day: a content that leaves the folder is forgotten and uploaded on its return; a raise after the day keeps only what it drops then", async () => {
    const text = (i: number) => `<p>page ${i}</p>`;
    const sha = (t: string) => createHash("sha256").update(t).digest("hex");
    for (let i = 0; i < 40; i++) write(`p${i}.html`, text(i));
    const stack = new EngineStack({ plugin: async () => (await newPlugin()).folder, urn: urnOf("site0") });
    const declare = (parts: number) => new Map(Array.from({ length: parts }, (_, part) => [`site${part}`, { path: dir, retentionEpochs: 3, parts, part }]));
    const t0 = Date.now();
    const hour = 60 * 60_000;
    const up = async (ms: number, parts: number) => {
      const clock = vi.spyOn(Date, "now").mockImplementation(() => t0 + ms);
      try {
        return await stack.up(declare(parts));
      } finally {
        clock.mockRestore();
      }
    };
    const handed = () => handedOverHashes(stack.get("site0")!.state) ?? [];
    const stamp = () => stack.get("site0")!.state.handedOverAt;
    expect((await up(0, 3)).done).toBe(true);
    expect((await up(hour, 5)).done).toBe(true);
    const first = handed();
    expect(first.length).toBeGreaterThan(0);
    expect(stamp()).toBe(new Date(t0 + hour).toISOString());
    // A content the first part handed over leaves the folder: the next `up` forgets it there, with no request.
    const i = Array.from({ length: 40 }, (_, k) => k).find((k) => first.includes(sha(text(k))))!;
    fs.rmSync(path.join(dir, `p${i}.html`));
    const kept = stack.get("site0")!;
    emu.clearRequests();
    logged = [];
    expect((await up(2 * hour, 5)).done).toBe(true);
    expect(emu.requests()).toEqual([]);
    expect(logged.join("\n")).toContain("1 entries it handed to other parts have left the folder: forgotten (no request)");
    // The pull-request summary of that update says why, within the day: not that it forgets what it handed over.
    const type = STORED_FOLDER_TYPES.plugin;
    const step = {
      op: "update",
      urn: urnOf("site0"),
      oldState: { type, inputs: kept.inputs, outputs: kept.state },
      newState: { type, inputs: stack.get("site0")!.inputs },
    };
    const md = summarizePreview({ steps: [step] }, { nowMs: t0 + 2 * hour });
    expect(md).toContain("or a content it handed over that left the folder");
    expect(md).not.toContain("now forgotten");
    expect(handed().sort()).toEqual(first.filter((hash) => hash !== sha(text(i))).sort());
    expect(stamp()).toBe(new Date(t0 + hour).toISOString());
    // Its return is a new content, as any removed file's is: uploaded, not taken from the entry handed over.
    write(`p${i}.html`, text(i));
    emu.clearRequests();
    expect((await up(3 * hour, 5)).done).toBe(true);
    expect(writes()).toEqual(["upload"]);
    // A raise a day after the last: what the first part kept is forgotten; it keeps only what it drops now, stamped now.
    logged = [];
    expect((await up(26 * hour, 6)).done).toBe(true);
    expect(logged.join("\n")).toContain(`${first.length - 1} entries handed to other parts when \`parts\` changed, kept a day, now forgotten`);
    const now = handed();
    expect(now.filter((hash) => partOf(hash, 6) !== 5)).toEqual([]);
    expect(stamp()).toBe(now.length > 0 ? new Date(t0 + 26 * hour).toISOString() : undefined);
  });

  it("`parts` lowered within the day: the parts take back what they handed over, nothing sent, and the pull-request summary counts no upload", async () => {
    for (let i = 0; i < 40; i++) write(`p${i}.html`, `<p>page ${i}</p>`);
    const stack = new EngineStack({ plugin: async () => (await newPlugin()).folder, urn: urnOf("site0") });
    const declare = (parts: number) => new Map(Array.from({ length: parts }, (_, part) => [`site${part}`, { path: dir, retentionEpochs: 3, parts, part }]));
    expect((await stack.up(declare(3))).done).toBe(true);
    expect((await stack.up(declare(4))).done).toBe(true);
    const before = new Map([0, 1, 2, 3].map((part) => [part, stack.get(`site${part}`)!]));
    emu.clearRequests();
    expect((await stack.up(declare(3))).done).toBe(true);
    expect(emu.requests()).toEqual([]);
    // The preview of that `up`, as Pulumi writes it: each part's handed-over entries secret.
    const type = STORED_FOLDER_TYPES.plugin;
    const steps = [0, 1, 2, 3].map((part) => {
      const old = before.get(part)!;
      const oldState = { type, inputs: old.inputs, outputs: { ...old.state, ...(old.state.handedOver ? { handedOver: "[secret]" } : {}) } };
      const urn = urnOf(`site${part}`);
      return part === 3
        ? { op: "delete", urn, oldState }
        : {
            op: "update",
            urn,
            oldState,
            newState: { type, inputs: stack.get(`site${part}`)!.inputs, dependencies: part > 0 ? [urnOf(`site${part - 1}`)] : [] },
          };
    });
    const md = summarizePreview({ steps });
    const taken = Object.keys(recordedManifest(before.get(3)!.state)).length;
    expect(taken).toBeGreaterThan(0);
    expect(md).not.toMatch(/upload\(s\)/);
    const movedIn = [...md.matchAll(/(\d+) content\(s\) moved in from another part/g)].reduce((n, m) => n + Number(m[1]), 0);
    expect(movedIn).toBe(new Set(Object.values(recordedManifest(before.get(3)!.state))).size);
  });

  it("a new part stepped before the part that drops its contents uploads them: the order is the program's", async () => {
    const { plugin, declare, recorded } = await fortyFilesInThreeParts();
    emu.clearRequests();
    const checked = await Promise.all([0, 1, 2, 3].map((part) => plugin.folder.check(urnOf(`site${part}`), recorded[part]?.inputs ?? {}, declare(4, part))));
    const created = (await plugin.folder.create(urnOf("site3"), checked[3].inputs)).outs!;
    for (const part of [0, 1, 2]) await plugin.folder.diff(dir, urnOf(`site${part}`), recorded[part].outs, checked[part].inputs, recorded[part].inputs);
    const moved = new Set(Object.values(recordedManifest(created))).size;
    expect(moved).toBeGreaterThan(0);
    expect(writes().filter((r) => r === "upload")).toEqual(Array(moved).fill("upload"));
  });

  it("the pull-request summary counts a content another part hands over as moved: no upload, nothing bought", async () => {
    const { plugin, declare, recorded } = await fortyFilesInThreeParts();
    await emu.advanceEpochs(1);
    const checked = await Promise.all([0, 1, 2, 3].map((part) => plugin.folder.check(urnOf(`site${part}`), recorded[part]?.inputs ?? {}, declare(4, part))));
    const type = STORED_FOLDER_TYPES.plugin;
    // Each part depends on the one before, as TypeScript declares them.
    const steps = checked.map(({ inputs }, part) => {
      const newState = { type, inputs, dependencies: part > 0 ? [urnOf(`site${part - 1}`)] : [] };
      return part < 3
        ? { op: "update", urn: urnOf(`site${part}`), oldState: { type, inputs: recorded[part].inputs, outputs: recorded[part].outs }, newState }
        : { op: "create", urn: urnOf(`site${part}`), newState };
    });
    const md = summarizePreview({ steps });
    const moved = Object.keys(recordedManifest({ manifest: checked[3].inputs.manifest })).length;
    expect(moved).toBeGreaterThan(0);
    expect(md).toContain(`${moved} content(s) moved in from another part, no upload`);
    expect(md).toContain("moved to another part");
    expect(md).not.toMatch(/upload\(s\)/);
    expect(md).toContain("**0 epoch(s) to buy**");
    // The new part uploads nothing: it adopts what it takes.
    expect(md).toContain("**Totals:** 1 adopted, 3 updated");

    // Parts that do not depend on each other are stepped in no order: a move is not counted on.
    const unordered = summarizePreview({ steps: steps.map((s) => ({ ...s, newState: { ...s.newState, dependencies: [] } })) });
    expect(unordered).not.toContain("moved in");
    expect(unordered).toContain(`${moved} upload(s)`);

    // TypeScript's parts depend each on the one before only in an `up`: a preview shows no order, the numbers say it.
    const dynamic = STORED_FOLDER_TYPES.dynamic;
    const typescript = summarizePreview({
      steps: steps.map((s) => ({
        ...s,
        ...(s.oldState ? { oldState: { ...s.oldState, type: dynamic } } : {}),
        newState: { ...s.newState, type: dynamic, dependencies: [] },
      })),
    });
    expect(typescript).toContain(`${moved} content(s) moved in from another part, no upload`);

    // TypeScript's parts keep their entries secret, as a preview shows them: the moves are still no upload, and what they buy is not counted.
    const hidden = summarizePreview({
      steps: steps.map((s) => ({
        ...s,
        ...(s.oldState ? { oldState: { ...s.oldState, type: dynamic, outputs: { ...s.oldState.outputs, entries: "[secret]" } } } : {}),
        newState: { ...s.newState, type: dynamic, dependencies: [] },
      })),
    });
    expect(hidden).toContain(`${moved} content(s) moved in from another part, no upload`);
    expect(hidden).toContain("the entries it takes from another part are secret in the preview");
    expect(hidden).not.toMatch(/upload\(s\)/);
  });

  it("a file moved to another folder of the stack keeps its entry when that folder is stepped after the one it left", async () => {
    write("a/x.txt", "moved bytes");
    write("b/y.txt", "staying bytes");
    const stack = new EngineStack({ plugin: async () => (await newPlugin()).folder, urn: urnOf("a") });
    const folders = (order: string[]) => new Map(order.map((name) => [name, { path: path.join(dir, name), retentionEpochs: 3 }]));
    await stack.up(folders(["a", "b"]));
    const bought = () => emu.files().reduce((n, f) => n + f.uploadEpochs + f.epochsBought, 0);
    const stored = bought();
    fs.renameSync(path.join(dir, "a/x.txt"), path.join(dir, "b/x.txt"));
    await emu.advanceEpochs(1);
    emu.clearRequests();
    logged = [];
    await stack.up(folders(["a", "b"]));
    expect(emu.requests()).toEqual([]);
    expect(bought()).toBe(stored);
    // (The driver names every resource by one URN: the line is the second folder's.)
    expect(logged).toContain('StoredFolder "a": + x.txt (its entry moves here from another resource of the stack: no upload)');
    expect(recordedManifest(stack.get("b")!.state)).toHaveProperty("x.txt");

    // Back, with the folder that takes it stepped first: nothing is on offer yet, so it is uploaded, as before.
    fs.renameSync(path.join(dir, "b/x.txt"), path.join(dir, "a/x.txt"));
    emu.clearRequests();
    await stack.up(folders(["a", "b"]));
    expect(writes()).toEqual(["upload"]);
  });

  it("one walk serves every part of a step: a file written between the parts' checks is in none, until the next step", async () => {
    for (let i = 0; i < 12; i++) write(`f${i}.txt`, `file ${i}`);
    const plugin = await newPlugin();
    const check = async (part: number) =>
      (await plugin.folder.check(urnOf(`site${part}`), {}, { path: dir, parts: 3, part })).inputs.manifest as Record<string, string>;
    const first = await check(0);
    for (let i = 0; i < 12; i++) write(`late${i}.txt`, `late ${i}`);
    const rest = [await check(1), await check(2)];
    const seen = [first, ...rest].flatMap((m) => Object.keys(m));
    expect(seen.sort()).toEqual(Array.from({ length: 12 }, (_, i) => `f${i}.txt`).sort());
    // Every part has taken it: the next check walks again.
    const next = [await check(0), await check(1), await check(2)].flatMap((m) => Object.keys(m));
    expect(next).toHaveLength(24);
  });

  it("each part's check counts its own contents toward collections, not the folder's every time", async () => {
    for (let i = 0; i < 12; i++) write(`f${i}.txt`, `file ${i}`);
    const plugin = await newPlugin();
    vi.mocked(reclaimAfter).mockClear();
    for (const part of [0, 1, 2]) await plugin.folder.check(urnOf(`site${part}`), {}, { path: dir, parts: 3, part });
    // Each part's contents once (the core) and its paths once (the front door's answer): 12 + 12, not 3 × 12 + 12.
    expect(vi.mocked(reclaimAfter).mock.calls.reduce((sum, [n]) => sum + n, 0)).toBe(24);
  });

  it("a file's own values are recorded by its part alone; the folder's notices are said once", async () => {
    for (let i = 0; i < 12; i++) write(`f${i}.txt`, `file ${i}`);
    const plugin = await newPlugin();
    const files = { "f3.txt": { tag: "three" }, "gone.txt": { tag: "none" } };
    const checked = await Promise.all([0, 1, 2].map((part) => plugin.folder.check(urnOf(`site${part}`), {}, { path: dir, parts: 3, part, files })));
    const own = checked.map((c) => c.inputs.files as Record<string, unknown> | undefined);
    const holder = checked.findIndex((c) => "f3.txt" in (c.inputs.manifest as object));
    expect(own[holder]).toMatchObject({ "f3.txt": { tag: "three" } });
    expect(own.filter((f) => f !== undefined && "f3.txt" in f)).toHaveLength(1);
    // A value naming no file stays with the first part, and is said once.
    expect(own[0]).toMatchObject({ "gone.txt": { tag: "none" } });
    expect(logged.filter((l) => l.includes('files["gone.txt"] names no file'))).toHaveLength(1);
  });

  it("a folder of over 10,000 files as one resource is told the parts to declare, once; in parts it is not", async () => {
    for (let i = 0; i < 10_001; i++) fs.writeFileSync(path.join(dir, `f${i}`), String(i));
    const plugin = await newPlugin();
    await plugin.folder.check(urnOf("site"), {}, { path: dir });
    const advice = () => logged.filter((l) => l.includes("files in one resource"));
    expect(advice()).toHaveLength(1);
    expect(advice()[0]).toContain('StoredFolder "site": 10001 files in one resource, so each change carries them all; `parts: 6` updates only the parts');
    logged = [];
    for (const part of [0, 1, 2]) await plugin.folder.check(urnOf(`site${part}`), {}, { path: dir, parts: 3, part });
    expect(advice()).toEqual([]);
  }, 60_000);

  it("a count or part not known at preview (another resource's output) is walked once known, not read as one part of one", async () => {
    write("f.txt", "one file");
    const plugin = await newPlugin();
    for (const news of [
      { parts: UNKNOWN, part: 0 },
      { parts: 2, part: UNKNOWN },
    ]) {
      const checked = await plugin.folder.check(urnOf("site"), {}, { path: dir, ...news });
      expect(checked.failures).toEqual([]);
      expect(checked.inputs.manifest).toBeUndefined();
    }
  });

  it("refuses a part that names none of the parts, and a count out of its range, naming the field", async () => {
    const plugin = await newPlugin();
    const failures = async (news: Record<string, unknown>) => (await plugin.folder.check(urnOf("site"), {}, { path: dir, ...news })).failures;
    expect(await failures({ parts: 3 })).toEqual([{ property: "part", reason: expect.stringMatching(/^part is required with parts 3: .*from 0 to 2$/) }]);
    expect(await failures({ parts: 3, part: 3 })).toEqual([{ property: "part", reason: expect.stringMatching(/^part must be below parts \(3\), got 3/) }]);
    expect(await failures({ part: 1 })).toEqual([{ property: "part", reason: expect.stringMatching(/^part must be below parts \(1\)/) }]);
    expect(await failures({ parts: 65, part: 0 })).toEqual([{ property: "parts", reason: "parts must be a whole number from 1 to 64 (got 65)" }]);
    expect(await failures({ parts: 2, part: 1.5 })).toEqual([{ property: "part", reason: "part must be a whole number from 0 to 63 (got 1.5)" }]);
    expect(await failures({ parts: "3", part: 0 })).toEqual([{ property: "parts", reason: "parts must be a whole number from 1 to 64" }]);
    expect(emu.requests()).toEqual([]);
  });
});
