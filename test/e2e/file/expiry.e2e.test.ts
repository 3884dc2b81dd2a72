import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FIXTURE, stopEmulator, storedOnEmulator, upload, withStack } from "../../helpers/engine";

afterAll(stopEmulator);

describe("expiry-aware previews and keep-alive, through the real engine", () => {
  it("keep-alive: across an advanced epoch clock, the preview says a renewal is due and how much; up buys it once", async () => {
    const id = await upload("keepalive");
    await withStack(FIXTURE, async ({ stack, emu, declare, fileRequests, cli }) => {
      const keepAlive = { minRemainingEpochs: 3, renewEpochs: 5 };
      await declare({ f: { blobId: id, name: "ka.txt", retentionEpochs: 3, keepAlive } });
      await stack.up();
      // Stored for 1 epoch, declared 3 from this one: 2 bought, 3 left, not fewer than 3: nothing due yet.
      expect(await storedOnEmulator(id)).toMatchObject({ epochsBought: 2 });
      const quiet = await stack.preview();
      expect(quiet.changeSummary).toMatchObject({ same: 2 });

      await emu.advanceEpochs(2);
      await stack.refresh();
      const preview = await stack.preview();
      expect(preview.changeSummary).toMatchObject({ update: 1 });
      expect(preview.stdout).toMatch(/keep-alive renewal due: 1 epoch\(s\) left .*fewer than 3; buys 5 epoch\(s\)/);
      // Keep-alive renews it in this very up: no "expiring soon" (issue 21's truthful preview).
      expect(preview.stdout).not.toMatch(/expiring soon/);
      if (process.env.TUSKR_E2E_ARTIFACTS) fs.writeFileSync(path.join(process.env.TUSKR_E2E_ARTIFACTS, "keepalive-preview.txt"), preview.stdout);

      emu.clearRequests();
      const up = await stack.up();
      // The expiry read first, then the purchase.
      expect(fileRequests().map((r) => [r.route, r.requestBody])).toEqual([
        ["get", undefined],
        ["renew", { epochs: 5 }],
      ]);
      expect(up.outputs.files.value.f.retentionEpochs).toBe(3);
      const state = (await stack.exportStack()).deployment.resources.find((r: { type: string }) => r.type.endsWith("StoredFile"));
      expect(state.outputs).toMatchObject({ retentionEpochs: 3, keepAliveEpochs: 5, remainingEpochs: 6 });
      expect(await storedOnEmulator(id)).toMatchObject({ epochsBought: 7 });

      // Bought once: the next preview and up have nothing to do.
      emu.clearRequests();
      expect((await stack.preview()).changeSummary).toMatchObject({ same: 2 });
      await stack.up();
      expect(fileRequests().filter((r) => r.route !== "get")).toEqual([]);
      // `pulumi preview --json`, the summary command's input, carries the same notice.
      const json = await cli(["preview", "--json"]);
      expect(json.code).toBe(0);
      expect(JSON.parse(json.stdout).changeSummary).toEqual({ same: 2 });
    });
  });

  it("a raise past the 53-epoch horizon fails at preview with the numbers, before any request", async () => {
    const id = await upload("horizon");
    await withStack(FIXTURE, async ({ stack, emu, declare, fileRequests }) => {
      await declare({ f: { blobId: id, retentionEpochs: 10 } });
      await stack.up();
      emu.clearRequests();
      await declare({ f: { blobId: id, retentionEpochs: 10 + 50 } });
      const failure = await stack.preview().then(
        () => "",
        (e: Error) => String(e),
      );
      // Stored for 1 epoch, declared 10 from this one: 10 left; 60 from this one lack 50.
      expect(failure).toMatch(/buying 50 epoch\(s\) would end the storage 60 epochs ahead.*at most 53.*10 epoch\(s\) left.*at most 43 more/);
      expect(fileRequests().filter((r) => r.route !== "get")).toEqual([]);
    });
  });
});
