import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Emulator } from "../../../emulator";
import { summarizePreview } from "../../../provider/cli/summary";
import { blobBytes, FIXTURE, resourceName, STORED_FILE_TYPE, stopEmulator, withStack } from "../../helpers/engine";

/**
 * Declaring the file itself: `source` uploads it, StoredFolder keeps a folder, through the real
 * engine. The bytes on the emulator are compared with the files the program read.
 */
afterAll(stopEmulator);

const routes = (emu: Emulator) =>
  emu
    .requests()
    .filter((r) => r.path.startsWith("/v1/"))
    .map((r) => r.route);
const write = (dir: string, rel: string, content: string | Buffer) => {
  fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
  fs.writeFileSync(path.join(dir, rel), content);
};

describe("StoredFile with source", () => {
  it("one upload (+1 PATCH for metadata), nothing at an unchanged preview or up, a content edit is a replace", async () => {
    await withStack(FIXTURE, async (ctx) => {
      const { stack, emu, workDir, declare, cli } = ctx;
      write(workDir, "data/report.txt", "first version\n");
      const declared = { report: { source: { file: "data/report.txt" }, tag: "reports", metadata: { team: "data" }, retentionEpochs: 3 } };
      await declare(declared);
      emu.clearRequests();
      const up = await stack.up();
      expect(up.summary.resourceChanges).toMatchObject({ create: 2 });
      expect(routes(emu)).toEqual(["upload", "get", "patch"]); // each upload read back
      const blobId = up.outputs.files.value.report.blobId as string;
      const stored = emu.files().find((f) => f.blobId === blobId)!;
      expect(stored).toMatchObject({ name: "report.txt", tag: "reports", metadata: { team: "data" }, uploadEpochs: 3, epochsBought: 0 });
      expect(up.outputs.files.value.report.retentionEpochs).toBe(3);
      expect((await blobBytes(emu, blobId)).toString()).toBe("first version\n");

      emu.clearRequests();
      expect((await stack.preview()).changeSummary).toEqual({ same: 2 });
      expect((await stack.up()).summary.resourceChanges).toEqual({ same: 2 });
      expect(routes(emu)).toEqual([]);

      // Another content: a new blob, shown as a replace at preview and in the summary.
      write(workDir, "data/report.txt", "second version\n");
      const json = await cli(["preview", "--json"]);
      const summary = summarizePreview(JSON.parse(json.stdout));
      expect(summary).toMatch(
        new RegExp(
          `\\| \`report\` \\| replace \\| \\*\\*replace\\*\\*: new content \\(sha256 [0-9a-f]{12}… → [0-9a-f]{12}…\\), uploaded as a new file; the old file \`${blobId}\` is left as it is, stored until \\d{4}-`,
        ),
      );
      // The diff a reviewer reads of the replace shows inputs and outputs, never the provider's
      // own bookkeeping (recorded under keys Pulumi's display skips).
      const diff = await cli(["preview", "--diff"]);
      expect(diff.code, diff.stderr).toBe(0);
      expect(diff.stdout).toMatch(/report/);
      expect(diff.stdout).not.toMatch(
        /renewKeySeed|idempotencyHonoured|purchasedExpiresAt|retentionDeclared|secretInputs|sourceHash|unsettledPurchase|unconfirmedEpochs/,
      );
      emu.clearRequests();
      const replaced = await stack.up();
      expect(replaced.summary.resourceChanges).toMatchObject({ replace: 1 });
      const newId = replaced.outputs.files.value.report.blobId as string;
      expect(newId).not.toBe(blobId);
      expect(routes(emu)).toEqual(["upload", "get", "patch"]); // each upload read back
      expect((await blobBytes(emu, newId)).toString()).toBe("second version\n");
      // The old file is left as it is, with its period.
      expect(emu.files().find((f) => f.blobId === blobId)).toMatchObject({ expired: false, tag: "reports" });

      // An update (a tag) and a refresh keep the resource loadable by the program in later runs:
      // the engine hands update and read the asset with its contents elided.
      await declare({ report: { ...declared.report, tag: "reports-v2" } });
      emu.clearRequests();
      expect((await stack.up()).summary.resourceChanges).toMatchObject({ update: 1 });
      expect(routes(emu)).toEqual(["patch"]);
      expect((await stack.up()).summary.resourceChanges).toEqual({ same: 2 });
      await stack.refresh();
      emu.clearRequests();
      expect((await stack.preview()).changeSummary).toEqual({ same: 2 });
      const after = await stack.up();
      expect(after.summary.resourceChanges).toEqual({ same: 2 });
      expect(after.outputs.files.value.report).toMatchObject({ blobId: newId, tag: "reports-v2" });
      expect(routes(emu)).toEqual([]);
    });
  });
});

