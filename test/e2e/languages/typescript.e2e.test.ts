import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EMULATOR_DEFAULT_API_KEY } from "../../../emulator";
import {
  blobBytes,
  GITOPS_PASSPHRASE,
  readmeCommand,
  renewsForLack,
  repoRoot,
  sharedEmulator,
  stateKnowsEpoch,
  stopEmulator,
  storedOnEmulator,
  withStack,
} from "../../helpers/engine";

afterAll(stopEmulator);

/** Uploads some of an example's files/ to the emulator out of band; blobId by file name. */
async function uploadExampleFiles(example: string, names: string[], tag?: string): Promise<Record<string, string>> {
  const emu = await sharedEmulator();
  const dir = path.join(repoRoot, "examples", example, "files");
  const ids: Record<string, string> = {};
  for (const name of names) {
    ids[name] = (await emu.uploadFile({ content: fs.readFileSync(path.join(dir, name)), filename: name, tag })).blobId;
  }
  return ids;
}

/** The bytes of an example's file, as the repository has them. */
const exampleBytes = (example: string, file: string) => fs.readFileSync(path.join(repoRoot, "examples", example, "files", file));

describe("examples/basic, step by step", () => {
  it("its README, as written from a copy: adopts the logo and uploads two files; then steps/1-edit (PATCHes only) and steps/2-renew (renews only)", async () => {
    const ids = await uploadExampleFiles("basic", ["logo.svg"]);
    await withStack(
      "examples/basic",
      async (s) => {
        const { stack, emu, fileRequests, applyStep, ops, onEvent, events } = s;
        const writes = () => fileRequests().filter((r) => r.route === "patch" || r.route === "renew");
        emu.clearRequests();
        const up = await readmeCommand(s, "pulumi up");
        expect(up.code, up.output).toBe(0);
        expect(s.readme?.rest()).toEqual([]);
        expect(up.changes).toMatchObject({ create: 4 });
        const outputs = up.outputs.files as Record<string, { blobId: string }>;
        const blobIdOf = { logo: ids["logo.svg"], handbook: outputs.handbook.blobId, dataset: outputs.dataset.blobId };
        expect(outputs.logo.blobId).toBe(blobIdOf.logo);
        // Only the two files declared by content are uploaded, each once, with its own bytes.
        expect(fileRequests().filter((r) => r.route === "upload")).toHaveLength(2);
        for (const [resource, file] of [
          ["handbook", "handbook.md"],
          ["dataset", "prices.csv"],
        ] as const) {
          expect(await blobBytes(emu, blobIdOf[resource])).toEqual(exampleBytes("basic", file));
          expect(await storedOnEmulator(blobIdOf[resource])).toMatchObject({ name: file, epochsBought: 0 });
        }
        // Uploaded for one epoch, declared 5 from the adoption's: 4 bought.
        expect(await storedOnEmulator(blobIdOf.logo)).toMatchObject({ tag: "brand", epochsBought: 4 });
        expect(await storedOnEmulator(blobIdOf.handbook)).toMatchObject({ tag: "docs", metadata: { team: "people", audience: "staff" } });

        applyStep("1-edit");
        emu.clearRequests();
        const edit = await stack.preview({ onEvent, diff: true });
        expect(ops(events)).toEqual({ logo: "same", handbook: "update", dataset: "update" });
        expect(edit.stdout).toMatch(/~ tag\s*:\s*"docs"\s*=>\s*"policies"/);
        await stack.up();
        expect(writes().map((r) => [r.route, r.blobId])).toEqual(
          expect.arrayContaining([
            ["patch", blobIdOf.handbook],
            ["patch", blobIdOf.dataset],
          ]),
        );
        expect(writes()).toHaveLength(2);
        expect(fileRequests().filter((r) => r.route === "upload")).toHaveLength(0);
        expect((await storedOnEmulator(blobIdOf.dataset)).metadata).toEqual({ source: "erp-v2", currency: "EUR" });

        const handbookKnewEpoch = await stateKnowsEpoch(s, blobIdOf.handbook);
        applyStep("2-renew");
        emu.clearRequests();
        await stack.up();
        const renewsOf = (blobId: string) =>
          writes().flatMap((r) => (r.route === "renew" && r.blobId === blobId ? [(r.requestBody as { epochs: number }).epochs] : []));
        expect(writes().every((r) => r.route === "renew")).toBe(true);
        expect(renewsOf(blobIdOf.logo)).toEqual([7]);
        // Uploaded for the service's default single epoch: 7 from its upload's epoch lack 6.
        const handbookRenews = renewsOf(blobIdOf.handbook);
        expect(handbookRenews).toEqual(renewsForLack(6, handbookKnewEpoch, handbookRenews.length));
        expect(renewsOf(blobIdOf.dataset)).toEqual([]);
        expect((await storedOnEmulator(blobIdOf.logo)).epochsBought).toBe(11);
        expect((await storedOnEmulator(blobIdOf.handbook)).epochsBought).toBe(6);
      },
      { readme: { placeholders: { "<blobId>": ids["logo.svg"] } } },
    );
  });
});

