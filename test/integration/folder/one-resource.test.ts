import { ASSET_SIG, SECRET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { noticeLine } from "../../../provider/engine/notice";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LIMITS } from "../../../api";
import { EMULATOR_DEFAULT_API_KEY, type Emulator, startEmulator } from "../../../emulator";
import { type EntryOutputs, fromOutputTexts, packEntries, recordedManifest, unpackEntries } from "../../../provider/folder/entries";
import { StoredFilePlugin } from "../../../provider/plugin/provider";
import { STORED_FOLDER_TYPES } from "../../../provider/engine/urns";
import { FILE_FIELDS } from "../../../provider/folder/schema";
import { hideBookkeeping } from "../../../provider/file/state";
import { summarizePreview } from "../../../provider/cli/summary";
import { expectKeysAgree } from "../../helpers/property-paths";
import { EngineStack } from "../../helpers/provider-driver";

/**
 * `tuskr:index:StoredFolder`, the folder as one resource, through the plugin's front door (the
 * engine's calls, in its order) against the emulator: one entry per content, a preview that names
 * each file, the minimum of requests for each change, outputs by path, a partial failure that
 * keeps what went through, and a refresh that forgets an expired entry. (Through the real engine:
 * test/e2e/folder/yaml.e2e.test.ts.)
 */

const URN = `urn:pulumi:dev::proj::${STORED_FOLDER_TYPES.plugin}::site`;
const SIG = SIG_KEY;
const secret = (value: unknown) => ({ [SIG]: SECRET_SIG, value });

