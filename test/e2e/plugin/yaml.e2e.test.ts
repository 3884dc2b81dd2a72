import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, startEmulator } from "../../../emulator";
import YAML from "yaml";
import { blobBytes, importedCode, readmeCommand, repoRoot, sharedEmulator, stopEmulator, storedOnEmulator, withStack } from "../../helpers/engine";
import { STORED_FILE_TYPES } from "../../../provider/engine/urns";
import { summarizePreview } from "../../../provider/cli/summary";

/**
 * pulumi-tuskr as a provider plugin named `tuskr`, through its PulumiPlugin.yaml and the real
 * engine: a Pulumi YAML program (examples/yaml, Pulumi's official YAML language host) and a
 * stack moved from the dynamic resource to the plugin's. Requests are counted on the emulator.
 */
afterAll(stopEmulator);

const PLUGIN_TYPE = STORED_FILE_TYPES.plugin;
const writes = (routes: string[]) => routes.filter((r) => r === "patch" || r === "renew" || r === "upload");

describe("examples/yaml's README, run as written from a copy of the folder outside the repository", () => {
  it("installs from the tarball, logs in, makes the stack; the up, the previews and the import it shows do what its comments say", async () => {
    // An emulator of its own: the other tests upload the same handbook, and would find this one's purchases.
    const emu = await startEmulator({ port: 0 });
    const logo = (await emu.uploadFile({ content: `<svg>${Math.random()}</svg>`, filename: "logo.svg" })).blobId;
    const report = (await emu.uploadFile({ content: `report ${Math.random()}`, filename: "report.csv", tag: "reports" })).blobId;
    await withStack(
      "examples/yaml",
      async (s) => {
        const routes = () => s.fileRequests().map((r) => r.route);
        const run = async (command: string) => {
          s.emu.clearRequests();
          const r = await readmeCommand(s, command);
          expect(r.code, r.output).toBe(0);
          return r;
        };
        expect((await run("pulumi up")).changes).toEqual({ create: 4 });
        // "~ metadata: { ~ team: "people" => "ops" }", and a preview sends nothing.
        const team = await run("pulumi config set team ops && pulumi preview --diff");
        expect(team.stdout).toMatch(/~ metadata: \{\s*~ team: "people" => "ops"\s*\}/);
        expect(writes(routes())).toEqual([]);
        // "~ manifest: { + new.html: … }: the one file to upload".
        const added = await run(`echo '<p>new</p>' > site/new.html && pulumi preview --diff`);
        expect(added.stdout).toMatch(/~ manifest: \{\s*\+ new\.html: "[0-9a-f]{64}"\s*\}/);
        expect(writes(routes())).toEqual([]);
        // "no write; prints the YAML to paste".
        const imported = await run("pulumi import --protect=false tuskr:index:StoredFile report -- <blobId of another file>");
        expect(writes(routes())).toEqual([]);
        expect(importedCode(imported.stdout ?? "")).toMatch(new RegExp(`type: tuskr:(index:)?StoredFile[\\s\\S]*${report}`));
        expect(s.readme?.rest()).toEqual([]);
      },
      { emu, readme: { placeholders: { "<blobId>": logo, "<blobId of another file>": report } } },
    ).finally(() => emu.close());
  });
});