describe("examples/gitops, one stack per environment", () => {
  it("uploads files/ with the committed Pulumi.staging.yaml and Pulumi.production.yaml values, no blob ids in config", async () => {
    for (const [env, epochs] of [
      ["staging", 2],
      ["production", 30],
    ] as const) {
      const emu = await sharedEmulator();
      await emu.reset();
      await withStack(
        "examples/gitops",
        async (s) => {
          const { stack, emu, fileRequests } = s;
          // Staging as its README says, from a copy: a preview, then the up; production as its pipeline runs it.
          let up: { changes?: Record<string, number>; outputs: Record<string, unknown> };
          if (env === "staging") {
            expect((await readmeCommand(s, "pulumi preview")).code).toBe(0);
            emu.clearRequests();
            const applied = await readmeCommand(s, "pulumi up --yes");
            expect(applied.code, applied.output).toBe(0);
            expect(s.readme?.rest()).toEqual([]);
            up = applied;
          } else {
            up = await s.up();
          }
          // The stack, the folder and its two files.
          expect(up.changes).toMatchObject({ create: 4 });
          const blobIds = up.outputs.blobIds as Record<string, string>;
          expect(Object.keys(blobIds).sort()).toEqual(["app.js", "release-notes.md"]);
          // One upload per file, buying the environment's epochs in the same request: no renew.
          const uploads = fileRequests().filter((r) => r.route === "upload");
          expect(uploads.map((r) => r.requestBody)).toEqual(
            expect.arrayContaining([
              expect.objectContaining({ tag: "docs", epochs: String(epochs), file: expect.objectContaining({ filename: "release-notes.md" }) }),
              expect.objectContaining({ tag: "app", epochs: String(epochs), file: expect.objectContaining({ filename: "app.js" }) }),
            ]),
          );
          expect(uploads).toHaveLength(2);
          expect(fileRequests().filter((r) => r.route === "renew")).toHaveLength(0);
          // The same in both stacks: they share each content's entry (examples/gitops/release.ts).
          for (const [file, tag] of [
            ["release-notes.md", "docs"],
            ["app.js", "app"],
          ]) {
            expect(await blobBytes(emu, blobIds[file])).toEqual(exampleBytes("gitops", file));
            expect(await storedOnEmulator(blobIds[file])).toMatchObject({
              name: file,
              tag,
              metadata: { managedBy: "pulumi" },
              uploadEpochs: epochs,
              epochsBought: 0,
            });
          }
          // The workflow's alarm after this up, with the stack's config as `pulumi config --json`
          // prints it: staging's files have their 2 epochs and its window is 1, production's 30 and 3.
          const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gitops-alarm-"));
          const configFile = path.join(dir, "config.json");
          fs.writeFileSync(configFile, JSON.stringify(await stack.getAllConfig()));
          const expiry = async (...args: string[]) =>
            spawnSync(process.execPath, [path.join(repoRoot, "dist/provider/cli/main.js"), "expiry", "--config", configFile, ...args], {
              input: JSON.stringify(await stack.exportStack()),
              encoding: "utf8",
            });
          const alarm = await expiry();
          expect(alarm.stdout).toMatch(new RegExp(`No file ends within ${env === "staging" ? 1 : 3} epoch\\(s\\)`));
          expect(alarm.status).toBe(0);
          // Each file is named by its path in the folder, even after its name was changed outside the stack.
          await fetch(`${emu.url}/v1/files/${blobIds["app.js"]}`, {
            method: "PATCH",
            headers: { Authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}`, "Content-Type": "application/json" },
            body: JSON.stringify({ name: "renamed-by-hand.js" }),
          });
          await stack.refresh();
          const rows = JSON.parse((await expiry("--json")).stdout).rows as Array<{ resource: string; blobId: string }>;
          expect(rows.map((r) => [r.resource, r.blobId]).sort()).toEqual([
            ["release/app.js", blobIds["app.js"]],
            ["release/release-notes.md", blobIds["release-notes.md"]],
          ]);
          fs.rmSync(dir, { recursive: true, force: true });
        },
        env === "staging" ? { passphrase: GITOPS_PASSPHRASE, readme: {} } : { stackName: env, passphrase: GITOPS_PASSPHRASE },
      );
    }
  });
});
