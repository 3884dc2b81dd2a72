import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { fromOutputTexts, pathMap } from "../../../provider/folder/entries";
import { STORED_FOLDER_TYPES } from "../../../provider/engine/urns";
import { EMULATOR_DEFAULT_API_KEY } from "../../../emulator";
import { blobBytes, FIXTURE, stopEmulator, withStack } from "../../helpers/engine";

/**
 * The TypeScript StoredFolder with `oneResource: true`, through the real engine: the folder is
 * one dynamic resource (the same core as the plugin's tuskr:index:StoredFolder), whatever the
 * number of files; identical files are one entry; a change sends only what it needs; the state
 * holds no provider code beyond the stub and no key.
 */
afterAll(stopEmulator);

const write = (dir: string, rel: string, text: string) => {
  fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
  fs.writeFileSync(path.join(dir, rel), text);
};

describe("StoredFolder { oneResource: true } (TypeScript, dynamic resource)", () => {
  it("40 files are one resource: up, no-op, add / edit / remove, destroy; requests exactly the minimum", async () => {
    await withStack(FIXTURE, async ({ stack, emu, workDir, cli }) => {
      const site = path.join(workDir, "site");
      for (let i = 0; i < 40; i++) write(site, `pages/p${String(i).padStart(2, "0")}.html`, `<p>page ${i % 30}</p>\n`);
      write(site, "css/app.css", "body { margin: 0 }\n");
      const folder = { path: "site", tag: "site", retentionEpochs: 2, oneResource: true, files: { "css/app.css": { metadata: { kind: "style" } } } };
      await stack.setConfig("folders", { value: JSON.stringify({ site: folder }) });
      emu.clearRequests();
      const up = await stack.up();
      // The stack, the component and its one resource.
      expect(up.summary.resourceChanges).toEqual({ create: 3 });
      const writes = () =>
        emu
          .requests()
          .map((r) => r.route)
          .filter((r) => r !== "get");
      // 41 paths, 31 contents: 31 uploads, and one PATCH for the metadata the upload form cannot carry.
      expect(writes().sort()).toEqual([...Array(31).fill("upload"), "patch"].sort());
      const ids = up.outputs.folderBlobIds.value.site as Record<string, string>;
      expect(Object.keys(ids)).toHaveLength(41);
      expect(ids["pages/p00.html"]).toBe(ids["pages/p30.html"]);
      expect(await blobBytes(emu, ids["css/app.css"])).toEqual(fs.readFileSync(path.join(site, "css/app.css")));
      expect(emu.files().find((f) => f.blobId === ids["css/app.css"])).toMatchObject({ mimeType: "text/css", metadata: { kind: "style" }, uploadEpochs: 2 });

      emu.clearRequests();
      expect((await stack.preview()).changeSummary).toEqual({ same: 3 });
      expect(emu.requests()).toEqual([]);

      write(site, "new.html", "<p>new</p>\n");
      write(site, "css/app.css", "body { margin: 1em }\n");
      fs.rmSync(path.join(site, "pages/p39.html"));
      // The preview shows each path added, changed or removed as itself, and no other.
      const shown = (await stack.preview({ diff: true })).stdout;
      const marked = shown.split("\n").flatMap(
        (line) =>
          line
            .match(/^\s*([-+~]) (\S+\.(?:html|css))\s*:/)
            ?.slice(1, 3)
            .join(" ") ?? [],
      );
      expect(marked.sort()).toEqual(["+ new.html", "- pages/p39.html", "~ css/app.css"]);
      emu.clearRequests();
      const changed = await stack.up();
      expect(changed.summary.resourceChanges).toEqual({ same: 2, update: 1 });
      expect(writes().sort()).toEqual(["patch", "upload", "upload"]);
      const after = changed.outputs.folderBlobIds.value.site as Record<string, string>;
      expect(Object.keys(after)).toHaveLength(41);
      expect(after["pages/p39.html"]).toBeUndefined();

      const exported = (await cli(["stack", "export"])).stdout;
      const resources = JSON.parse(exported).deployment.resources as Array<{
        type: string;
        inputs?: Record<string, unknown>;
        outputs?: Record<string, unknown>;
      }>;
      const resource = resources.find((r) => r.type === STORED_FOLDER_TYPES.dynamic)!;
      // The paths are recorded as texts in parts among the inputs (what a preview compares), as
      // one text among the outputs, and not again on the component, whose outputs are its resource's.
      expect(typeof resource.inputs?.manifest).toBe("object");
      expect(pathMap(resource.inputs?.manifest)).toEqual(JSON.parse(String(resource.outputs?.manifestText)));
      expect(resource.outputs?.manifest).toBeUndefined();
      expect(Object.keys(JSON.parse(String(resource.outputs?.manifestText)))).toHaveLength(41);
      // The outputs by path, too, are texts on the resource (the program reads them as maps).
      expect(resource.outputs?.blobIds).toBeUndefined();
      expect(resource.outputs?.urls).toBeUndefined();
      expect(JSON.parse(String(resource.outputs?.blobIdsText))).toEqual(after);
      // Each url is the service's address of its blob: the base, said once.
      expect(resource.outputs?.urlsText).toBe("{}");
      expect(Object.keys(fromOutputTexts(resource.outputs ?? {}).urls as object)).toHaveLength(41);
      const component = resources.find((r) => r.type === "tuskr:index:StoredFolder")!;
      expect(component.outputs ?? {}).toEqual({});
      expect(String(resource.inputs?.__provider)).toMatch(/pulumi-tuskr\/folder-(provider|impl)/);
      expect(String(resource.inputs?.__provider).length).toBeLessThan(4000);
      expect(exported).not.toContain("tsk_test_emulator_local_key");
      // The verdict its last write recorded (folder/resting.ts) fingerprints values that may be secret: encrypted.
      expect(resource.outputs?.resting).toMatchObject({
        "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
        ciphertext: expect.any(String),
      });

      // The expiry alarm on this export: the resource's entries are secret (encrypted here), so
      // the folder is one row with its earliestExpiresAt, the soonest end of its files.
      const ends = Object.values(after).map((id) => Date.parse(emu.files().find((f) => f.blobId === id)?.expiresAt ?? ""));
      expect(Date.parse(String(resource.outputs?.earliestExpiresAt))).toBe(Math.min(...ends));
      const expiry = (within: string) =>
        spawnSync(process.execPath, [path.resolve(__dirname, "../../../dist/provider/cli/main.js"), "expiry", "--json", "--within", within], {
          input: exported,
          encoding: "utf8",
        });
      const quiet = expiry("1");
      expect(quiet.status).toBe(0);
      expect(JSON.parse(quiet.stdout).rows).toMatchObject([
        { resource: "site", expiresAt: resource.outputs?.earliestExpiresAt, epochsLeft: 2, alarm: false, entriesUnread: true },
      ]);
      expect(expiry("2").status).toBe(1);

      // A state the release before wrote (blobIds and urls maps among the outputs, the manifest a
      // map among the inputs) upgrades in place: nothing to change, nothing sent, the same outputs by path.
      const state = JSON.parse(exported);
      const recorded = state.deployment.resources.find((r: { type: string }) => r.type === STORED_FOLDER_TYPES.dynamic);
      const { blobIdsText: _ids, urlsText: _urls, urlBase: _base, ...outputs } = recorded.outputs;
      const { blobIds, urls } = fromOutputTexts(recorded.outputs);
      recorded.outputs = { ...outputs, blobIds, urls };
      recorded.inputs.manifest = pathMap(recorded.inputs.manifest);
      const file = path.join(workDir, "previous-release.json");
      fs.writeFileSync(file, JSON.stringify(state));
      expect((await cli(["stack", "import", "--file", file])).code).toBe(0);
      emu.clearRequests();
      expect((await stack.preview()).changeSummary).toEqual({ same: 3 });
      const upgraded = await stack.up();
      expect(upgraded.summary.resourceChanges).toEqual({ same: 3 });
      expect(emu.requests()).toEqual([]);
      expect(upgraded.outputs.folderBlobIds.value.site).toEqual(after);

      emu.clearRequests();
      await stack.destroy();
      expect(emu.requests()).toEqual([]);
    });
  });

  it("a name changed outside the stack: the refresh says it, the next preview shows it under the file's path, the up sets it back", async () => {
    await withStack(FIXTURE, async ({ stack, emu, workDir, cli }) => {
      const site = path.join(workDir, "site");
      write(site, "w1.html", "<p>one</p>\n");
      write(site, "w2.html", "<p>two</p>\n");
      await stack.setConfig("folders", { value: JSON.stringify({ site: { path: "site", tag: "site", oneResource: true } }) });
      const ids = (await stack.up()).outputs.folderBlobIds.value.site as Record<string, string>;
      await fetch(`${emu.url}/v1/files/${ids["w1.html"]}`, {
        method: "PATCH",
        headers: { Authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}`, "Content-Type": "application/json" },
        body: JSON.stringify({ name: "hacked" }),
      });
      const refresh = await cli(["refresh", "--yes", "--diff"]);
      expect(refresh.code).toBe(0);
      expect(refresh.stdout + refresh.stderr).toMatch(/name differs from what this stack set: "w1\.html" → "hacked"/);
      const preview = await cli(["preview", "--diff"]);
      expect(preview.code).toBe(0);
      expect(preview.stdout).toMatch(/w1\.html[\s\S]*hacked/);
      emu.clearRequests();
      expect((await stack.up()).summary.resourceChanges).toMatchObject({ update: 1 });
      expect(emu.requests().map((r) => [r.route, r.requestBody])).toEqual([["patch", { name: "w1.html" }]]);
      expect((await stack.preview()).changeSummary).toEqual({ same: 3 });
    });
  });
});