describe("source: bad content fails the preview, before any request", () => {
  it("a missing file, a directory: the resource's name, the path, and no request", async () => {
    await withStack(FIXTURE, async ({ stack, emu, workDir, declare }) => {
      fs.mkdirSync(path.join(workDir, "a-dir"));
      for (const [source, message] of [
        [{ file: "nowhere.txt" }, /StoredFile bad: source file nowhere\.txt does not exist \(paths are relative to the program's directory/],
        [{ file: "a-dir" }, /StoredFile bad: source a-dir is a directory, not a file: use StoredFolder for a directory/],
      ] as const) {
        await declare({ bad: { source } });
        emu.clearRequests();
        const failure = await stack.preview().then(
          () => "",
          (e: Error) => String(e),
        );
        expect(failure).toMatch(message);
        expect(routes(emu)).toEqual([]);
      }
      await declare({});
    });
  });
});

/** The resource a folder declares for a content: named after it, not after a path. */
const entry = (content: string) => `site/sha256:${createHash("sha256").update(content).digest("hex").slice(0, 32)}`;

describe("StoredFolder", () => {
  it("a stack whose folder the previous release declared (one resource per path) is taken over in place: nothing replaced, sent or bought", async () => {
    await withStack(FIXTURE, async (ctx) => {
      const { stack, emu, workDir } = ctx;
      const site = path.join(workDir, "site");
      write(site, "index.html", "<h1>legacy</h1>\n");
      write(site, "css/app.css", "body { color: red }\n");
      const shared = { path: "site", tag: "site", retentionEpochs: 2 };
      await stack.setConfig("legacyFolders", { value: JSON.stringify({ site: shared }) });
      expect((await stack.up()).summary.resourceChanges).toMatchObject({ create: 4 });
      const before = emu.files().map((f) => [f.blobId, f.endEpoch, f.epochsBought]);
      await stack.setConfig("legacyFolders", { value: "{}" });
      await stack.setConfig("folders", { value: JSON.stringify({ site: shared }) });
      emu.clearRequests();
      const preview = await stack.preview();
      expect(preview.changeSummary).toEqual({ same: 4 });
      const up = await stack.up();
      expect(up.summary.resourceChanges).toEqual({ same: 4 });
      expect(emu.requests()).toEqual([]);
      expect(emu.files().map((f) => [f.blobId, f.endEpoch, f.epochsBought])).toEqual(before);
    });
  });

  it("a folder of more than 300 files kept per content: the preview says `oneResource: true` keeps it as one; a stack the previous release made of it (the same resources) changes nothing: nothing replaced, sent or bought", async () => {
    await withStack(FIXTURE, async (ctx) => {
      const { stack, emu, workDir } = ctx;
      const site = path.join(workDir, "site");
      for (let i = 0; i < 301; i++) write(site, `f${String(i).padStart(3, "0")}.txt`, `file ${i}\n`);
      await stack.setConfig("folders", { value: JSON.stringify({ site: { path: "site", tag: "site", retentionEpochs: 2 } }) });
      // The stack, the component and a StoredFile per content: what every earlier release declared for it.
      expect((await stack.up()).summary.resourceChanges).toEqual({ create: 303 });
      const before = emu.files().map((f) => [f.blobId, f.endEpoch, f.epochsBought]);
      emu.clearRequests();
      const preview = await stack.preview();
      expect(preview.changeSummary).toEqual({ same: 303 });
      expect(preview.stdout).toMatch(/StoredFolder site: 301 files are 301 resources; `oneResource: true` keeps them as one, about 20× faster at 1,000 files/);
      const up = await stack.up();
      expect(up.summary.resourceChanges).toEqual({ same: 303 });
      expect(emu.requests()).toEqual([]);
      expect(emu.files().map((f) => [f.blobId, f.endEpoch, f.epochsBought])).toEqual(before);
    });
  });

  it("a folder is one upload per content; add = 1 upload, edit = a new content, remove = no longer managed, move or copy = no upload, unchanged = nothing", async () => {
    await withStack(FIXTURE, async (ctx) => {
      const { stack, emu, workDir } = ctx;
      const site = path.join(workDir, "site");
      write(site, "index.html", "<h1>home</h1>\n");
      write(site, "css/app.css", "body { margin: 0 }\n");
      write(site, "notes.tmp", "scratch\n");
      const folder = {
        path: "site",
        exclude: ["**/*.tmp"],
        tag: "site",
        metadata: { release: "1" },
        retentionEpochs: 2,
        files: { "index.html": { tag: "entry" } },
      };
      await stack.setConfig("folders", { value: JSON.stringify({ site: folder }) });
      emu.clearRequests();
      const up = await stack.up();
      expect(routes(emu).sort()).toEqual(["get", "get", "patch", "patch", "upload", "upload"]);
      const ids = up.outputs.folderBlobIds.value.site as Record<string, string>;
      expect(Object.keys(ids).sort()).toEqual(["css/app.css", "index.html"]);
      for (const [rel, id] of Object.entries(ids)) {
        expect(await blobBytes(emu, id), rel).toEqual(fs.readFileSync(path.join(site, rel)));
        expect(emu.files().find((f) => f.blobId === id)).toMatchObject({ name: rel, uploadEpochs: 2, metadata: { release: "1" } });
      }
      expect(emu.files().find((f) => f.blobId === ids["index.html"])!.tag).toBe("entry");

      emu.clearRequests();
      expect((await stack.preview()).changeSummary).toEqual({ same: 4 });
      expect(routes(emu)).toEqual([]);

      write(site, "about.html", "<h1>about</h1>\n");
      write(site, "css/app.css", "body { margin: 1em }\n");
      fs.rmSync(path.join(site, "index.html"));
      emu.clearRequests();
      const events: string[] = [];
      const next = await stack.up({
        onEvent: (e) => {
          const m = e.resourcePreEvent?.metadata;
          if (m?.type === STORED_FILE_TYPE) events.push(`${m.op} ${resourceName(m.urn)}`);
        },
      });
      // One resource per content, named after it: the edited file is a new content (created),
      // its old content and the removed file's are no longer declared (deleted: no request).
      expect(events.sort()).toEqual(
        [
          `create ${entry("<h1>about</h1>\n")}`,
          `create ${entry("body { margin: 1em }\n")}`,
          `delete ${entry("body { margin: 0 }\n")}`,
          `delete ${entry("<h1>home</h1>\n")}`,
        ].sort(),
      );
      expect(next.summary.resourceChanges).toMatchObject({ create: 2, delete: 2 });
      // Two uploads (the new file, the edited one), their metadata PATCHes, and nothing for the removed one.
      expect(routes(emu).sort()).toEqual(["get", "get", "patch", "patch", "upload", "upload"]);
      const after = next.outputs.folderBlobIds.value.site as Record<string, string>;
      expect(Object.keys(after).sort()).toEqual(["about.html", "css/app.css"]);
      for (const [rel, id] of Object.entries(after)) expect(await blobBytes(emu, id), rel).toEqual(fs.readFileSync(path.join(site, rel)));

      // A file moved and a copy added: no upload, no purchase; the moved entry's name is PATCHed,
      // the copy maps to the entry its content already has.
      fs.mkdirSync(path.join(site, "pages"));
      fs.renameSync(path.join(site, "about.html"), path.join(site, "pages/about.html"));
      write(site, "css/copy.css", "body { margin: 1em }\n");
      emu.clearRequests();
      const moved = await stack.up();
      expect(moved.summary.resourceChanges).toMatchObject({ update: 1 });
      expect(emu.requests().map((r) => [r.route, r.requestBody])).toEqual([["patch", { name: "pages/about.html" }]]);
      const now = moved.outputs.folderBlobIds.value.site as Record<string, string>;
      expect(now).toEqual({ "pages/about.html": after["about.html"], "css/app.css": after["css/app.css"], "css/copy.css": after["css/app.css"] });
      // The removed file keeps its period on the service.
      expect(emu.files().find((f) => f.blobId === ids["index.html"])).toMatchObject({ expired: false });
    });
  });
});
