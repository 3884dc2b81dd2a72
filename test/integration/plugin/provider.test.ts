import { SECRET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { noticeLine } from "../../../provider/engine/notice";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, startEmulator, type Emulator } from "../../../emulator";
import { StoredFilePlugin } from "../../../provider/plugin/provider";
import { STORED_FILE_TYPES } from "../../../provider/engine/urns";

/**
 * The provider plugin's resource logic against the emulator, without gRPC: the same provider
 * as the dynamic resource, plus what only a plugin does — the engine's secret markers, typed
 * provider config, property-level diffs and import. (The plugin through the real engine, from a
 * YAML program: test/e2e/plugin/yaml.e2e.test.ts.)
 */
const URN = `urn:pulumi:dev::proj::${STORED_FILE_TYPES.plugin}::logo`;
const SIG = SIG_KEY;
const secret = (value: unknown) => ({ [SIG]: SECRET_SIG, value });

let emu: Emulator;
let logged: string[];
let plugin: StoredFilePlugin;
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
});
afterAll(async () => emu?.close());
beforeEach(async () => {
  await emu.reset();
  logged = [];
  plugin = new StoredFilePlugin((notice, urn) => logged.push(`${urn ?? "-"} ${noticeLine(notice)}`), { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
  await plugin.configure({ apiKey: secret(EMULATOR_DEFAULT_API_KEY), baseUrl: emu.url });
});
const upload = async (tag = "t0") => (await emu.uploadFile({ content: `plugin ${Math.random()}`, filename: "a.txt", tag })).blobId;
const writes = () => emu.requests().filter((r) => r.route === "patch" || r.route === "renew" || r.route === "upload");

describe("provider config", () => {
  it("is checked at preview, naming the setting: types, plain http to another host, unknown settings", () => {
    const { failures } = plugin.checkConfig({ apiKey: secret("k"), baseUrl: "http://files.example.com", maxConcurrency: "many", color: "red" });
    expect(failures.map((f) => f.property).sort()).toEqual(["baseUrl", "color", "maxConcurrency"]);
    expect(failures.find((f) => f.property === "baseUrl")?.reason).toMatch(/^tuskr:baseUrl: .*http/);
    expect(failures.find((f) => f.property === "maxConcurrency")?.reason).toMatch(/^tuskr:maxConcurrency: /);
    expect(JSON.stringify(failures)).not.toContain('"k"');
  });

  it("keeps the API key secret in what check returns, even when given in plain text; accepts numbers given as text", () => {
    const { inputs, failures } = plugin.checkConfig({ apiKey: "tsk_plain", baseUrl: "http://127.0.0.1:1", timeoutMs: "5000" });
    expect(failures).toEqual([]);
    expect(inputs.apiKey).toEqual(secret("tsk_plain"));
  });

  it("a changed setting updates the provider; it never asks for a replace", () => {
    expect(plugin.diffConfig({ baseUrl: "a" }, { baseUrl: "b" })).toEqual({ changes: true });
    expect(plugin.diffConfig({ baseUrl: "a", version: "1" }, { baseUrl: "a", version: "2" })).toEqual({ changes: false });
  });
});

describe("resources", () => {
  it("create, update and refresh as the dynamic resource does, with property-level diffs", async () => {
    const blobId = await upload();
    const news = { blobId, name: "logo.svg", tag: "brand", metadata: { team: "web" }, retentionEpochs: 2 };
    const checked = await plugin.check(URN, {}, news);
    expect(checked).toEqual({ inputs: news, failures: [] });
    const created = await plugin.create(URN, checked.inputs);
    expect(created.id).toBe(blobId);
    expect(created.outs).toMatchObject({ ...news, url: expect.any(String) });
    // Stored for the default single epoch: 2 from the adoption's epoch lack 1.
    expect(emu.files()[0]).toMatchObject({ tag: "brand", metadata: { team: "web" }, epochsBought: 1 });

    const changed = { ...news, metadata: { team: "ops", tier: "gold" } };
    const diff = await plugin.diff(blobId, URN, created.outs, changed);
    expect(diff).toEqual({
      changes: true,
      replaces: [],
      detailedDiff: {
        "metadata.team": { field: "metadata", kind: "update", inputDiff: true },
        "metadata.tier": { field: "metadata", kind: "add", inputDiff: true },
      },
    });
    expect((await plugin.diff(blobId, URN, created.outs, { ...news, blobId: "other" })).replaces).toEqual(["blobId"]);
    emu.clearRequests();
    const updated = await plugin.update(blobId, URN, created.outs, changed);
    expect(writes().map((r) => [r.route, r.requestBody])).toEqual([["patch", { metadata: { team: "ops", tier: "gold" } }]]);

    emu.clearRequests();
    const read = await plugin.read(blobId, URN, updated.outs);
    expect(read.id).toBe(blobId);
    expect(read.inputs).toMatchObject({ blobId, tag: "brand", metadata: { team: "ops", tier: "gold" } });
    expect(emu.requests().map((r) => r.route)).toEqual(["get"]);
  });

  it("inputs given as secrets: unwrapped for the service, secret again in outputs and inputs, never in a message", async () => {
    const blobId = await upload();
    const news = { blobId, tag: secret("classified-tag"), metadata: { owner: secret("agent") } };
    const checked = await plugin.check(URN, {}, news);
    expect(checked.inputs.tag).toEqual(secret("classified-tag"));
    expect(checked.inputs.metadata).toEqual(secret({ owner: "agent" }));
    const { outs } = await plugin.create(URN, checked.inputs);
    expect(emu.files()[0]).toMatchObject({ tag: "classified-tag", metadata: { owner: "agent" } });
    expect(outs.tag).toEqual(secret("classified-tag"));
    expect(outs.metadata).toEqual(secret({ owner: "agent" }));
    // A bad secret input fails check without naming the property or showing the value.
    const bad = await plugin.check(URN, {}, { blobId, tag: secret("x".repeat(300)) });
    expect(bad.failures).toHaveLength(1);
    expect(bad.failures[0].property).toBe("");
    expect(bad.failures[0].reason).not.toContain("xxxx");
    // Drift of a secret field is said without its values.
    await emu.uploadFile({ content: "unrelated", filename: "u.txt" });
    const { patchFile } = await import("../../helpers/emulator");
    await patchFile(emu, blobId, { tag: "changed-outside" });
    await plugin.read(blobId, URN, outs);
    expect(logged.join("\n")).toMatch(/tag differs from what this stack set \(a secret input: values not shown\)/);
    expect(logged.join("\n")).not.toContain("classified-tag");
    expect(logged.join("\n")).not.toContain("changed-outside");
  });

  it("a secret value that changes: neither the recorded value nor the new one is in a message (diff, update, a refusal)", async () => {
    // One epoch left: every diff and update warns that it expires soon, naming the file.
    const blobId = await upload();
    const first = await plugin.check(URN, {}, { blobId, name: secret("OLD-SECRET-NAME") });
    const { outs } = await plugin.create(URN, first.inputs);
    logged = [];
    const news = (await plugin.check(URN, outs, { blobId, name: secret("NEW-SECRET-NAME") })).inputs;
    const diff = await plugin.diff(blobId, URN, outs, news);
    expect(diff.changes).toBe(true);
    await plugin.update(blobId, URN, outs, news);
    const refused = await plugin
      .diff(blobId, URN, outs, (await plugin.check(URN, outs, { blobId, name: secret("NEW-SECRET-NAME"), retentionEpochs: 60 })).inputs)
      .catch((e: Error) => e.message);
    expect(emu.files().find((f) => f.blobId === blobId)?.name).toBe("NEW-SECRET-NAME");
    expect(logged.join("\n")).toMatch(/warning: StoredFile "\[REDACTED\]" .*expiring soon/);
    for (const text of [logged.join("\n"), String(refused)]) {
      expect(text).not.toContain("OLD-SECRET-NAME");
      expect(text).not.toContain("NEW-SECRET-NAME");
    }
  });

  it("a refresh that finds the file expired says so before it leaves the state", async () => {
    const blobId = await upload();
    const { outs } = await plugin.create(URN, (await plugin.check(URN, {}, { blobId, name: "a.txt" })).inputs);
    await emu.advanceEpochs(3);
    logged = [];
    expect((await plugin.read(blobId, URN, outs)).props).toBeUndefined();
    expect(logged).toEqual([
      `${URN} warning: StoredFile "a.txt" (${blobId}): the service says the file has expired: it leaves the stack's state (nothing is deleted)`,
    ]);
  });

  it("import: one GET and no write; the inputs are the file's own name, tag and metadata, so the declared program changes nothing", async () => {
    const blobId = await upload("imported-tag");
    const { patchFile } = await import("../../helpers/emulator");
    await patchFile(emu, blobId, { metadata: { team: "data" } });
    emu.clearRequests();
    const read = await plugin.read(blobId, URN, {});
    expect(emu.requests().map((r) => r.route)).toEqual(["get"]);
    expect(read.inputs).toEqual({ blobId, name: "a.txt", tag: "imported-tag", metadata: { team: "data" } });
    expect(read.props).toMatchObject({ blobId, retentionEpochs: 0, tag: "imported-tag" });
    // What the engine does next: check and diff the imported inputs — nothing to change.
    const checked = await plugin.check(URN, {}, read.inputs!);
    expect(checked.failures).toEqual([]);
    expect(await plugin.diff(blobId, URN, read.props!, checked.inputs)).toEqual({ changes: false, replaces: [], detailedDiff: {} });
    await expect(plugin.read("no-such-blob", URN, {})).rejects.toThrow(/no file with blobId "no-such-blob" exists/);
  });

  it("an expiring file is a warning attributed to its resource", async () => {
    const blobId = await upload();
    const { outs } = await plugin.create(URN, { blobId });
    await plugin.diff(blobId, URN, outs, { blobId, tag: "x" });
    expect(logged.some((l) => l.startsWith(`${URN} warning: StoredFile`) && /expiring soon/.test(l))).toBe(true);
  });
});

describe("metadata: a key set to null, from YAML or Go", () => {
  it("a null inside metadata that reaches check is refused, naming the field", async () => {
    const blobId = await upload();
    const checked = await plugin.check(URN, {}, { blobId, metadata: { a: null, b: "kept" } });
    expect(checked.failures).toEqual([{ property: "metadata", reason: expect.stringMatching(/metadata\.a is null/) }]);
  });

  it("metadata declared empty over stored keys (what `{a: null}` becomes in the Go SDK) is said at preview, naming the keys it removes", async () => {
    const blobId = await upload();
    const first = await plugin.check(URN, {}, { blobId, metadata: { a: "1", b: "2" } });
    const created = await plugin.create(URN, first.inputs);
    // The Go SDK (behind YAML programs) drops a map's null entries before the request: `{a: null}` arrives as `{}`.
    const emptied = await plugin.check(URN, first.inputs, { blobId, metadata: {} });
    expect(emptied.failures).toEqual([]);
    logged = [];
    const diff = await plugin.diff(blobId, URN, created.outs, emptied.inputs);
    expect(diff.changes).toBe(true);
    const emptyWarnings = () => logged.filter((l) => /metadata is declared empty/.test(l));
    expect(emptyWarnings()).toEqual([expect.stringMatching(/metadata is declared empty: the up removes every stored key \(a, b\).*null/)]);
    // A secret metadata's keys are not named.
    const hidden = await plugin.create(
      URN,
      (await plugin.check(URN, {}, { blobId: await upload("t1"), metadata: secret({ "hidden-key-name": "hidden-value" }) })).inputs,
    );
    logged = [];
    await plugin.diff(String(hidden.id), URN, hidden.outs, (await plugin.check(URN, {}, { blobId: hidden.id, metadata: secret({}) })).inputs);
    expect(emptyWarnings()).toEqual([expect.stringMatching(/metadata is declared empty: the up removes every stored key \(1 key\)/)]);
    expect(logged.join()).not.toMatch(/hidden-key-name|hidden-value/);
  });
});

describe("getFile: any file's record, one GET, nothing written", () => {
  it("tuskr:index:getFile returns the record with epochs left; unknown, expired and bad blobIds fail clearly", async () => {
    const blobId = (await emu.uploadFile({ content: `read me ${Math.random()}`, filename: "notes.md", tag: "docs", epochs: 4 })).blobId;
    emu.clearRequests();
    const file = await plugin.invoke("tuskr:index:getFile", { blobId });
    expect(file).toMatchObject({ blobId, name: "notes.md", tag: "docs", metadata: {}, mimeType: expect.any(String), remainingEpochs: 4 });
    expect(typeof file.expiresAt).toBe("string");
    expect(emu.requests().map((r) => r.route)).toEqual(["get"]);
    await expect(plugin.invoke("tuskr:index:getFile", { blobId: "no-such-blob" })).rejects.toThrow(/getFile: no file with blobId "no-such-blob" exists/);
    await expect(plugin.invoke("tuskr:index:getFile", { blobId: ".." })).rejects.toThrow(/getFile: blobId must not be/);
    await emu.advanceEpochs(5);
    await expect(plugin.invoke("tuskr:index:getFile", { blobId })).rejects.toThrow(/getFile: the file with blobId .* has expired/);
    await expect(plugin.invoke("tuskr:index:nope", {})).rejects.toThrow(/no function tuskr:index:nope/);
    expect(writes()).toEqual([]);
  });

  it("the TypeScript getFile reads with the stack's settings and returns no key", async () => {
    const pulumi = await import("@pulumi/pulumi");
    const { getFile } = await import("../../../provider/dynamic/get-file");
    const blobId = (await emu.uploadFile({ content: `ts ${Math.random()}`, filename: "ts.txt" })).blobId;
    pulumi.runtime.setAllConfig({ "tuskr:apiKey": EMULATOR_DEFAULT_API_KEY, "tuskr:baseUrl": emu.url }, ["tuskr:apiKey"]);
    try {
      const file = await getFile({ blobId });
      expect(file).toMatchObject({ blobId, name: "ts.txt" });
      expect(JSON.stringify(file)).not.toContain(EMULATOR_DEFAULT_API_KEY);
    } finally {
      pulumi.runtime.setAllConfig({}, []);
    }
  });
});
