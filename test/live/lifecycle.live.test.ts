import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ASSUMPTIONS, type AssumptionId } from "../../provider/service/assumptions";
import { type EngineStack, openStack, stopEmulator } from "../helpers/engine";
import { FIXTURE_PROJECT, LIVE_BUDGET } from "../helpers/live";

/**
 * The live tier: the lifecycle a user's stack goes through (upload, a folder of three files, PATCH,
 * renew, refresh, getFile, adoption by a second stack, destroy), through the real engine, against
 * the service TUSKR_API_KEY and TUSKR_BASE_URL name: the real Tuskr, or the emulator standing for
 * it (.ci/run). Run by `npm run test:live`, which says the budget first and skips when unset.
 * Each step names the assumptions (provider/service/assumptions.ts) it relies on; they are
 * reported at the end, as held when the step went through.
 */

const key = process.env.TUSKR_API_KEY ?? "";
const baseUrl = process.env.TUSKR_BASE_URL ?? "";
const relied = new Map<AssumptionId, string>();
const relyOn = (step: string, ...ids: AssumptionId[]) => {
  for (const id of ids) if (!relied.has(id)) relied.set(id, step);
};

const stacks: EngineStack[] = [];
afterAll(async () => {
  for (const s of stacks.reverse()) await s.dispose().catch((e: unknown) => process.stderr.write(`live: clean-up failed: ${String(e)}\n`));
  await stopEmulator();
  const held = [...relied].map(([id, step]) => `  held (${step}): ${ASSUMPTIONS[id].assumed}`);
  const untried = (Object.keys(ASSUMPTIONS) as AssumptionId[]).filter((id) => !relied.has(id)).map((id) => `  ${ASSUMPTIONS[id].assumed}`);
  process.stdout.write(
    `test:live relied on, and saw hold:\n${held.join("\n")}\nnot exercised by the lifecycle (\`pulumi-tuskr doctor\` checks them):\n${untried.join("\n")}\n`,
  );
});

/** A text of at most the budget's bytes, new each run (so each upload is a new entry). */
const tiny = (label: string) => `${label} ${new Date().toISOString()} ${randomBytes(4).toString("hex")}\n`.slice(0, LIVE_BUDGET.bytesPerFile);

async function stackOn(): Promise<EngineStack> {
  const s = await openStack(FIXTURE_PROJECT, { apiKey: key, baseUrl, config: { "tuskr:expiryWarningEpochs": "1" } });
  stacks.push(s);
  return s;
}

describe(`the lifecycle against ${baseUrl || "(unset)"}`, () => {
  it("upload, a folder of three files, PATCH, renew, refresh, getFile, adoption by another stack, destroy", async () => {
    expect(key && baseUrl, "run it with `npm run test:live`: TUSKR_API_KEY and TUSKR_BASE_URL name the service").toBeTruthy();
    const site = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-live-site-"));
    for (const name of ["index.html", "style.css", "about.txt"]) fs.writeFileSync(path.join(site, name), tiny(name));
    const a = await stackOn();
    const file = { source: { text: tiny("pulumi-tuskr live") }, name: "live.txt", tag: "pulumi-tuskr-live", retentionEpochs: LIVE_BUDGET.epochsPerUpload };

    // 1. Uploads: one file and a folder of three, each for one epoch.
    await a.declare({ live: file });
    await a.stack.setConfig("folders", {
      value: JSON.stringify({ site: { path: site, tag: "pulumi-tuskr-live", retentionEpochs: LIVE_BUDGET.epochsPerUpload } }),
    });
    const uploaded = await a.up();
    expect(uploaded.ok, uploaded.output).toBe(true);
    relyOn("upload", "key", "upload-answer", "get-answer");
    const blobId = (uploaded.outputs.files as Record<string, { blobId: string }>).live.blobId;
    expect(Object.keys((uploaded.outputs.folderBlobIds as Record<string, Record<string, string>>).site).sort()).toEqual([
      "about.txt",
      "index.html",
      "style.css",
    ]);

    // 2. A PATCH: a tag and metadata.
    await a.declare({ live: { ...file, tag: "pulumi-tuskr-live-2", metadata: { run: "live", keep: 1 } } });
    const patched = await a.up();
    expect(patched.ok, patched.output).toBe(true);
    expect(patched.changes).toMatchObject({ update: 1 });
    relyOn("PATCH", "patch-answer");
    // Removing a key: the merge patch's null (getFile, below, shows the service kept only `run`).
    await a.declare({ live: { ...file, tag: "pulumi-tuskr-live-2", metadata: { run: "live" } } });
    const removed = await a.up();
    expect(removed.ok, removed.output).toBe(true);

    // 3. A renew of one epoch, then nothing more on the next ups.
    const declared = { ...file, tag: "pulumi-tuskr-live-2", metadata: { run: "live" }, retentionEpochs: LIVE_BUDGET.epochsPerUpload + 1 };
    await a.declare({ live: declared });
    const renewed = await a.up();
    expect(renewed.ok, renewed.output).toBe(true);
    relyOn("renew", "renew-answer");
    const after = (renewed.outputs.files as Record<string, { remainingEpochs: number; retentionEpochs: number }>).live;
    expect(after.retentionEpochs).toBe(LIVE_BUDGET.epochsPerUpload + 1);
    expect(after.remainingEpochs).toBeGreaterThanOrEqual(LIVE_BUDGET.epochsPerUpload + 1);

    // 4. A refresh finds the service as the stack left it: the next preview changes nothing.
    const refreshed = await a.refresh();
    expect(refreshed.ok, refreshed.output).toBe(true);
    const preview = await a.preview();
    expect(preview.ok, preview.output).toBe(true);
    expect(Object.keys(preview.changeSummary ?? {}).filter((op) => op !== "same")).toEqual([]);

    // 5. getFile reads the file, writing nothing.
    await a.stack.setConfig("gets", { value: JSON.stringify({ live: blobId }) });
    const read = await a.up();
    expect(read.ok, read.output).toBe(true);
    expect((read.outputs.got as Record<string, { blobId: string; tag: string; metadata: unknown }>).live).toMatchObject({
      blobId,
      tag: "pulumi-tuskr-live-2",
      metadata: { run: "live" },
    });
    relyOn("getFile", "patch-metadata");
    expect((read.outputs.got as Record<string, { metadata: Record<string, unknown> }>).live.metadata).not.toHaveProperty("keep");

    // 6. Another stack adopts the file, declaring 2 epochs from its own start: it buys at most 1.
    const b = await stackOn();
    await b.declare({ adopted: { blobId, retentionEpochs: 2 } });
    const adopted = await b.up();
    expect(adopted.ok, adopted.output).toBe(true);
    expect((adopted.outputs.files as Record<string, { blobId: string }>).adopted.blobId).toBe(blobId);
    const bDone = await b.destroy();
    expect(bDone.ok, bDone.output).toBe(true);

    // 7. Destroy: the stack forgets its files; the service keeps them until their period ends.
    const done = await a.destroy();
    expect(done.ok, done.output).toBe(true);
    fs.rmSync(site, { recursive: true, force: true });
  });
});
