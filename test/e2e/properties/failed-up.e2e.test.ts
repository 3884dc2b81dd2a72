import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../../emulator";
import { FIXTURE, openStack, resourceName } from "../../helpers/engine";
import { recordResult } from "../../helpers/reliability-results";

/**
 * A failed `up` leaves state the next `up` completes from: what was done is recorded, nothing
 * declared is dropped, and each file ends exactly at its declared end. The failures are
 * scripted, so each test knows which request fails and how. Files are stored for one epoch
 * before they are declared, so a declared end of N epochs lacks N - 1.
 */

const KEY = `tsk_live_failed_up_${randomBytes(12).toString("hex")}`;
let emu: Emulator;
const results: Record<string, unknown> = {};

beforeAll(async () => {
  emu = await startEmulator({ port: 0, apiKeys: [KEY] });
});
afterAll(async () => {
  recordResult("failed-up", results);
  await emu?.close();
});

const upload = async (label: string) => (await emu.uploadFile({ content: `${label} ${randomBytes(8).toString("hex")}`, epochs: 1 })).blobId;
const stored = (blobId: string) => emu.files().find((f) => f.blobId === blobId)!;
const writes = () => emu.requests().filter((r) => r.route === "patch" || r.route === "renew");

describe("a failed up, then the next one", () => {
  it("renew refused after the PATCH on create: the create is recorded as done so far; the next up buys exactly the declared epochs", async () => {
    const [x, y, z] = await Promise.all([upload("x"), upload("y"), upload("z")]);
    const rs = await openStack(FIXTURE, { emu, apiKey: KEY });
    try {
      const declared = {
        x: { blobId: x, tag: "plain-x" },
        y: { blobId: y, tag: "plain-y", metadata: { k: 1 } },
        z: { blobId: z, tag: "patched-then-renew-fails", metadata: { owner: "ops" }, retentionEpochs: 3 },
      };
      await rs.declare(declared);
      // Every renew answers 503 (not applied) and the read-back shows no move: with no key known to
      // be honoured it is not sent again (it may yet land), RENEW_OUTCOME_UNKNOWN.
      emu.setFaults({ script: [{ route: "renew", fault: "5xx", times: 20 }] });
      emu.clearRequests();
      const failed = await rs.up();
      emu.setFaults({});
      expect(failed.ok).toBe(false);
      expect(failed.output).toMatch(/RENEW_OUTCOME_UNKNOWN|may or may not have been applied/);
      expect(failed.output).toContain(z);

      // Recorded: all three; z with its PATCH done and no epochs counted.
      const afterFail = await rs.resources();
      const byName = Object.fromEntries(afterFail.map((r) => [resourceName(r.urn), r]));
      expect(Object.keys(byName).sort()).toEqual(["x", "y", "z"]);
      expect(byName.z.outputs).toMatchObject({ blobId: z, tag: "patched-then-renew-fails", metadata: { owner: "ops" } });
      expect(byName.z.outputs.retentionEpochs ?? 0).toBe(0);
      expect(stored(z)).toMatchObject({ tag: "patched-then-renew-fails", epochsBought: 0 });

      emu.clearRequests();
      const next = await rs.up();
      expect(next.ok).toBe(true);
      // Only what is left, for z alone: 1 epoch that shows the length (its start was guessed at adoption), then the 1 lacking.
      expect(writes().map((r) => [r.route, r.blobId, r.requestBody])).toEqual([
        ["renew", z, { epochs: 1 }],
        ["renew", z, { epochs: 1 }],
      ]);
      expect(stored(z).epochsBought).toBe(2);
      expect(stored(x).tag).toBe("plain-x");
      expect(stored(y).metadata).toEqual({ k: 1 });
      expect((await rs.resources()).find((r) => resourceName(r.urn) === "z")!.outputs.retentionEpochs).toBe(3);
      expect((await rs.preview()).changeSummary).toEqual({ same: 4 });
      results.refusedRenewOnCreate = {
        script: "renew: 5xx × 20",
        firstUp: "failed (RENEW_OUTCOME_UNKNOWN)",
        recordedAfterFailure: Object.keys(byName).sort(),
        secondUp: "ok, renews of 1 (to learn the epoch) and 1",
        epochsLacking: 2,
        epochsBought: stored(z).epochsBought,
        declared: 3,
      };
    } finally {
      await rs.dispose();
    }
  });

  it("renew applied but its answer lost and the read-back impossible: the next up reads the expiry, bought once", async () => {
    const w = await upload("w");
    const rs = await openStack(FIXTURE, { emu, apiKey: KEY });
    try {
      await rs.declare({ w: { blobId: w, tag: "t", retentionEpochs: 4 } });
      // The create's GET passes (a no-op script entry), the renew is applied and its connection
      // cut, and every read-back GET fails: the outcome cannot be known in this run.
      emu.setFaults({
        script: [
          { route: "get", fault: "latency", latencyMs: 0 },
          { route: "renew", fault: "apply-then-drop" },
          { route: "get", fault: "5xx", times: 60 },
        ],
      });
      emu.clearRequests();
      const failed = await rs.up();
      emu.setFaults({});
      expect(failed.ok).toBe(false);
      expect(failed.output).toMatch(/RENEW_OUTCOME_UNKNOWN|may or may not have been applied/);
      // The renew in doubt is the 1 epoch bought first to learn the length: bought, though nobody was told.
      expect(stored(w).epochsBought).toBe(1);
      const recorded = (await rs.resources()).map((r) => resourceName(r.urn));
      expect(recorded).toEqual(["w"]);

      emu.clearRequests();
      const next = await rs.up();
      expect(next.ok).toBe(true);
      // The renew was recorded as sent: the expiry read shows it landed, and its move the epoch's
      // length. Only the 2 still lacking are bought, in one renew.
      expect(emu.requests().map((r) => [r.route, r.requestBody])).toEqual([
        ["get", undefined],
        ["renew", { epochs: 2 }],
      ]);
      expect(stored(w).epochsBought).toBe(3);
      expect((await rs.resources())[0].outputs.retentionEpochs).toBe(4);
      results.lostAnswerOnCreate = {
        script: "get: pass; renew: apply-then-drop; get: 5xx × 5",
        firstUp: "failed (RENEW_OUTCOME_UNKNOWN), renew of 1 applied",
        secondUp: "ok, the expiry read counts it and shows the length, only the 2 lacking bought in one renew",
        epochsLacking: 3,
        epochsBought: stored(w).epochsBought,
        declared: 4,
      };
    } finally {
      await rs.dispose();
    }
  });

  it("an update whose renew fails after its PATCH keeps the PATCH; raising again later still ends exact", async () => {
    const v = await upload("v");
    const rs = await openStack(FIXTURE, { emu, apiKey: KEY });
    try {
      await rs.declare({ v: { blobId: v, tag: "one", retentionEpochs: 1 } });
      expect((await rs.up()).ok).toBe(true);
      await rs.declare({ v: { blobId: v, tag: "two", retentionEpochs: 6 } });
      // 429s no longer fail an up (they are paced by the time budget), so refuse the renew with
      // 5xx: the read-back sees no move, and it is not sent again.
      emu.setFaults({ script: [{ route: "renew", fault: "5xx", times: 20 }] });
      const failed = await rs.up();
      emu.setFaults({});
      expect(failed.ok).toBe(false);
      expect(failed.output).toMatch(/may or may not have been applied|SERVICE_UNAVAILABLE/);
      const rec = (await rs.resources())[0];
      expect(rec.outputs).toMatchObject({ tag: "two", retentionEpochs: 1 });
      expect(stored(v)).toMatchObject({ tag: "two", epochsBought: 0 });
      expect((await rs.up()).ok).toBe(true);
      expect(stored(v).epochsBought).toBe(5);
      await rs.declare({ v: { blobId: v, tag: "two", retentionEpochs: 9 } });
      expect((await rs.up()).ok).toBe(true);
      expect(stored(v).epochsBought).toBe(8);
      results.refusedRenewOnUpdate = {
        script: "renew: 5xx × 20",
        secondUp: "ok",
        thirdUp: "raise to 9, ok",
        epochsLacking: 8,
        epochsBought: stored(v).epochsBought,
        declared: 9,
      };
    } finally {
      await rs.dispose();
    }
  });
});