describe("examples/yaml: StoredFile from a YAML program, through the tuskr provider plugin", () => {
  it("up, unchanged preview, a metadata key changed (shown as metadata.team), refresh, import, destroy", async () => {
    const emu = await sharedEmulator();
    const logoBytes = fs.readFileSync(path.join(repoRoot, "examples/basic/files/logo.svg"));
    const logo = (await emu.uploadFile({ content: logoBytes, filename: "logo.svg" })).blobId;
    await withStack(
      "examples/yaml",
      async ({ stack, emu, fileRequests, cli, workDir }) => {
        const routes = () => fileRequests().map((r) => r.route);
        // The preview of a new stack sends nothing: no upload, no PATCH, no purchase.
        emu.clearRequests();
        const firstPreview = await cli(["preview"]);
        expect(firstPreview.code, firstPreview.stderr).toBe(0);
        expect(emu.requests()).toEqual([]);
        const up = await stack.up();
        // The stack, two files and the site folder (the engine does not count the default provider).
        expect(up.summary.resourceChanges).toMatchObject({ create: 4 });
        // The folder's three files: three uploads, one PATCH (index.html's metadata); the date in
        // the past buys nothing, the upload's epochs are the declared 2. Each upload is read back.
        // The adopted logo buys one epoch to learn the length (its record read: a GET), then what it lacks in it.
        expect(routes().sort()).toEqual([
          "get",
          "get",
          "get",
          "get",
          "get",
          "get",
          "patch",
          "patch",
          "patch",
          "renew",
          "renew",
          "upload",
          "upload",
          "upload",
          "upload",
        ]);
        const handbook = up.outputs.handbookBlobId.value as string;
        expect(await blobBytes(emu, handbook)).toEqual(fs.readFileSync(path.join(repoRoot, "examples/yaml/files/handbook.md")));
        expect(await storedOnEmulator(handbook)).toMatchObject({
          name: "handbook.md",
          tag: "docs",
          metadata: { team: "people", audience: "staff" },
          uploadEpochs: 3,
          epochsBought: 0,
        });
        // Uploaded for one epoch, declared 5 from the adoption's: 4 bought.
        expect(await storedOnEmulator(logo)).toMatchObject({ tag: "brand", metadata: { team: "people" }, epochsBought: 4 });

        // Nothing changed: nothing sent, at preview or up.
        emu.clearRequests();
        expect((await stack.preview()).changeSummary).toEqual({ same: 4 });
        expect((await stack.up()).summary.resourceChanges).toEqual({ same: 4 });
        expect(routes()).toEqual([]);

        // One metadata key: the preview names it, the up sends one PATCH per file with it.
        await stack.setConfig("team", { value: "ops" });
        const preview = await cli(["preview", "--diff"]);
        expect(preview.code, preview.stderr).toBe(0);
        expect(preview.stdout).toMatch(/~ metadata\s*: \{\s*~ team\s*: "people" => "ops"/);
        expect(preview.stdout).not.toMatch(/[-+] metadata/);
        // The plugin's own per-property diff, as the engine records it (what the display above
        // would compute by itself; this is what the provider said).
        const json = await cli(["preview", "--json"]);
        const steps = JSON.parse(json.stdout).steps as Array<{ urn: string; detailedDiff?: Record<string, { kind: string }> }>;
        expect(steps.find((st) => st.urn.endsWith("::logo"))?.detailedDiff).toEqual({ "metadata.team": expect.objectContaining({ kind: "update" }) });
        // The pull-request summary reads a plugin stack's preview as it reads a dynamic one's.
        const summary = summarizePreview(JSON.parse(json.stdout));
        expect(summary).not.toMatch(/No StoredFile changes/);
        expect(summary).toMatch(/`logo`[^\n]*metadata ~`team`/);
        expect(summary).toMatch(/`handbook`[^\n]*metadata ~`team`/);
        emu.clearRequests();
        expect((await stack.up()).summary.resourceChanges).toMatchObject({ update: 2 });
        // Each PATCH carries the file's whole declared metadata: the contract does not say whether
        // the service merges or replaces it.
        expect(
          fileRequests()
            .map((r) => [r.route, r.path.split("/").pop(), r.requestBody])
            .sort(),
        ).toEqual(
          [
            ["patch", handbook, { metadata: { team: "ops", audience: "staff" } }],
            ["patch", logo, { metadata: { team: "ops" } }],
          ].sort(),
        );

        // Refresh: only GETs; a tag changed elsewhere is said, and restored by the next up.
        const { patchFile } = await import("../../helpers/emulator");
        await patchFile(emu, logo, { tag: "edited-elsewhere" });
        emu.clearRequests();
        const refreshed = await cli(["refresh", "--yes"]);
        expect(refreshed.code, refreshed.stderr).toBe(0);
        // `refresh --yes` previews first, and the preview reads too: two GETs per file (the folder's three included).
        expect(routes()).toEqual(Array(10).fill("get"));
        expect(refreshed.stdout).toMatch(/tag differs from what this stack set: "brand" → "edited-elsewhere"/);
        emu.clearRequests();
        await stack.up();
        expect(fileRequests().map((r) => [r.route, r.requestBody])).toEqual([["patch", { tag: "brand" }]]);

        // Import another file: a GET at the preview and one at the import, no write, and the
        // YAML to declare it. (After `--`: a blobId may start with "-", which the CLI would read as a flag.)
        const report = (await emu.uploadFile({ content: `report ${Math.random()}`, filename: "report.csv", tag: "reports" })).blobId;
        emu.clearRequests();
        const imported = await cli(["import", "--yes", "--protect=false", "--", PLUGIN_TYPE, "report", report]);
        expect(imported.code, imported.stderr).toBe(0);
        expect(routes()).toEqual(["get", "get"]);
        const code = importedCode(imported.stdout);
        expect(code).toMatch(/type: tuskr:StoredFile/);
        expect(code).toContain(`blobId: ${report}`);
        expect(code).toMatch(/tag: reports/);
        // Pasted into the program (its resources), the next up has nothing to do: nothing sent.
        const program = path.join(workDir, "Pulumi.yaml");
        const doc = YAML.parseDocument(fs.readFileSync(program, "utf8"));
        doc.setIn(["resources", "report"], doc.createNode((YAML.parse(code) as { resources: Record<string, unknown> }).resources.report));
        fs.writeFileSync(program, doc.toString());
        emu.clearRequests();
        expect((await stack.up()).summary.resourceChanges).toEqual({ same: 5 });
        expect(emu.requests().filter((r) => r.path.includes(report))).toEqual([]);
        expect(writes(routes())).toEqual([]);

        // State: no provider code, and the key only in the provider's encrypted config.
        const exported = await cli(["stack", "export"]);
        const resources = JSON.parse(exported.stdout).deployment.resources as Array<{
          type: string;
          inputs?: Record<string, unknown>;
          outputs?: Record<string, unknown>;
        }>;
        const files = resources.filter((r) => r.type === PLUGIN_TYPE);
        expect(files).toHaveLength(3);
        for (const r of files) expect(Object.keys({ ...r.inputs, ...r.outputs })).not.toContain("__provider");
        expect(exported.stdout).not.toContain(EMULATOR_DEFAULT_API_KEY);
        const provider = resources.find((r) => r.type === "pulumi:providers:tuskr");
        expect(JSON.stringify(provider?.inputs?.apiKey)).toMatch(/ciphertext/);

        emu.clearRequests();
        await stack.destroy();
        expect(writes(routes())).toEqual([]);
      },
      { config: { logoBlobId: logo, siteRetainUntil: "2026-01-01" } },
    );
  });

  it("bad provider config and bad input fail the preview, naming the setting or field, before any request", async () => {
    const emu = await sharedEmulator();
    const logo = (await emu.uploadFile({ content: `bad ${Math.random()}`, filename: "b.svg" })).blobId;
    await withStack(
      "examples/yaml",
      async ({ cli, stack }) => {
        await stack.setConfig("tuskr:baseUrl", { value: "http://files.example.com" });
        emu.clearRequests();
        const badConfig = await cli(["preview"]);
        expect(badConfig.code).not.toBe(0);
        expect(badConfig.stdout + badConfig.stderr).toMatch(/tuskr:baseUrl: .*http:\/\/files\.example\.com/);
        await stack.setConfig("tuskr:baseUrl", { value: emu.url });
        await stack.setConfig("team", { value: "t".repeat(20_000) });
        const badInput = await cli(["preview"]);
        expect(badInput.code).not.toBe(0);
        expect(badInput.stdout + badInput.stderr).toMatch(/metadata must be at most 16384 bytes as JSON/);
        expect(emu.requests()).toEqual([]);
      },
      { config: { logoBlobId: logo } },
    );
  });
});

describe("moving a stack from the dynamic StoredFile to the plugin's", () => {
  it("import, then remove the old resource from state: no write, nothing lost, later purchases as declared", async () => {
    const emu = await sharedEmulator();
    const blobId = (await emu.uploadFile({ content: `migrate ${Math.random()}`, filename: "logo.svg" })).blobId;
    const declared = { name: "logo.svg", tag: "brand", metadata: { team: "web" } };
    await withStack(
      "test/e2e/plugin/migrate",
      async ({ stack, emu, fileRequests, cli }) => {
        const routes = () => fileRequests().map((r) => r.route);
        await stack.up();
        // Stored for one epoch, declared 3 from the adoption's: 2 bought.
        expect(await storedOnEmulator(blobId)).toMatchObject({ ...declared, epochsBought: 2 });

        // 1. Import the file as the plugin's resource: a GET at the preview, one at the import, and
        // the TypeScript that declares it (through the Node.js SDK generated from the schema).
        emu.clearRequests();
        const imported = await cli(["import", "--yes", "--protect=false", "--", PLUGIN_TYPE, "logo", blobId]);
        expect(imported.code, imported.stdout + imported.stderr).toBe(0);
        expect(routes()).toEqual(["get", "get"]);
        const code = importedCode(imported.stdout);
        expect(code).toMatch(/new tuskr\.StoredFile\("logo", \{/);
        expect(code).toContain(`blobId: "${blobId}"`);
        expect(code).toContain('tag: "brand"');
        // 2. Remove the dynamic resource from state (its delete would send nothing anyway).
        const dynamicUrn = JSON.parse((await cli(["stack", "export"])).stdout).deployment.resources.find(
          (r: { type: string }) => r.type === "pulumi-nodejs:dynamic:Resource" || r.type.startsWith("pulumi-nodejs:dynamic/"),
        )?.urn;
        expect(dynamicUrn).toBeDefined();
        const deleted = await cli(["state", "delete", dynamicUrn, "--yes"]);
        expect(deleted.code, deleted.stderr).toBe(0);
        // 3. The program declares the plugin's resource with the imported values: nothing to do.
        await stack.setConfig("mode", { value: "plugin" });
        await stack.setConfig("declared", { value: JSON.stringify(declared) });
        emu.clearRequests();
        const preview = await stack.preview();
        // The stack and the plugin's file.
        expect(preview.changeSummary).toEqual({ same: 2 });
        emu.clearRequests();
        await stack.up();
        expect(emu.requests()).toEqual([]);
        // 4. From now on the plugin's resource keeps the file until what it declares, counted
        // from the import's epoch: the 3 already bought count toward 5, 2 are bought.
        await stack.setConfig("declared", { value: JSON.stringify({ ...declared, retentionEpochs: 5 }) });
        emu.clearRequests();
        await stack.up();
        // A purchase reads the expiry first; the import's start is a guess, so 1 epoch shows the
        // length first (its record read), then the rest.
        expect(fileRequests().map((r) => [r.route, r.requestBody])).toEqual([
          ["get", undefined],
          ["renew", { epochs: 1 }],
          ["get", undefined],
          ["renew", { epochs: 1 }],
        ]);
        expect(await storedOnEmulator(blobId)).toMatchObject({ ...declared, epochsBought: 4 });
        const state = JSON.parse((await cli(["stack", "export"])).stdout).deployment.resources as Array<{ type: string }>;
        expect(state.map((r) => r.type).filter((t) => t.includes("dynamic"))).toEqual([]);
      },
      { config: { blobId, mode: "dynamic", declared: JSON.stringify({ ...declared, retentionEpochs: 3 }) } },
    );
  });
});
