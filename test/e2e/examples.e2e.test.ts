import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot, sharedEmulator, stopEmulator, storedOnEmulator, withStack } from "../helpers/engine";

afterAll(stopEmulator);

/** Uploads an example's files/ to the emulator and returns blobId by file name. */
async function uploadExampleFiles(example: string, tag?: string): Promise<Record<string, string>> {
  const emu = await sharedEmulator();
  const dir = path.join(repoRoot, "examples", example, "files");
  const ids: Record<string, string> = {};
  for (const name of fs.readdirSync(dir)) {
    ids[name] = (await emu.uploadFile({ content: fs.readFileSync(path.join(dir, name)), filename: name, tag })).blobId;
  }
  return ids;
}

describe("examples/basic, step by step", () => {
  it("adopts three files, then applies steps/1-edit (PATCHes only) and steps/2-renew (renews only)", async () => {
    const ids = await uploadExampleFiles("basic");
    const config = { logoBlobId: ids["logo.svg"], handbookBlobId: ids["handbook.md"], datasetBlobId: ids["prices.csv"] };
    await withStack(
      "examples/basic",
      async ({ stack, emu, fileRequests, applyStep, ops, onEvent, events }) => {
        const writes = () => fileRequests().filter((r) => r.route === "patch" || r.route === "renew");
        const up = await stack.up();
        expect(up.summary.resourceChanges).toMatchObject({ create: 4 });
        expect(await storedOnEmulator(ids["logo.svg"])).toMatchObject({ tag: "brand", epochsBought: 5 });

        applyStep("1-edit");
        emu.clearRequests();
        const edit = await stack.preview({ onEvent, diff: true });
        expect(ops(events)).toEqual({ logo: "same", handbook: "update", dataset: "update" });
        expect(edit.stdout).toMatch(/~ tag\s*:\s*"docs"\s*=>\s*"policies"/);
        await stack.up();
        expect(writes().map((r) => [r.route, r.blobId])).toEqual(
          expect.arrayContaining([
            ["patch", ids["handbook.md"]],
            ["patch", ids["prices.csv"]],
          ]),
        );
        expect(writes()).toHaveLength(2);
        expect((await storedOnEmulator(ids["prices.csv"])).metadata).toEqual({ source: "erp-v2", currency: "EUR" });

        applyStep("2-renew");
        emu.clearRequests();
        await stack.up();
        expect(writes().map((r) => [r.route, r.blobId, r.requestBody]).sort()).toEqual(
          [
            ["renew", ids["logo.svg"], { epochs: 7 }],
            ["renew", ids["handbook.md"], { epochs: 7 }],
          ].sort(),
        );
        expect((await storedOnEmulator(ids["logo.svg"])).epochsBought).toBe(12);
      },
      { config },
    );
  });
});

describe("examples/gitops, one stack per environment", () => {
  it("applies the committed Pulumi.staging.yaml and Pulumi.production.yaml values to the same files", async () => {
    const ids = await uploadExampleFiles("gitops");
    for (const [env, epochs] of [
      ["staging", 2],
      ["production", 30],
    ] as const) {
      const emu = await sharedEmulator();
      await emu.reset();
      await uploadExampleFiles("gitops");
      await withStack(
        "examples/gitops",
        async ({ stack }) => {
          const up = await stack.up();
          expect(up.summary.resourceChanges).toMatchObject({ create: 3 });
          for (const [file, tag] of [
            ["release-notes.md", `${env}-docs`],
            ["app.js", `${env}-app`],
          ]) {
            expect(await storedOnEmulator(ids[file])).toMatchObject({ tag, metadata: { environment: env, managedBy: "pulumi" }, epochsBought: epochs });
          }
        },
        { stackName: env },
      );
    }
  });
});
