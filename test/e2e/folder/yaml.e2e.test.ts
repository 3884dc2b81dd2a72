import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EMULATOR_DEFAULT_API_KEY } from "../../../emulator";
import { STORED_FOLDER_TYPES } from "../../../provider/engine/urns";
import { blobBytes, repoRoot, sharedEmulator, stopEmulator, storedOnEmulator, withStack } from "../../helpers/engine";

/**
 * A StoredFolder from a YAML program (examples/yaml's `site`), through the real engine and the
 * provider plugin: up, a no-op preview that sends nothing, then a file added, one edited, one
 * removed and one moved — each named by the preview, and only the minimum sent — content types
 * and bytes as the repository's, `retainUntil` reached by files added at different times, and a
 * destroy that sends nothing.
 */
afterAll(stopEmulator);

const writes = (routes: string[]) => routes.filter((r) => r === "patch" || r === "renew" || r === "upload");

describe("examples/yaml: StoredFolder through the tuskr provider plugin", () => {
  it("up, no-op, add / edit / remove / move, types and bytes, retainUntil across files added at different times, destroy", async () => {
    const emu = await sharedEmulator();
    const logo = (await emu.uploadFile({ content: fs.readFileSync(path.join(repoRoot, "examples/basic/files/logo.svg")), filename: "logo.svg" })).blobId;
    await withStack(
      "examples/yaml",
      async ({ stack, emu, fileRequests, cli, workDir }) => {
        const routes = () => fileRequests().map((r) => r.route);
        const site = path.join(workDir, "site");
        const up = await stack.up();
        expect(up.summary.resourceChanges).toMatchObject({ create: 4 });
        let blobIds = up.outputs.siteBlobIds.value as Record<string, string>;
        expect(Object.keys(blobIds).sort()).toEqual(["about.html", "index.html", "style.css"]);
        for (const [rel, type] of [
          ["index.html", "text/html"],
          ["about.html", "text/html"],
          ["style.css", "text/css"],
        ]) {
          expect(await blobBytes(emu, blobIds[rel])).toEqual(fs.readFileSync(path.join(repoRoot, "examples/yaml/site", rel)));
          expect(await storedOnEmulator(blobIds[rel])).toMatchObject({ name: rel, tag: "site", mimeType: type });
        }
        expect((await storedOnEmulator(blobIds["index.html"])).metadata).toEqual({ page: "home" });
        const [folder] = JSON.parse((await cli(["stack", "export"])).stdout).deployment.resources.filter(
          (r: { type: string }) => r.type === STORED_FOLDER_TYPES.plugin,
        );
        expect(folder.outputs.urls["style.css"]).toMatch(new RegExp(`/cdn/${blobIds["style.css"]}$`));
        // The verdict the next diff takes instead of reading every entry (folder/resting.ts): encrypted, as it says what the diff says.
        expect(folder.outputs.resting).toMatchObject({
          "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
          ciphertext: expect.any(String),
        });

        // Nothing changed: nothing sent at preview or up.
        emu.clearRequests();
        expect((await stack.preview()).changeSummary).toEqual({ same: 4 });
        expect(routes()).toEqual([]);

        // One added, one edited, one removed, one moved: the preview names each, the up sends
        // two uploads (the new and the edited content) and one PATCH (the moved file's name).
        fs.mkdirSync(path.join(site, "img"));
        fs.writeFileSync(path.join(site, "img/logo.svg"), '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>\n');
        fs.appendFileSync(path.join(site, "style.css"), "p { color: #333; }\n");
        fs.rmSync(path.join(site, "about.html"));
        fs.mkdirSync(path.join(site, "home"));
        fs.renameSync(path.join(site, "index.html"), path.join(site, "home/index.html"));
        emu.clearRequests();
        const preview = await cli(["preview", "--diff"]);
        expect(preview.code, preview.stderr).toBe(0);
        // The engine shows the plugin's per-path diff of the manifest: every file, once.
        for (const line of [
          /\+ img\/logo\.svg\s*: "/,
          /~ style\.css\s*: "[0-9a-f]{64}" => "[0-9a-f]{64}"/,
          /- about\.html\s*: "/,
          /\+ home\/index\.html\s*: "/,
          /- index\.html\s*: "/,
        ]) {
          expect(preview.stdout).toMatch(line);
        }
        const json = JSON.parse((await cli(["preview", "--json"])).stdout) as {
          steps: Array<{ urn: string; detailedDiff?: Record<string, { kind: string }> }>;
        };
        expect(Object.keys(json.steps.find((st) => st.urn.endsWith("::site"))?.detailedDiff ?? {}).sort()).toEqual(
          ['manifest["about.html"]', 'manifest["home/index.html"]', 'manifest["img/logo.svg"]', 'manifest["index.html"]', 'manifest["style.css"]'].sort(),
        );
        expect(routes()).toEqual([]);
        const changed = await stack.up();
        expect(changed.summary.resourceChanges).toMatchObject({ update: 1, same: 3 });
        expect(writes(routes()).sort()).toEqual(["patch", "upload", "upload"]);
        const moved = (changed.outputs.siteBlobIds.value as Record<string, string>)["home/index.html"];
        expect(moved).toBe(blobIds["index.html"]);
        expect(await storedOnEmulator(moved)).toMatchObject({ name: "home/index.html", mimeType: "text/html", metadata: { page: "home" } });
        blobIds = changed.outputs.siteBlobIds.value as Record<string, string>;
        expect(Object.keys(blobIds).sort()).toEqual(["home/index.html", "img/logo.svg", "style.css"]);
        expect(await storedOnEmulator(blobIds["img/logo.svg"])).toMatchObject({ mimeType: "image/svg+xml" });

        // An epoch passes, a file is added; then one date for every file: each buys its own
        // gap and all end on the same epoch. (The emulator lets time pass by moving its history
        // back, so the date is taken from its clock.)
        await emu.advanceEpochs(1);
        fs.writeFileSync(path.join(site, "late.txt"), "added an epoch later\n");
        await stack.up();
        const probe = await emu.uploadFile({ content: `probe ${Math.random()}`, filename: "p.txt", epochs: 1 });
        const until = new Date(Date.parse(probe.expiresAt) + 7 * emu.epochSeconds * 1000 - 3_600_000).toISOString();
        await stack.setConfig("siteRetainUntil", { value: until });
        // The pull-request summary of this change counts what the up then buys. (It plans from the
        // expiries the state records, as the preview does; the emulator's time travel moved the
        // service's back by an epoch, which a refresh records.)
        await stack.refresh();
        const previewJson = await cli(["preview", "--json"]);
        expect(previewJson.code, previewJson.stderr).toBe(0);
        const summary = spawnSync(process.execPath, [path.join(repoRoot, "dist/provider/cli/main.js"), "summary"], {
          input: previewJson.stdout,
          encoding: "utf8",
        });
        const bought = () => emu.files().reduce((n, f) => n + f.uploadEpochs + f.epochsBought, 0);
        const before = bought();
        emu.clearRequests();
        const dated = await stack.up();
        blobIds = dated.outputs.siteBlobIds.value as Record<string, string>;
        const ends = await Promise.all(Object.values(blobIds).map(async (b) => (await storedOnEmulator(b)).endEpoch));
        expect(new Set(ends)).toEqual(new Set([emu.currentEpoch() + 8]));
        // One read and one renew per entry (4 contents), nothing else.
        expect(writes(routes())).toEqual(["renew", "renew", "renew", "renew"]);
        expect(summary.stdout).toContain(`0 PATCH on existing files, 4 renew(s), **${bought() - before} epoch(s) to buy**`);

        // A name changed outside the stack: after a refresh, the preview names it under the file's path.
        const siteDiff = async () => {
          const out = await cli(["preview", "--json"]);
          expect(out.code, out.stderr).toBe(0);
          const steps = (JSON.parse(out.stdout) as { steps: Array<{ urn: string; detailedDiff?: Record<string, unknown> }> }).steps;
          return steps.find((st) => st.urn.endsWith("::site"))?.detailedDiff;
        };
        await fetch(`${emu.url}/v1/files/${blobIds["home/index.html"]}`, {
          method: "PATCH",
          headers: { Authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}`, "Content-Type": "application/json" },
          body: JSON.stringify({ name: "hacked" }),
        });
        expect((await cli(["refresh", "--yes"])).code).toBe(0);
        expect(await siteDiff()).toEqual({ 'files["home/index.html"].name': { kind: "delete", inputDiff: true } });
        emu.clearRequests();
        await stack.up();
        expect(
          fileRequests()
            .filter((r) => r.route === "patch")
            .map((r) => r.requestBody),
        ).toEqual([{ name: "home/index.html" }]);

        // A declared change that failed for one file: its retry is the entry's change, not a change made outside the stack.
        const program = path.join(workDir, "Pulumi.yaml");
        fs.writeFileSync(program, fs.readFileSync(program, "utf8").replace("      tag: site\n", "      tag: site-v2\n"));
        emu.setFaults({ script: [{ route: "patch", blobId: blobIds["style.css"], fault: "5xx", times: 100 }] });
        await expect(stack.up()).rejects.toThrow(/style\.css: updating the file failed: .*503 SERVICE_UNAVAILABLE/);
        emu.setFaults({});
        expect(await siteDiff()).toEqual({ 'manifest["style.css"]': { kind: "update", inputDiff: true } });
        // Shown as that file's entry changing, its content the same (not as every blobId removed).
        const retry = await cli(["preview", "--diff"]);
        expect(retry.stdout).toMatch(/~ manifest: \{\s*~ style\.css: "([0-9a-f]{64})" => "\1"\s*\}/);
        expect(retry.stdout).not.toMatch(/- blobIds/);
        emu.clearRequests();
        await stack.up();
        expect(writes(routes())).toEqual(["patch"]);
        expect(await storedOnEmulator(blobIds["style.css"])).toMatchObject({ tag: "site-v2" });

        // A file removed earlier comes back: its content is still stored, so its upload is answered
        // with the entry and nothing is bought; what is said of it is said of the folder, the
        // resource the engine has (not of the entry's own URN, which names no resource).
        fs.writeFileSync(path.join(site, "about.html"), fs.readFileSync(path.join(repoRoot, "examples/yaml/site/about.html")));
        const readded = await stack.up();
        expect(readded.stdout).toMatch(/about\.html.*the service already stored this content/);
        expect(readded.stdout).not.toMatch(/site\/sha256:/);

        emu.clearRequests();
        await stack.destroy();
        expect(routes()).toEqual([]);
      },
      // A date already passed to start with: it buys nothing until it is moved.
      { config: { logoBlobId: logo, siteRetainUntil: "2026-01-01" } },
    );
  });
});

describe("a folder uploaded to a base URL where nothing answers (a wrong tuskr:baseUrl)", () => {
  it("20 files: one error that counts them and says the service cannot be reached, each file named by its path; the folder is not recorded", async () => {
    // A loopback port where nothing listens.
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const dead = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    // A YAML project of the plugin's (its packages installed), given a program of one folder.
    await withStack(
      "test/e2e/file/getfile-yaml",
      async ({ workDir, cli }) => {
        fs.writeFileSync(
          path.join(workDir, "Pulumi.yaml"),
          [
            "name: tuskr-getfile-yaml",
            "runtime: yaml",
            "plugins:",
            "  providers:",
            "    - name: tuskr",
            "      path: ./node_modules/pulumi-tuskr",
            "resources:",
            "  site:",
            "    type: tuskr:index:StoredFolder",
            "    properties:",
            "      path: ./site",
            "",
          ].join("\n"),
        );
        fs.mkdirSync(path.join(workDir, "site"));
        for (let i = 1; i <= 19; i++) fs.writeFileSync(path.join(workDir, "site", `p${String(i).padStart(2, "0")}.html`), `<p>${i}</p>\n`);
        fs.writeFileSync(path.join(workDir, "site", "notes.md"), "notes\n");
        const up = await cli(["up", "--yes"]);
        const output = up.stdout + up.stderr;
        expect(up.code).not.toBe(0);
        // One error for the folder, not the engine's "N errors occurred" list of some of its files.
        expect(output).not.toMatch(/errors occurred/);
        const failed = Number(/(\d+) of 20 file\(s\) failed/.exec(output)?.[1] ?? 0);
        const notSent = Number(/(\d+) of 20 file\(s\) not sent, as the service cannot be reached/.exec(output)?.[1] ?? 0);
        expect(failed + notSent, output).toBe(20);
        expect(output).toMatch(/ECONNREFUSED: nothing answers at http:\/\/127\.0\.0\.1:\d+: check tuskr:baseUrl/);
        expect(output).not.toMatch(/refuses every request|upload of/);
        // Nothing stored, nothing recorded: the stack resource alone, which Pulumi creates on a first `up` whatever fails.
        const resources = JSON.parse((await cli(["stack", "export"])).stdout).deployment.resources as Array<{ type: string }>;
        expect(resources.map((r) => r.type).filter((t) => t !== "pulumi:providers:tuskr")).toEqual(["pulumi:pulumi:Stack"]);
      },
      { baseUrl: dead },
    );
  });
});
