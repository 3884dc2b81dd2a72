import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { recordedManifest } from "../../../provider/folder/entries";
import { STORED_FOLDER_TYPES } from "../../../provider/engine/urns";
import { FIXTURE, killTree, sharedEmulator, stopEmulator, withStack } from "../../helpers/engine";
import { partOf } from "../../../provider/folder/parts";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
/** The emulator's blobId of some bytes (the sha256, base64url). */
const blobIdOf = (text: string) => createHash("sha256").update(text).digest("base64url");

/**
 * The TypeScript StoredFolder with `parts`, through the real engine: the folder as that many
 * resources, each content in one of them; a lone resource becomes the first part in place; an
 * edit updates only the parts it touches.
 */
afterAll(stopEmulator);

const write = (dir: string, rel: string, text: string) => {
  fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
  fs.writeFileSync(path.join(dir, rel), text);
};

/** The stack's resources, as `pulumi stack export` writes them. */
const exportedResources = async (cli: (args: string[]) => Promise<{ stdout: string }>) =>
  JSON.parse((await cli(["stack", "export"])).stdout).deployment.resources as Array<{
    type: string;
    urn: string;
    outputs?: Record<string, unknown>;
    dependencies?: string[];
  }>;

describe("StoredFolder { parts } (TypeScript, dynamic resources)", () => {
  it("one resource becomes three parts, then four (contents handed over, nothing sent), then three again within the day (taken back, nothing sent); an edit updates the parts it touches", async () => {
    // The service's epoch said, as `pulumi-tuskr doctor` prints it: a content uploaded again when `parts` is
    // lowered then knows its end is reached without the one-epoch probe of a stack that knows no epoch.
    const emu = await sharedEmulator();
    await withStack(
      FIXTURE,
      async ({ stack, workDir, cli }) => {
        const site = path.join(workDir, "site");
        for (let i = 0; i < 30; i++) write(site, `p${String(i).padStart(2, "0")}.html`, `<p>page ${i % 24}</p>\n`);
        const declare = (args: Record<string, unknown>) =>
          stack.setConfig("folders", { value: JSON.stringify({ site: { path: "site", retentionEpochs: 2, ...args } }) });
        const routes = () =>
          emu
            .requests()
            .map((r) => r.route)
            .sort();
        const exported = () => exportedResources(cli);
        const parts = async () => {
          const resources = await exported();
          return new Map(
            resources.filter((r) => r.type === STORED_FOLDER_TYPES.dynamic).map((r) => [r.urn.split("::").pop()!, recordedManifest(r.outputs ?? {})]),
          );
        };

        // One file's own value: the parts that do not hold it record no `files` at all.
        const files = { "p12.html": { tag: "twelve" } };
        await declare({ oneResource: true, files });
        expect((await stack.up()).summary.resourceChanges).toEqual({ create: 3 });
        const ids = (await stack.outputs()).folderBlobIds.value.site as Record<string, string>;

        // Three parts: the lone resource is the first, which keeps its own contents and hands the others to the
        // two new parts, stepped after it: their entries are recorded as they were, and nothing is sent.
        await declare({ parts: 3, files });
        emu.clearRequests();
        const split = await stack.up();
        expect(split.summary.resourceChanges).toEqual({ same: 2, update: 1, create: 2 });
        const after = await parts();
        expect([...after.keys()].sort()).toEqual(["site", "site-part1", "site-part2"]);
        // The count changed, which the first part records: each part is stepped after the one before, so a new
        // part comes after the parts that drop its contents.
        const dependencies = async () => {
          const folders = (await exported()).filter((r) => r.type === STORED_FOLDER_TYPES.dynamic);
          const nameOf = (urn: string) => urn.split("::").pop()!;
          return Object.fromEntries(
            folders.map((r) => [nameOf(r.urn), { after: (r.dependencies ?? []).map(nameOf).sort(), partsBefore: r.outputs?.partsBefore }]),
          );
        };
        expect(await dependencies()).toEqual({
          site: { after: [], partsBefore: 1 },
          "site-part1": { after: ["site"], partsBefore: undefined },
          "site-part2": { after: ["site-part1"], partsBefore: undefined },
        });
        const movedContents = new Set([...Object.values(after.get("site-part1")!), ...Object.values(after.get("site-part2")!)]);
        expect(movedContents.size).toBeGreaterThan(0);
        expect(routes()).toEqual([]);
        const paths = [...after.values()].flatMap((m) => Object.keys(m));
        expect(paths.sort()).toEqual(Object.keys(ids).sort());
        // The same bytes, the same blobIds: the program's map by path is as before.
        expect(split.outputs.folderBlobIds.value.site).toEqual(ids);

        // The next `up` offers what the first part handed over again, and changes nothing: it keeps it for a day.
        emu.clearRequests();
        expect((await stack.up()).summary.resourceChanges).toEqual({ same: 5 });
        const first = async () => (await exported()).find((r) => r.type === STORED_FOLDER_TYPES.dynamic && r.urn.endsWith("::site"));
        expect((await first())?.outputs?.handedOver).toBeDefined();
        expect((await stack.preview()).changeSummary).toEqual({ same: 5 });
        expect(emu.requests()).toEqual([]);

        // A fourth part takes 1 content in 4 from the others, as they were: nothing sent.
        await declare({ parts: 4, files });
        emu.clearRequests();
        const grown = await stack.up();
        expect(grown.summary.resourceChanges?.create).toBe(1);
        expect(routes()).toEqual([]);
        expect(grown.outputs.folderBlobIds.value.site).toEqual(ids);
        const fourth = new Set(Object.values((await parts()).get("site-part3")!));
        expect(fourth.size).toBeGreaterThan(0);
        expect(await dependencies()).toEqual({
          site: { after: [], partsBefore: 3 },
          "site-part1": { after: ["site"], partsBefore: 3 },
          "site-part2": { after: ["site-part1"], partsBefore: 3 },
          "site-part3": { after: ["site-part2"], partsBefore: undefined },
        });
        emu.clearRequests();
        expect((await stack.up()).summary.resourceChanges).toEqual({ same: 6 });
        expect(routes()).toEqual([]);
        await declare({ parts: 3, files });
        emu.clearRequests();
        // Back to three within the day: the fourth part is deleted after the others are stepped, and they take
        // back what they still keep as handed over to it: nothing sent (a day later they would upload it).
        const shrunk = await stack.up();
        expect((await parts()).has("site-part3")).toBe(false);
        expect(routes()).toEqual([]);
        expect(shrunk.outputs.folderBlobIds.value.site).toEqual(ids);

        // One file (its content its own) gets new bytes: its old content's part and its new content's part change, no other.
        write(site, "p10.html", "<p>an edit</p>\n");
        emu.clearRequests();
        const edited = await stack.up();
        const changed = edited.summary.resourceChanges?.update ?? 0;
        expect(changed).toBeGreaterThanOrEqual(1);
        expect(changed).toBeLessThanOrEqual(2);
        expect(edited.summary.resourceChanges?.same).toBe(5 - changed);
        expect(routes()).toEqual(["get", "upload"]);
        const edits = await parts();
        expect([...edits.values()].filter((m) => "p10.html" in m)).toHaveLength(1);

        emu.clearRequests();
        await stack.destroy();
        expect(emu.requests()).toEqual([]);
      },
      { emu, config: { "tuskr:epochSeconds": String(emu.epochSeconds) } },
    );
  });

  it("a folder declared with its count from the start steps its parts together, after the first: none depends on another", async () => {
    const emu = await sharedEmulator();
    await withStack(
      FIXTURE,
      async ({ stack, workDir, cli }) => {
        const site = path.join(workDir, "site");
        for (let i = 0; i < 12; i++) write(site, `p${i}.html`, `<p>page ${i}</p>\n`);
        await stack.setConfig("folders", { value: JSON.stringify({ site: { path: "site", retentionEpochs: 2, parts: 3 } }) });
        const dependencies = async () => {
          return (await exportedResources(cli))
            .filter((r) => r.type === STORED_FOLDER_TYPES.dynamic)
            .map((r) => [r.urn.split("::").pop(), r.dependencies ?? [], r.outputs?.partsBefore])
            .sort();
        };
        const none = [
          ["site", [], undefined],
          ["site-part1", [], undefined],
          ["site-part2", [], undefined],
        ];
        expect((await stack.up()).summary.resourceChanges).toEqual({ create: 5 });
        expect(await dependencies()).toEqual(none);
        // (Bytes the emulator, shared with the test before, has not stored: one upload, no rename.)
        write(site, "p3.html", "<p>an edit from the start</p>\n");
        emu.clearRequests();
        await stack.up();
        expect(
          emu
            .requests()
            .map((r) => r.route)
            .sort(),
        ).toEqual(["get", "upload"]);
        expect(await dependencies()).toEqual(none);
      },
      { emu, config: { "tuskr:epochSeconds": String(emu.epochSeconds) } },
    );
  });
  it("a first part whose create fails under --continue-on-error holds the other parts back: they send nothing", async () => {
    const emu = await sharedEmulator();
    await withStack(
      FIXTURE,
      async ({ stack, workDir, cli }) => {
        const site = path.join(workDir, "site");
        // One file for each part; the first part's only file fails its read-back, so its create records nothing.
        const candidates = Array.from({ length: 1000 }, (_, i) => `<p>held back ${i}</p>\n`);
        const forPart = (n: number) => candidates.find((t) => partOf(sha256(t), 3) === n)!;
        const [failing, second, third] = [forPart(0), forPart(1), forPart(2)];
        write(site, "a.html", failing);
        write(site, "b.html", second);
        write(site, "c.html", third);
        await stack.setConfig("folders", { value: JSON.stringify({ site: { path: "site", retentionEpochs: 2, parts: 3 } }) });
        emu.setFaults({ script: [{ route: "get", blobId: blobIdOf(failing), fault: "5xx", times: 1000 }] });
        emu.clearRequests();
        await expect(stack.up({ continueOnError: true })).rejects.toThrow(/a\.html/);
        emu.setFaults({});
        const sent = new Set(emu.requests().map((r) => r.blobId));
        expect([second, third].filter((t) => sent.has(blobIdOf(t)))).toEqual([]);
        // The next `up` creates the three parts, none depending on another.
        await stack.up();
        const parts = (await exportedResources(cli)).filter((r) => r.type === STORED_FOLDER_TYPES.dynamic);
        expect(parts.map((r) => [r.urn.split("::").pop(), r.dependencies ?? []]).sort()).toEqual([
          ["site", []],
          ["site-part1", []],
          ["site-part2", []],
        ]);
      },
      { emu, config: { "tuskr:epochSeconds": String(emu.epochSeconds) } },
    );
  });
  it("a raise cut short twice, then another: nothing stored is sent again, from the parts it never reached or from what those it reached handed over", async () => {
    const emu = await sharedEmulator();
    await withStack(
      FIXTURE,
      async ({ stack, workDir, cli, startCli }) => {
        const site = path.join(workDir, "site");
        const texts = Array.from({ length: 60 }, (_, i) => `<p>cut short ${i}</p>\n`);
        for (const [i, text] of texts.entries()) write(site, `p${String(i).padStart(2, "0")}.html`, text);
        const declare = (parts: number) => stack.setConfig("folders", { value: JSON.stringify({ site: { path: "site", retentionEpochs: 2, parts } }) });
        await declare(3);
        await stack.up();
        // A new file the second part keeps at 3, 5 and 7 parts: its read-back after the upload is held, and the `up` killed there.
        const extra = Array.from({ length: 1000 }, (_, i) => `<p>new ${i}</p>\n`).find((t) => [3, 5, 7].every((n) => partOf(sha256(t), n) === 1))!;
        write(site, "new.html", extra);
        await declare(5);
        // Twice: the second `up` finds the first part as the first left it, and is killed at the same place.
        for (let kill = 0; kill < 2; kill++) {
          emu.setFaults({ script: [{ route: "get", blobId: blobIdOf(extra), fault: "hang" }] });
          const run = startCli(["up", "--yes", "--skip-preview"]);
          const deadline = Date.now() + 300_000;
          while (!emu.inFlight().some((r) => r.held)) {
            if (Date.now() > deadline) throw new Error(`the read-back was never held:\n${run.output()}`);
            await new Promise((r) => setTimeout(r, 100));
          }
          killTree(run.pid);
          await run.exited;
          emu.setFaults({});
          await cli(["cancel", "--yes"]);
        }
        // The second and third parts, which the killed `up` never finished, still hold contents the new parts take at 7;
        // the first part, which it finished, dropped some, which it keeps as handed over.
        const held = texts.filter((t) => [1, 2].includes(partOf(sha256(t), 3)) && partOf(sha256(t), 7) >= 3);
        const handed = texts.filter((t) => partOf(sha256(t), 3) === 0 && partOf(sha256(t), 5) >= 3);
        expect(held.length).toBeGreaterThan(0);
        expect(handed.length).toBeGreaterThan(0);
        await declare(7);
        emu.clearRequests();
        await stack.up();
        // Nothing stored before is sent again: only the new file.
        const sent = new Set(emu.requests().map((r) => r.blobId));
        expect(texts.filter((t) => sent.has(blobIdOf(t)))).toEqual([]);
      },
      { emu, config: { "tuskr:epochSeconds": String(emu.epochSeconds) } },
    );
  });
});