let emu: Emulator;
let dir: string;
let logged: string[];
beforeEach(async () => {
  emu = await startEmulator({ port: 0 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-folder-"));
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

function write(files: Record<string, string | null>): void {
  for (const [rel, text] of Object.entries(files)) {
    const at = path.join(dir, rel);
    if (text === null) fs.rmSync(at);
    else {
      fs.mkdirSync(path.dirname(at), { recursive: true });
      fs.writeFileSync(at, text);
    }
  }
}

const requests = () => emu.requests().map((r) => r.route);
/** The writes the emulator received, sorted: each route, with a PATCH's body. */
const writesSent = () =>
  emu
    .requests()
    .filter((r) => r.route !== "get")
    .map((r) => [r.route, r.route === "patch" ? r.requestBody : undefined])
    .sort();

/** The outputs as the first one-resource folders recorded them: the manifest a map among them, not a text. */
function withManifestMap(outs: Record<string, unknown>): Record<string, unknown> {
  const { manifestText: _text, ...rest } = outs;
  return { ...rest, manifest: recordedManifest(outs) };
}

/** A stack holding the folder `site`, each command a new plugin process: test/helpers/provider-driver.ts drives it. */
const siteStack = () => new EngineStack({ plugin: async () => (await newPlugin()).folder, urn: URN });

/** One `pulumi up` of `program` as `site`, which must go through (its check passing): what the diff said (none for a create), and the outputs after. */
async function up(stack: EngineStack, program: Record<string, unknown>) {
  const { steps } = await stack.up({ site: program });
  expect(steps.flatMap((s) => s.failures ?? [])).toEqual([]);
  expect(steps.filter((s) => s.outcome === "failed" || s.outcome === "partial")).toEqual([]);
  expectKeysAgree((steps[0].diff?.detailedDiff ?? {}) as Record<string, { field: string }>);
  return { diff: steps[0].diff, outs: stack.get("site")!.state };
}

describe("StoredFolder as one resource (the plugin's tuskr:index:StoredFolder)", () => {
  it("a 20-file folder whose contents another stack stored, on two-week epochs: the epoch is learnt once and said once, each file ends at its declared end", async () => {
    await emu.close();
    emu = await startEmulator({ port: 0, epochSeconds: 14 * 86_400 });
    const files = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`f${i}.txt`, `stored ${i} ${Math.random()}`]));
    write(files);
    for (const [rel, text] of Object.entries(files)) await emu.uploadFile({ content: text, filename: rel, epochs: 2 });
    await up(siteStack(), { path: dir, retentionEpochs: 5 });
    for (const f of emu.files()) expect(f.endEpoch - emu.currentEpoch()).toBe(5);
    // One epoch of one file learnt the length; the rest bought in it.
    expect(emu.files().reduce((n, f) => n + f.epochsBought, 0)).toBe(20 * 3);
    const aboutTheEpoch = logged.filter((l) => /tuskr:epochSeconds|service's epoch/.test(l));
    expect(aboutTheEpoch).toHaveLength(2);
    expect(aboutTheEpoch.join("\n")).toMatch(/not known to this stack[\s\S]*14 days \(1209600 s\) \(a renew's answer\)/);
  });

  it("a refresh that finds a file's name, tag or metadata changed outside the stack hands it back under files[path], so the next preview shows it; a secret value stays out", async () => {
    write({ "w1.html": "<p>1</p>", "w2.html": "<p>2</p>", "w3.html": "<p>3</p>" });
    const program = { path: dir, tag: "site", files: { "w3.html": { metadata: { team: "web" } } } };
    const stack = siteStack();
    const { outs } = await up(stack, program);
    const blobIds = outs.blobIds as Record<string, string>;
    const patch = (rel: string, body: unknown) =>
      fetch(`${emu.url}/v1/files/${blobIds[rel]}`, {
        method: "PATCH",
        headers: { Authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}`, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
    // Unchanged: the inputs as declared, no files added.
    const plugin = await newPlugin();
    expect((await plugin.folder.read(String(outs.path), URN, outs)).inputs?.files).toEqual(program.files);
    await patch("w1.html", { name: "hacked" });
    await patch("w3.html", { tag: "edited", metadata: { team: null, owner: "x" } });
    const read = await plugin.folder.read(String(outs.path), URN, outs);
    expect(read.inputs?.files).toEqual({ "w1.html": { name: "hacked" }, "w3.html": { metadata: { owner: "x" }, tag: "edited" } });
    // A second refresh finds the same (it compares with what is declared, not with what the first recorded).
    expect((await plugin.folder.read(String(outs.path), URN, read.props!)).inputs?.files).toEqual(read.inputs?.files);
    // Each said as the folder's, naming the file's path (the entry is no StoredFile of the stack).
    expect(logged.filter((l) => /differs from what this stack set/.test(l)).map((l) => l.split(":")[1])).toEqual([
      ' StoredFolder "site" (its file "w1.html")',
      ' StoredFolder "site" (its file "w3.html")',
      ' StoredFolder "site" (its file "w3.html")',
    ]);
    // The next up sets them back (what the preview shows as the difference of the inputs), from what the refresh recorded.
    stack.record("site", { id: stack.get("site")!.id, state: read.props!, inputs: read.inputs! });
    const again = await up(stack, program);
    expect(again.diff?.changes).toBe(true);
    // The plugin's preview names each of them (the engine shows a provider plugin's detailed diff).
    expect(again.diff?.detailedDiff).toEqual({
      'files["w1.html"].name': { field: "files", kind: "delete", inputDiff: true },
      'files["w3.html"].tag': { field: "files", kind: "delete", inputDiff: true },
      'files["w3.html"].metadata': { field: "files", kind: "update", inputDiff: true },
    });
    expect(emu.files().find((f) => f.blobId === blobIds["w1.html"])?.name).toBe("w1.html");
    expect(emu.files().find((f) => f.blobId === blobIds["w3.html"])).toMatchObject({ tag: "site", metadata: { team: "web" } });

    // A secret tag moved: the refresh says the field, the inputs keep no value of it.
    const hidden = await up(stack, { ...program, tag: secret("hidden-tag") });
    await patch("w2.html", { tag: "moved-by-someone" });
    logged = [];
    const secretRead = await plugin.folder.read(String(outs.path), URN, hidden.outs);
    expect(JSON.stringify(secretRead.inputs)).not.toContain("moved-by-someone");
    expect(JSON.stringify(logged)).not.toContain("moved-by-someone");
    expect(logged.filter((l) => /tag differs from what this stack set \(a secret input/.test(l))).toHaveLength(1);
  });

  it.each([
    ["PATCH", { tag: "a" }, { tag: "b" }, "tag", { tag: "b" }],
    ["renew", { retentionEpochs: 2 }, { retentionEpochs: 6 }, "retentionEpochs", { epochs: 4 }],
  ] as const)("the retry of a %s that failed for one file names that file's entry, not a change made outside the stack; the next up sends only it", async (request, first, then, field, body) => {
    write({ "w1.html": "<p>1</p>", "w2.html": "<p>2</p>" });
    const stack = siteStack();
    const { outs } = await up(stack, { path: dir, ...first });
    const w2 = (outs.blobIds as Record<string, string>)["w2.html"];
    const route = request === "PATCH" ? "patch" : "renew";
    // w2's request fails every time (the retries included).
    emu.setFaults({ script: [{ route, blobId: w2, fault: "5xx", times: 100 }] });
    const program = { path: dir, ...then };
    const [failed] = (await stack.up({ site: program })).steps;
    expect(failed).toMatchObject({ op: "update", outcome: "partial", failures: [] });
    expect(failed.error).toMatch(/1 of 2 file\(s\) failed: w2\.html/);
    emu.setFaults({});
    logged = [];
    // The engine records the new inputs with the partial state: the value is declared as before, and w2's entry still lacks it.
    const recorded = stack.get("site")!;
    const plugin = await newPlugin();
    const news = (await plugin.folder.check(URN, recorded.inputs, program)).inputs;
    const diff = await plugin.folder.diff(recorded.id, URN, recorded.state, news, recorded.inputs);
    expectKeysAgree(diff.detailedDiff);
    expect(diff.changes).toBe(true);
    expect(diff.detailedDiff).toEqual({ 'manifest["w2.html"]': { field: "manifest", kind: "update", inputDiff: true } });
    expect(logged).toContain(`StoredFolder "site": ~ w2.html (same content; its entry: ${field} to make as declared)`);
    emu.clearRequests();
    await up(stack, program);
    // (A renew reads the file's expiry first.)
    expect(
      emu
        .requests()
        .filter((r) => r.route !== "get")
        .map((r) => [r.route, r.blobId, r.requestBody]),
    ).toEqual([[route, w2, body]]);
  });

  it("secret per-file values are masked in messages, and only they: a plain shared value, blobIds and dates stay readable", async () => {
    write({ "a.txt": "a", "b.txt": "b" });
    const program = (code: unknown) => ({ path: dir, retentionEpochs: 2, files: secret({ "b.txt": { metadata: { code } } }) });
    const created = await up(siteStack(), program("SECRET-B1"));
    const plugin = await newPlugin();
    logged = [];
    // Two epochs stored, three the warning window: every preview warns, naming each file by its blobId and expiry.
    const news = (await plugin.folder.check(URN, created.outs, program("SECRET-B2"))).inputs;
    await plugin.folder.diff(String(created.outs.path), URN, created.outs, news);
    const warned = () => logged.filter((l) => /expiring soon/.test(l)).join("\n");
    expect(logged.filter((l) => /expiring soon/.test(l))).toHaveLength(2);
    for (const f of emu.files()) expect(warned()).toContain(f.blobId);
    expect(warned()).not.toContain("[REDACTED]");
    expect(logged.join("\n")).not.toMatch(/SECRET-B/);

    // A stack of the release before recorded every value of every entry as secret: a change of the plain retention is not masked either.
    const outputs = { ...created.outs, manifest: recordedManifest(created.outs) } as unknown as EntryOutputs;
    const sealed = created.outs.entries as { value: string };
    const asBefore = new Map([...unpackEntries(sealed.value, outputs)].map(([hash, e]) => [hash, { ...e, secretInputs: [...FILE_FIELDS] }]));
    const upgraded = { ...created.outs, entries: { ...sealed, value: packEntries(asBefore, outputs) } };
    logged = [];
    const raised = (await plugin.folder.check(URN, upgraded, { ...program("SECRET-B1"), retentionEpochs: 3 })).inputs;
    await plugin.folder.diff(String(created.outs.path), URN, upgraded, raised);
    expect(logged.filter((l) => /expiring soon/.test(l))).toHaveLength(2);
    expect(warned()).not.toContain("[REDACTED]");
    expect(logged.join("\n")).not.toMatch(/SECRET-B/);
  });

  it("the pull-request summary counts the epochs and requests the folder's up then makes", async () => {
    write({ "a.txt": "a", "b.txt": "b", "copy.txt": "a" });
    const created = await up(siteStack(), { path: dir, tag: "site", retentionEpochs: 3 });
    await emu.advanceEpochs(1);
    write({ "d.txt": "d" });
    const program = { path: dir, tag: "site", retentionEpochs: 8, files: { "b.txt": { tag: "b" } } };
    const plugin = await newPlugin();
    const checked = await plugin.folder.check(URN, created.outs, program);
    const type = STORED_FOLDER_TYPES.plugin;
    const md = summarizePreview({
      steps: [{ op: "update", urn: URN, oldState: { type, outputs: created.outs }, newState: { type, inputs: checked.inputs } }],
    });
    const bought = () => emu.files().reduce((n, f) => n + f.uploadEpochs + f.epochsBought, 0);
    const before = bought();
    emu.clearRequests();
    await plugin.folder.update(String(created.outs.path), URN, created.outs, checked.inputs);
    const sent = (route: string) => requests().filter((r) => r === route).length;
    // No answer has shown the stack the epoch's length: the first renew buys 1 epoch to learn it, one renew more, as the summary says.
    expect([sent("upload"), sent("renew"), sent("patch")]).toEqual([1, 3, 1]);
    expect(md).toMatch(
      new RegExp(
        `1 PATCH on existing files, 3 renew\\(s\\), \\*\\*${bought() - before} epoch\\(s\\) to buy\\*\\*.*1 renew more, the first, to learn the service's epoch`,
      ),
    );
    expect(md.match(/not known to this stack/g)).toHaveLength(1);
  });

  it("a folder that keeps no file (empty, or globs that match nothing) is said at check, with its globs", async () => {
    const plugin = await newPlugin();
    expect((await plugin.folder.check(URN, {}, { path: dir })).failures).toEqual([]);
    write({ "index.html": "<p>home</p>" });
    expect((await plugin.folder.check(URN, {}, { path: dir, include: ["**/*.htm"] })).failures).toEqual([]);
    expect((await plugin.folder.check(URN, {}, { path: dir, exclude: ["**"] })).failures).toEqual([]);
    expect((await plugin.folder.check(URN, {}, { path: dir })).failures).toEqual([]);
    expect(logged).toEqual([
      `warning: StoredFolder "site": ${dir} has no file to keep (it is empty, or has only dot files, which an include must name)`,
      `warning: StoredFolder "site": no file of ${dir} matches include ["**/*.htm"]: the folder keeps no file`,
      `warning: StoredFolder "site": no file of ${dir} matches exclude ["**"]: the folder keeps no file`,
    ]);
    expect(requests()).toEqual([]);
  });

  it("create, no-op, then add / edit / remove / move: each file named in the diff, only the uploads and the rename sent", async () => {
    write({ "index.html": "<p>home</p>", "css/site.css": "p{}", "a/LICENSE": "MIT", "b/LICENSE": "MIT", "old.txt": "old" });
    const program = { path: dir, tag: "site", retentionEpochs: 3 };
    const stack = siteStack();
    const created = await up(stack, program);
    // Five paths, four contents: four uploads, each read back, no renew (the upload buys the declared epochs).
    expect(requests().sort()).toEqual(["get", "get", "get", "get", "upload", "upload", "upload", "upload"]);
    const outs = created.outs as Record<string, Record<string, string>>;
    expect(Object.keys(outs.blobIds).sort()).toEqual(["a/LICENSE", "b/LICENSE", "css/site.css", "index.html", "old.txt"]);
    expect(outs.blobIds["a/LICENSE"]).toBe(outs.blobIds["b/LICENSE"]);
    const stored = (rel: string) => emu.files().find((f) => f.blobId === outs.blobIds[rel])!;
    expect(stored("index.html")).toMatchObject({ name: "index.html", tag: "site", mimeType: "text/html", endEpoch: emu.currentEpoch() + 3 });
    expect(stored("css/site.css").mimeType).toBe("text/css");
    expect(stored("b/LICENSE").name).toBe("a/LICENSE");

    // Unchanged: no change, nothing sent.
    emu.clearRequests();
    const same = await up(stack, program);
    expect(same.diff?.changes).toBe(false);
    expect(requests()).toEqual([]);

    // Add one, edit one, remove one, move one.
    write({ "new.svg": "<svg/>", "css/site.css": "p{color:red}", "old.txt": null, "index.html": null, "home/index.html": "<p>home</p>" });
    emu.clearRequests();
    logged = [];
    const changed = await up(stack, program);
    expect(changed.diff?.detailedDiff).toEqual({
      'manifest["new.svg"]': { field: "manifest", kind: "add", inputDiff: true },
      'manifest["css/site.css"]': { field: "manifest", kind: "update", inputDiff: true },
      'manifest["old.txt"]': { field: "manifest", kind: "delete", inputDiff: true },
      'manifest["index.html"]': { field: "manifest", kind: "delete", inputDiff: true },
      'manifest["home/index.html"]': { field: "manifest", kind: "add", inputDiff: true },
    });
    expect(logged.join("\n")).toMatch(/\+ home\/index\.html \(its content is stored already: no upload\)/);
    expect(logged.join("\n")).toMatch(/~ css\/site\.css \(new content, uploaded; the old entry keeps its period\)/);
    expect(logged.join("\n")).toMatch(/- old\.txt \(no longer managed; no request/);
    // The moved file's old path: its content is still kept, under the new one, renamed after it.
    expect(logged).toContain(`StoredFolder "site": - index.html (its content stays, under home/index.html; its entry is renamed: one PATCH)`);
    // Two uploads (the new file, the edited one) and one PATCH (the moved file's entry renamed).
    expect(writesSent()).toEqual([
      ["patch", { name: "home/index.html" }],
      ["upload", undefined],
      ["upload", undefined],
    ]);
    const after = changed.outs as Record<string, Record<string, string>>;
    expect(after.blobIds["home/index.html"]).toBe(outs.blobIds["index.html"]);
    expect(Object.keys(after.blobIds).sort()).toEqual(["a/LICENSE", "b/LICENSE", "css/site.css", "home/index.html", "new.svg"]);
    expect(emu.files().find((f) => f.blobId === after.blobIds["new.svg"])?.mimeType).toBe("image/svg+xml");

    // One of two identical files edited: its old content stays under the other, whose name the entry now takes.
    write({ "a/LICENSE": "MIT, edited" });
    emu.clearRequests();
    logged = [];
    await up(stack, program);
    expect(logged).toContain(
      `StoredFolder "site": ~ a/LICENSE (new content, uploaded; the old content stays, under b/LICENSE; its entry is renamed: one PATCH)`,
    );
    expect(writesSent()).toEqual([
      ["patch", { name: "b/LICENSE" }],
      ["upload", undefined],
    ]);
  });

  it("the outputs record the manifest as one text, a path per line, not as a map of paths (the inputs hold the map a preview compares)", async () => {
    write({ "index.html": "<p>home</p>", "a/LICENSE": "MIT", "b/LICENSE": "MIT" });
    const plugin = await newPlugin();
    const checked = await plugin.folder.check(URN, {}, { path: dir });
    const manifest = checked.inputs.manifest as Record<string, string>;
    expect(Object.keys(manifest).sort()).toEqual(["a/LICENSE", "b/LICENSE", "index.html"]);
    const { outs } = await plugin.folder.create(URN, checked.inputs);
    expect(outs.manifest).toBeUndefined();
    expect(typeof outs.manifestText).toBe("string");
    expect(String(outs.manifestText).split("\n")).toEqual([
      "{",
      `"a/LICENSE":"${manifest["a/LICENSE"]}",`,
      `"b/LICENSE":"${manifest["b/LICENSE"]}",`,
      `"index.html":"${manifest["index.html"]}"`,
      "}",
    ]);
    expect(JSON.parse(String(outs.manifestText))).toEqual(manifest);
    // What a refresh reads back from it: every path still stored, nothing sent but the reads.
    const read = await plugin.folder.read(String(outs.path), URN, outs);
    expect(read.inputs?.manifest).toEqual(manifest);
    expect(read.props?.manifestText).toBe(outs.manifestText);
  });

  it("a state the previous release wrote (each entry whole, keyed by hash; the manifest a map) upgrades in place: no change, nothing sent; the next write records each entry once", async () => {
    write({ "index.html": "<p>home</p>", "a/LICENSE": "MIT", "b/LICENSE": "MIT" });
    const program = { path: dir, tag: "site", retentionEpochs: 3 };
    const stack = siteStack();
    const created = (await up(stack, program)).outs;
    const outputs = { ...created, manifest: recordedManifest(created) } as unknown as EntryOutputs;
    // The previous release's text: every entry whole (its bookkeeping under hidden keys), keyed by its content's hash.
    const previous = {
      ...withManifestMap(created),
      entries: JSON.stringify(Object.fromEntries([...unpackEntries(created.entries, outputs)].map(([hash, e]) => [hash, hideBookkeeping(e)]))),
    };
    stack.record("site", { ...stack.get("site")!, state: previous });
    emu.clearRequests();
    const same = await up(stack, program);
    expect(same.diff?.changes).toBe(false);
    expect(requests()).toEqual([]);
    // The next write (one file added) keeps each entry as it was, written once.
    write({ "new.txt": "new" });
    const next = (await up(stack, program)).outs;
    expect(requests()).toEqual(["upload", "get"]);
    const text = String(next.entries);
    for (const blobId of Object.values(next.blobIds as Record<string, string>)) expect(text).not.toContain(blobId);
    const nextOutputs = { ...next, manifest: recordedManifest(next) } as unknown as EntryOutputs;
    expect(new Map([...unpackEntries(next.entries, nextOutputs)].filter(([hash]) => hash !== nextOutputs.manifest["new.txt"]))).toEqual(
      unpackEntries(created.entries, outputs),
    );
  });

  it("a state the first one-resource folders wrote (the manifest a map among the outputs) upgrades in place: no change, nothing sent, a move still a rename", async () => {
    write({ "index.html": "<p>home</p>", "a/LICENSE": "MIT", "b/LICENSE": "MIT" });
    const program = { path: dir, tag: "site" };
    const stack = siteStack();
    const created = (await up(stack, program)).outs;
    stack.record("site", { ...stack.get("site")!, state: withManifestMap(created) });
    emu.clearRequests();
    const same = await up(stack, program);
    expect(same.diff?.changes).toBe(false);
    expect(requests()).toEqual([]);
    // A file moved: its entry is known from the map (a rename, no upload), and the manifest is then recorded as text.
    write({ "index.html": null, "home.html": "<p>home</p>" });
    const moved = (await up(stack, program)).outs;
    expect(requests()).toEqual(["patch"]);
    expect(moved.manifest).toBeUndefined();
    expect(Object.keys(recordedManifest(moved)).sort()).toEqual(["a/LICENSE", "b/LICENSE", "home.html"]);
  });

  it("retainUntil on the folder: files added at different times reach the same end, each buying its gap", async () => {
    write({ "a.txt": "a" });
    const probe = await emu.uploadFile({ content: "probe", filename: "p.txt", epochs: 1 });
    const until = new Date(Date.parse(probe.expiresAt) + 5 * emu.epochSeconds * 1000 - 3_600_000).toISOString();
    const end = emu.currentEpoch() + 6;
    const stack = siteStack();
    await up(stack, { path: dir, retainUntil: until });
    // Two epochs pass (the emulator moves its history back: the same instant reads earlier here).
    await emu.advanceEpochs(2);
    const sameInstant = new Date(Date.parse(until) - 2 * emu.epochSeconds * 1000).toISOString();
    write({ "b.txt": "b" });
    const second = await up(stack, { path: dir, retainUntil: sameInstant });
    const ids = (second.outs as Record<string, Record<string, string>>).blobIds;
    expect(emu.files().find((f) => f.blobId === ids["a.txt"])?.endEpoch).toBe(end);
    expect(emu.files().find((f) => f.blobId === ids["b.txt"])?.endEpoch).toBe(end);
  });

  it("a failed upload: the others are recorded, and the next up sends only the missing one", async () => {
    write({ "a.txt": "a", "b.txt": "b", "c.txt": "c" });
    const plugin = await newPlugin();
    const checked = await plugin.folder.check(URN, {}, { path: dir });
    // The file goes away between the preview and the upload.
    fs.rmSync(path.join(dir, "b.txt"));
    const failed = (await plugin.folder.create(URN, checked.inputs).then(
      () => undefined,
      (e) => e,
    )) as Error & { properties?: Record<string, unknown>; id?: string };
    write({ "b.txt": "b" });
    expect(failed?.message).toMatch(/StoredFolder "site": 1 of 3 file\(s\) failed: b\.txt: .*ENOENT/);
    expect(Object.keys(failed.properties!.blobIds as object)).toHaveLength(2);
    // The engine records the partial failure with its inputs, and init errors.
    const stack = siteStack();
    stack.record("site", { id: failed.id!, state: failed.properties!, inputs: checked.inputs, initErrors: true });
    emu.clearRequests();
    const again = await up(stack, { path: dir });
    expect(requests()).toEqual(["upload", "get"]);
    expect(Object.keys((again.outs as Record<string, object>).blobIds)).toHaveLength(3);
  });

  it("a file rewritten between the preview and its upload is not uploaded (it could become another entry's bytes); the next up keeps it", async () => {
    write({ "a.txt": "AAA", "b.txt": "BBB" });
    const plugin = await newPlugin();
    const checked = await plugin.folder.check(URN, {}, { path: dir, retentionEpochs: 3 });
    // Rewritten to b.txt's bytes: uploading it too would buy b.txt's content twice (a service that sells on every upload).
    write({ "a.txt": "BBB" });
    const failed = (await plugin.folder.create(URN, checked.inputs).then(
      () => undefined,
      (e) => e,
    )) as Error & { properties?: Record<string, unknown>; id?: string };
    expect(failed?.message).toMatch(/1 of 2 file\(s\) failed: a\.txt: .*a\.txt changed after the preview .*not uploaded/);
    expect(requests()).toEqual(["upload", "get"]);
    const stack = siteStack();
    stack.record("site", { id: failed.id!, state: failed.properties!, inputs: checked.inputs, initErrors: true });
    emu.clearRequests();
    const again = await up(stack, { path: dir, retentionEpochs: 3 });
    // Now a.txt and b.txt are one content, stored once: nothing to upload, only the shared entry's name.
    expect(requests().filter((r) => r === "upload")).toEqual([]);
    const ids = (again.outs as Record<string, Record<string, string>>).blobIds;
    expect(ids["a.txt"]).toBe(ids["b.txt"]);
    expect(emu.files().find((f) => f.blobId === ids["a.txt"])?.endEpoch).toBe(emu.currentEpoch() + 3);
    emu.clearRequests();
    expect((await up(stack, { path: dir, retentionEpochs: 3 })).diff?.changes).toBe(false);
  });

  it("refresh: an expired entry leaves the state and the manifest, so the next up uploads it again", async () => {
    write({ "a.txt": "a", "b.txt": "b" });
    const stack = siteStack();
    await up(stack, { path: dir, files: { "a.txt": { retentionEpochs: 4 } } });
    await emu.advanceEpochs(2);
    expect((await stack.refresh()).steps).toMatchObject([{ name: "site", op: "read" }]);
    const read = stack.get("site")!;
    expect(Object.keys(read.state.blobIds as object)).toEqual(["a.txt"]);
    expect(Object.keys(read.inputs.manifest as object)).toEqual(["a.txt"]);
    emu.clearRequests();
    const again = await up(stack, { path: dir, files: { "a.txt": { retentionEpochs: 4 } } });
    expect(again.diff?.detailedDiff).toEqual({ 'manifest["b.txt"]': { field: "manifest", kind: "add", inputDiff: true } });
    // The same upload as the first (same key): the service replays its answer, the entry it names
    // is read and found expired, and the content is uploaded anew under another key.
    expect(requests()).toEqual(["upload", "get", "upload", "get"]);
    expect(emu.files().find((f) => f.blobId === (again.outs as Record<string, Record<string, string>>).blobIds["b.txt"])?.expired).toBe(false);
  });

  it("the expiry alarm reads each content a one-resource folder keeps; entries it cannot read (secret, malformed, missing) give the folder's soonest end, else the alarm", async () => {
    write({ "a.txt": "a", "b.txt": "b", "c/b.txt": "b" });
    const program = { path: dir, retentionEpochs: 2, keepAlive: { minRemainingEpochs: 1, renewEpochs: 5 }, files: { "a.txt": { retentionEpochs: 10 } } };
    const plugin = (await up(siteStack(), program)).outs;
    const { storedFolderProvider } = await import("../../../provider/dynamic/stored-folder-provider");
    // The epoch's length said: with it unknown, the first purchase of 1 epoch that shows it would fall
    // on whichever content's answer came first, moving that file's end between the two records.
    const config: Record<string, string> = { "tuskr:apiKey": EMULATOR_DEFAULT_API_KEY, "tuskr:baseUrl": emu.url, "tuskr:epochSeconds": "86400" };
    await storedFolderProvider.configure({ config: { get: (k: string) => config[k] } });
    const checked = await storedFolderProvider.check({}, { ...program, __urn: `urn:pulumi:dev::proj::${STORED_FOLDER_TYPES.dynamic}::docs` });
    const dynamic = (await storedFolderProvider.create(checked.inputs)).outs as Record<string, unknown>;
    const { expiryMarkdown, expiryReport } = await import("../../../provider/cli/expiry");
    const exported = (resources: Array<[string, string, Record<string, unknown>]>) => ({
      version: 3,
      deployment: { resources: resources.map(([type, name, outputs]) => ({ urn: `urn:pulumi:dev::proj::${type}::${name}`, type, custom: true, outputs })) },
    });
    const rowsOf = (name: string, outputs: Record<string, unknown>, type: string = STORED_FOLDER_TYPES.plugin) =>
      expiryReport(exported([[type, name, outputs]]), { withinEpochs: 3 }).rows.map((r) => [r.resource, r.blobId, r.epochsLeft, r.alarm]);
    const blobIds = plugin.blobIds as Record<string, string>;
    const files = emu.files();
    const endOf = (rel: string) => files.find((f) => f.blobId === blobIds[rel])?.expiresAt;
    // The soonest end among the files, recorded apart from the entries, never secret.
    expect(plugin.earliestExpiresAt).toBe(endOf("b.txt"));
    expect(dynamic.earliestExpiresAt).toBe(endOf("b.txt"));
    // Readable entries: a row per content ("b" at two paths is one entry), soonest first.
    expect(rowsOf("site", plugin)).toEqual([
      ["site/b.txt (and 1 more path(s))", blobIds["b.txt"], 2, true],
      ["site/a.txt", blobIds["a.txt"], 10, false],
    ]);
    const report = expiryReport(exported([[STORED_FOLDER_TYPES.plugin, "site", plugin]]), { withinEpochs: 3 });
    expect(report.rows.every((r) => r.keepAlive?.renewEpochs === 5 && typeof r.expiresAt === "string")).toBe(true);

    // The TypeScript resource always keeps its entries secret (additionalSecretOutputs): in an
    // export they are encrypted, and the folder is one row, its soonest end, with its keep-alive.
    const encrypted = { [SIG]: SECRET_SIG, ciphertext: "v1:abc" };
    const hidden = expiryReport(exported([[STORED_FOLDER_TYPES.dynamic, "docs", { ...dynamic, entries: encrypted }]]), { withinEpochs: 1 });
    expect(hidden.rows.map((r) => [r.resource, r.expiresAt, r.epochsLeft, r.alarm, r.entriesUnread, r.keepAlive?.renewEpochs])).toEqual([
      ["docs", endOf("b.txt"), 2, false, true, 5],
    ]);
    expect(hidden.alarm).toBe(false);
    expect(expiryMarkdown(hidden)).toMatch(/\(the soonest of its files\): its files' entries are secret or unreadable/);
    expect(rowsOf("docs", { ...dynamic, entries: encrypted }, STORED_FOLDER_TYPES.dynamic)).toEqual([["docs", undefined, 2, true]]);
    // `pulumi stack export --show-secrets` shows a secret as its JSON text: each content is read.
    const shown = { [SIG]: SECRET_SIG, plaintext: JSON.stringify(dynamic.entries) };
    expect(rowsOf("docs", { ...dynamic, entries: shown }, STORED_FOLDER_TYPES.dynamic).map((r) => r[0])).toEqual([
      "docs/b.txt (and 1 more path(s))",
      "docs/a.txt",
    ]);
    // A state recorded before earliestExpiresAt: unknown, the alarm.
    const { earliestExpiresAt: _, ...older } = dynamic;
    expect(rowsOf("docs", { ...older, entries: encrypted }, STORED_FOLDER_TYPES.dynamic)).toEqual([["docs", undefined, undefined, true]]);

    // One entry unreadable (a field of the wrong shape drops it), or the manifest unreadable: what
    // was read, and the folder's soonest end for the rest — never a file silently left out.
    const text = JSON.parse(String(plugin.entries));
    text.byPath["b.txt"] = { ...text.byPath["b.txt"], tag: 5 };
    expect(rowsOf("site", { ...plugin, entries: JSON.stringify(text) })).toEqual([
      ["site", undefined, 2, true],
      ["site/a.txt", blobIds["a.txt"], 10, false],
    ]);
    expect(rowsOf("site", { ...plugin, manifestText: "not a manifest" })).toEqual([["site", undefined, 2, true]]);
    expect(rowsOf("site", { ...plugin, manifestText: "{}" })).toEqual([["site", undefined, 2, true]]);
    // No outputs at all: unknown.
    expect(rowsOf("site", {})).toEqual([["site", undefined, undefined, true]]);
    // The TypeScript StoredFolder's component has the same type token and keeps nothing itself: no row.
    const component = { urn: `urn:pulumi:dev::proj::${STORED_FOLDER_TYPES.plugin}::site`, type: STORED_FOLDER_TYPES.plugin, custom: false, outputs: {} };
    expect(expiryReport({ version: 3, deployment: { resources: [component] } }).rows).toEqual([]);
    // An export trimmed of the field (jq, say) still has its folders read.
    const { custom: _custom, ...trimmed } = { ...component, outputs: plugin };
    expect(expiryReport({ version: 3, deployment: { resources: [trimmed] } }, { withinEpochs: 3 }).alarm).toBe(true);
    // An empty folder keeps nothing to list.
    write({ "a.txt": null, "b.txt": null, "c/b.txt": null });
    const empty = (await up(siteStack(), { path: dir })).outs;
    expect(rowsOf("none", empty)).toEqual([]);
  });

  it("TypeScript: a StoredFile and a one-resource StoredFolder on the same bytes are refused (one core in the provider process)", async () => {
    write({ "same.txt": "same bytes in both\n" });
    const { storedFileProvider } = await import("../../../provider/dynamic/stored-file-provider");
    const { storedFolderProvider } = await import("../../../provider/dynamic/stored-folder-provider");
    const config = { config: { get: (k: string) => ({ "tuskr:apiKey": EMULATOR_DEFAULT_API_KEY, "tuskr:baseUrl": emu.url })[k] } };
    await storedFileProvider.configure(config);
    await storedFolderProvider.configure(config);
    const text = "same bytes in both\n";
    const hash = (await import("node:crypto")).createHash("sha256").update(text).digest("hex");
    const file = await storedFileProvider.check(
      {},
      { source: { [SIG]: ASSET_SIG, text, hash }, __urn: "urn:pulumi:dev::proj::pulumi-nodejs:dynamic/tuskr:StoredFile::lone" },
    );
    expect(file.failures).toEqual([]);
    const folder = await storedFolderProvider.check({}, { path: dir, __urn: "urn:pulumi:dev::proj::pulumi-nodejs:dynamic/tuskr:StoredFolder::site" });
    expect(folder.failures).toEqual([
      {
        property: "path",
        reason: expect.stringMatching(/^same\.txt: StoredFolder "site" \(one of its files\) declares the same content as StoredFile "lone"/),
      },
    ]);
    expect(emu.requests()).toEqual([]);
  });

  it("each file's name is judged apart from the values the files share: a path too long to be a name fails, naming it, beside a shared value every file fails", async () => {
    const long = `${"x".repeat(200)}/${"y".repeat(100)}.txt`;
    write({ "a.txt": "a", "b.txt": "b", [long]: "long" });
    const plugin = await newPlugin();
    const named = await plugin.folder.check(URN, {}, { path: dir, tag: "site" });
    expect(named.failures).toEqual([{ property: "name", reason: expect.stringMatching(new RegExp(`^${long}: name must be at most 256 characters`)) }]);
    // A rise past the horizon fails each entry alike (said once, as the folder's), the name only its own.
    const both = await plugin.folder.check(URN, {}, { path: dir, retentionEpochs: 60 });
    expect(both.failures).toEqual([
      { property: "retentionEpochs", reason: expect.stringMatching(/^retentionEpochs can rise by at most 53 epochs/) },
      { property: "name", reason: expect.stringMatching(new RegExp(`^${long}: name must be at most 256 characters`)) },
    ]);
    expect(emu.requests()).toEqual([]);
  });

  it("a content the folder no longer declares is free for another resource in the same provider process; one it still declares is not", async () => {
    write({ "kept.txt": "kept bytes\n", "dropped.txt": "dropped bytes\n" });
    const plugin = await newPlugin();
    expect((await plugin.folder.check(URN, {}, { path: dir })).failures).toEqual([]);
    write({ "dropped.txt": null });
    expect((await plugin.folder.check(URN, {}, { path: dir })).failures).toEqual([]);
    const text = (t: string) => ({ [SIG]: ASSET_SIG, text: t, hash: createHash("sha256").update(t).digest("hex") });
    const fileUrn = (name: string) => `urn:pulumi:dev::proj::tuskr:index:StoredFile::${name}`;
    expect((await plugin.check(fileUrn("dropped"), {}, { source: text("dropped bytes\n") })).failures).toEqual([]);
    const kept = await plugin.check(fileUrn("kept"), {}, { source: text("kept bytes\n") });
    expect(kept.failures.map((f) => f.reason)).toEqual([
      expect.stringMatching(/^StoredFile "kept" declares the same content as StoredFolder "site" \(one of its files\)/),
    ]);
  });

  it("TypeScript: the dynamic resource records blobIds and urls as texts (a path per line); a state with the maps (the release before) upgrades in place", async () => {
    write({ "index.html": "<p>home</p>", "a/LICENSE": "MIT", "b/LICENSE": "MIT" });
    const { storedFolderProvider: provider } = await import("../../../provider/dynamic/stored-folder-provider");
    await provider.configure({ config: { get: (k: string) => ({ "tuskr:apiKey": EMULATOR_DEFAULT_API_KEY, "tuskr:baseUrl": emu.url })[k] } });
    const program = { path: dir, tag: "site", __urn: "urn:pulumi:dev::proj::pulumi-nodejs:dynamic/tuskr:StoredFolder::texts" };
    const checked = await provider.check({}, program);
    expect(checked.failures).toEqual([]);
    const { outs } = await provider.create(checked.inputs);
    expect(outs.blobIds).toBeUndefined();
    expect(outs.urls).toBeUndefined();
    const blobIds = JSON.parse(outs.blobIdsText);
    expect(Object.keys(blobIds)).toEqual(["a/LICENSE", "b/LICENSE", "index.html"]);
    expect(blobIds["a/LICENSE"]).toBe(blobIds["b/LICENSE"]);
    // Every url is the service's address of its blob: said once, as the base, not once per path.
    expect(outs.urlsText).toBe("{}");
    const urls = fromOutputTexts(outs).urls as Record<string, string>;
    expect(Object.keys(urls)).toEqual(Object.keys(blobIds));
    for (const rel of Object.keys(blobIds)) expect(urls[rel]).toBe(`${outs.urlBase}${blobIds[rel]}`);
    expect(emu.files().find((f) => f.blobId === blobIds["index.html"])?.url).toBe(urls["index.html"]);
    // The release before recorded the maps: read as they are, nothing to change, nothing sent.
    const { blobIdsText: _b, urlsText: _u, urlBase: _base, ...rest } = outs;
    const previous = { ...rest, blobIds, urls };
    emu.clearRequests();
    const again = await provider.check(previous, program);
    expect((await provider.diff(outs.path, previous, again.inputs)).changes).toBe(false);
    // A file moved: one rename, and the outputs are written as texts from then on.
    write({ "index.html": null, "home.html": "<p>home</p>" });
    const moved = await provider.check(previous, program);
    expect((await provider.diff(outs.path, previous, moved.inputs)).changes).toBe(true);
    const updated = (await provider.update!(outs.path, previous, moved.inputs)).outs as Record<string, string>;
    expect(requests()).toEqual(["patch"]);
    expect(updated.blobIds).toBeUndefined();
    expect(JSON.parse(updated.blobIdsText)["home.html"]).toBe(blobIds["index.html"]);
    // A refresh reads the texts back and records them as texts.
    const read = await provider.read!(outs.path, updated);
    expect(read.props?.blobIdsText).toBe(updated.blobIdsText);
    expect(read.props?.urlsText).toBe(updated.urlsText);
    expect(read.props?.urlBase).toBe(updated.urlBase);
  });

  it("TypeScript: the dynamic resource's inputs hold the manifest in parts (here one, keyed \"\", the outputs' text); inputs with the map or one text (releases before) upgrade in place", async () => {
    // Bytes of their own: the provider process (one per file here) claims each content for one resource.
    write({ "index.html": "<p>text home</p>", "a/LICENSE": "text MIT", "b/LICENSE": "text MIT" });
    const { storedFolderProvider: provider } = await import("../../../provider/dynamic/stored-folder-provider");
    await provider.configure({ config: { get: (k: string) => ({ "tuskr:apiKey": EMULATOR_DEFAULT_API_KEY, "tuskr:baseUrl": emu.url })[k] } });
    const program = { path: dir, tag: "site", __urn: "urn:pulumi:dev::proj::pulumi-nodejs:dynamic/tuskr:StoredFolder::manifest-text" };
    const checked = await provider.check({}, program);
    expect(checked.failures).toEqual([]);
    const { outs } = await provider.create(checked.inputs);
    expect(checked.inputs.manifest).toEqual({ "": outs.manifestText });
    const manifest = JSON.parse(checked.inputs.manifest[""]);
    expect(Object.keys(manifest)).toEqual(["a/LICENSE", "b/LICENSE", "index.html"]);
    // Releases before recorded the map, then one text, among the inputs: checked against either, the same parts; nothing changes, nothing is sent.
    emu.clearRequests();
    for (const before of [manifest, outs.manifestText]) {
      const again = await provider.check({ ...checked.inputs, manifest: before }, program);
      expect(again.inputs.manifest).toEqual(checked.inputs.manifest);
      expect((await provider.diff(outs.path, outs, again.inputs)).changes).toBe(false);
    }
    // A refresh hands the inputs back in parts too.
    const read = await provider.read!(outs.path, outs);
    expect(read.inputs?.manifest).toEqual(checked.inputs.manifest);
    expect(requests()).toEqual(["get", "get"]);
  });

  it("TypeScript: a folder whose texts pass 64 KiB records them gzipped in parts; no change, an edit and a refresh read them back and send only what they need", async () => {
    const files = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`pages/page-${String(i).padStart(4, "0")}.html`, `<p>gzipped page ${i}</p>`]));
    write(files);
    const { storedFolderProvider: provider } = await import("../../../provider/dynamic/stored-folder-provider");
    await provider.configure({ config: { get: (k: string) => ({ "tuskr:apiKey": EMULATOR_DEFAULT_API_KEY, "tuskr:baseUrl": emu.url })[k] } });
    const program = { path: dir, tag: "site", __urn: "urn:pulumi:dev::proj::pulumi-nodejs:dynamic/tuskr:StoredFolder::large" };
    const checked = await provider.check({}, program);
    const { outs } = await provider.create(checked.inputs);
    for (const field of ["manifestText", "blobIdsText", "entries"]) {
      expect(Array.isArray(outs[field]), field).toBe(true);
      expect(String(outs[field][0]).startsWith("gzip:"), field).toBe(true);
    }
    expect(Object.keys(fromOutputTexts(outs).blobIds as object)).toHaveLength(1000);
    // Through the stack's JSON, as the engine keeps them: nothing to change, nothing sent.
    const recorded = JSON.parse(JSON.stringify(outs));
    emu.clearRequests();
    const again = await provider.check(checked.inputs, program);
    expect((await provider.diff(outs.path, recorded, again.inputs)).changes).toBe(false);
    expect(emu.requests()).toEqual([]);
    // One page edited: one upload and its read-back; the others' entries as they were.
    write({ "pages/page-0007.html": "<p>edited</p>" });
    const edited = await provider.check(checked.inputs, program);
    expect((await provider.diff(outs.path, recorded, edited.inputs)).changes).toBe(true);
    const updated = (await provider.update!(outs.path, recorded, edited.inputs)).outs as Record<string, unknown>;
    expect(requests()).toEqual(["upload", "get"]);
    const before = fromOutputTexts(recorded).blobIds as Record<string, string>;
    const after = fromOutputTexts(updated).blobIds as Record<string, string>;
    expect(Object.entries(after).filter(([rel, id]) => before[rel] !== id)).toEqual([["pages/page-0007.html", expect.any(String)]]);
    // A refresh reads every entry (a GET each) and records the texts as they were.
    emu.clearRequests();
    const read = await provider.read!(outs.path, JSON.parse(JSON.stringify(updated)));
    expect(requests()).toEqual(Array(1000).fill("get"));
    expect(fromOutputTexts(read.props ?? {}).blobIds).toEqual(after);
  }, 60_000);

  it("import (a read with no state) is refused, saying why and what to do; nothing sent", async () => {
    const plugin = await newPlugin();
    await expect(plugin.folder.read("./site", URN, {})).rejects.toThrow(/cannot be imported: its entries are found by uploading/);
    expect(emu.requests()).toEqual([]);
  });

  it("check: a glob that leaves the folder is refused under the field that holds it (include or exclude), naming the glob", async () => {
    write({ "a.txt": "a" });
    const plugin = await newPlugin();
    for (const [field, globs] of [
      ["include", { include: ["../x"] }],
      ["include", { include: ["**/*", "/etc/*"] }],
      ["exclude", { exclude: ["docs/../../x"] }],
      // Braces that expand to `..`: caught on what the include matched.
      ["include", { include: ["..{,}/*"] }],
    ] as const) {
      const checked = await plugin.folder.check(URN, {}, { path: dir, ...globs });
      expect(checked.failures).toEqual([{ property: field, reason: expect.stringMatching(/leaves the folder|outside the folder/) }]);
    }
  });

  it("check: bad values name the field (shared, or the file's own), a link is refused, unknown inputs are refused; nothing sent", async () => {
    write({ "a.txt": "a", "b.txt": "b" });
    fs.symlinkSync("/etc/passwd", path.join(dir, "link"));
    const plugin = await newPlugin();
    const linked = await plugin.folder.check(URN, {}, { path: dir });
    expect(linked.failures).toEqual([{ property: "path", reason: expect.stringMatching(/link is a symbolic link .* exclude it/) }]);
    const bad = await plugin.folder.check(
      URN,
      {},
      { path: dir, exclude: ["link"], tag: "x".repeat(300), files: { "b.txt": { contentType: "nope" } }, colour: "red" },
    );
    expect(bad.failures).toEqual([
      { property: "colour", reason: expect.stringMatching(/colour is not an input of StoredFolder/) },
      { property: "tag", reason: expect.stringMatching(/tag must be at most 256/) },
      { property: 'files["b.txt"].contentType', reason: expect.stringMatching(/contentType must be a media type/) },
    ]);
    // Files over the upload limit: each named with its size and the limit, under `path` (a sparse file: nothing written).
    for (const big of ["big-1.bin", "big-2.bin"]) {
      fs.writeFileSync(path.join(dir, big), "");
      fs.truncateSync(path.join(dir, big), LIMITS.uploadMaxBytes + 1);
    }
    const tooBig = await plugin.folder.check(URN, {}, { path: dir, exclude: ["link"] });
    expect(tooBig.failures).toEqual([
      {
        property: "path",
        reason: [1, 2]
          .map(
            (i) =>
              `big-${i}.bin: source file ${path.join(dir, `big-${i}.bin`)} is ${LIMITS.uploadMaxBytes + 1} bytes; an upload is at most ${LIMITS.uploadMaxBytes} bytes`,
          )
          .join("; "),
      },
    ]);
    for (const big of ["big-1.bin", "big-2.bin"]) fs.rmSync(path.join(dir, big));
    // A duplicate's own later end is blamed on that path and field; a content a StoredFile declares too, under `path`.
    write({ "c.txt": "b" });
    const far = new Date(Date.now() + 400 * 86_400_000).toISOString();
    // A date as the folder declared it before is not judged again (an earlier release took it).
    const gap = new Date(Date.now() + 52.5 * 86_400_000).toISOString();
    write({ "g.txt": "gap" });
    const dated = { path: dir, exclude: ["link"], retainUntil: gap };
    // The olds are the inputs check made before: the manifest among them.
    const withManifest = { ...dated, manifest: (await plugin.folder.check(URN, {}, { ...dated, retainUntil: undefined })).inputs.manifest };
    expect((await plugin.folder.check(URN, withManifest, dated)).failures).toEqual([]);
    // ... content by content: another file's values changed (declared, or handed back by a refresh), the date is as before.
    expect((await plugin.folder.check(URN, withManifest, { ...dated, files: { "g.txt": { tag: "x" } } })).failures).toEqual([]);
    expect((await plugin.folder.check(URN, { ...withManifest, files: { "g.txt": { tag: "hacked" } } }, dated)).failures).toEqual([]);
    const undated = (await plugin.folder.check(URN, {}, dated)).failures;
    // The folder's own value, refused for every file: said once, of the folder, naming no file.
    expect(undated).toEqual([{ property: "retainUntil", reason: expect.stringMatching(/^retainUntil must be at most 52 epochs/) }]);
    // Each file judged a millisecond later than the one before (the latest date it names moves with it): still one.
    let t = Date.now();
    const ticking = vi.spyOn(Date, "now").mockImplementation(() => (t += 1));
    try {
      expect((await plugin.folder.check(URN, {}, dated)).failures).toEqual([
        { property: "retainUntil", reason: expect.stringMatching(/^retainUntil must be at most 52 epochs/) },
      ]);
      // The same value secret: one failure still, naming neither a property (the engine would print its value) nor a file.
      expect((await plugin.folder.check(URN, {}, { ...dated, retainUntil: secret(gap) })).failures).toEqual([
        { property: "", reason: expect.stringMatching(/^retainUntil \(a secret input\): retainUntil must be at most 52 epochs/) },
      ]);
    } finally {
      ticking.mockRestore();
    }
    // A value two paths declare of their own: said once, naming them.
    const twoFar = (
      await plugin.folder.check(URN, {}, { path: dir, exclude: ["link"], files: { "a.txt": { retainUntil: gap }, "g.txt": { retainUntil: gap } } })
    ).failures;
    expect(twoFar.map((f) => f.property).sort()).toEqual(['files["a.txt"].retainUntil', 'files["g.txt"].retainUntil']);
    // The folder's date secret, one file's own plain one refused: that value is the file's, not the secret.
    const soon = new Date(Date.now() + 10 * 86_400_000).toISOString();
    const own = (await plugin.folder.check(URN, {}, { path: dir, exclude: ["link"], retainUntil: secret(soon), files: { "g.txt": { retainUntil: gap } } }))
      .failures;
    expect(own).toEqual([
      { property: 'files["g.txt"].retainUntil', reason: expect.stringMatching(/^g\.txt: retainUntil must be at most 52 epochs from now \(got /) },
    ]);
    expect(JSON.stringify(own)).not.toContain("secret");
    expect(JSON.stringify(own)).not.toContain(soon.slice(0, 16));
    // b.txt and c.txt are one content: b.txt declares an earlier date of its own, so the entry takes the folder's
    // (secret, refused) through c.txt: the folder's failure, not b.txt's.
    const through = (await plugin.folder.check(URN, {}, { path: dir, exclude: ["link"], retainUntil: secret(gap), files: { "b.txt": { retainUntil: soon } } }))
      .failures;
    expect(through).toEqual([{ property: "", reason: expect.stringMatching(/^retainUntil \(a secret input\): retainUntil must be at most 52 epochs/) }]);
    // Refused for some files only (a file added; the others' date is as before): naming it.
    write({ "h.txt": "added" });
    expect((await plugin.folder.check(URN, withManifest, dated)).failures).toEqual([
      { property: "retainUntil", reason: expect.stringMatching(/^h\.txt: retainUntil must be at most 52 epochs/) },
    ]);
    fs.rmSync(path.join(dir, "h.txt"));
    fs.rmSync(path.join(dir, "g.txt"));
    const dup = await plugin.folder.check(URN, {}, { path: dir, exclude: ["link"], files: { "c.txt": { retainUntil: far } } });
    expect(dup.failures).toEqual([
      {
        property: 'files["c.txt"].retainUntil',
        reason: expect.stringMatching(/^c\.txt: retainUntil must be at most 52 epochs from now \(got .*, 400\.00 epochs from now\)/),
      },
    ]);
    const hash = (await plugin.folder.check(URN, {}, { path: dir, exclude: ["link"] })).inputs.manifest as Record<string, string>;
    const fileUrn = "urn:pulumi:dev::proj::tuskr:index:StoredFile::one";
    const source = { [SIG]: ASSET_SIG, path: path.join(dir, "a.txt"), hash: hash["a.txt"] };
    const file = await plugin.check(fileUrn, {}, { source });
    expect(file.failures).toEqual([
      { property: "source", reason: expect.stringMatching(/^StoredFile "one" declares the same content as StoredFolder "site" \(one of its files\)/) },
    ]);
    // The other order, in a run of its own.
    const fresh = await newPlugin();
    expect((await fresh.check(fileUrn, {}, { source })).failures).toEqual([]);
    const both = await fresh.folder.check(URN, {}, { path: dir, exclude: ["link"] });
    expect(both.failures).toEqual([
      { property: "path", reason: expect.stringMatching(/^a\.txt: StoredFolder "site" \(one of its files\) declares the same content as StoredFile "one"/) },
    ]);
    expect(emu.requests()).toEqual([]);
  });
});
