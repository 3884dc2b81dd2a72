import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../../emulator";
import type { StoredFileProvider } from "../../../provider/dynamic/stored-file-provider";
import { renewFile } from "../../helpers/emulator";
import { configuredProvider } from "../../helpers/provider-fixture";

/** A prepaid balance too short for a purchase: 402, said plainly, not retried, nothing recorded as bought. */
let emu: Emulator;
let provider: StoredFileProvider;
beforeAll(async () => {
  emu = await startEmulator({ port: 0, prepaidBalance: 5 });
  provider = await configuredProvider(emu);
});
afterAll(async () => {
  await emu?.close();
});

describe("an insufficient prepaid balance (402)", () => {
  it("the emulator charges each key an epoch per epoch bought and refuses past its balance, buying nothing", async () => {
    const { blobId } = await emu.uploadFile({ content: `balance ${Math.random()}`, epochs: 2 });
    expect((await renewFile(emu, blobId, { epochs: 3 })).status).toBe(200);
    const refused = await renewFile(emu, blobId, { epochs: 3 });
    expect(refused.status).toBe(402);
    expect(refused.body.error).toMatchObject({ code: "INSUFFICIENT_BALANCE" });
    expect(refused.body.error.message).toMatch(/the balance is 2/);
    expect(emu.files().find((f) => f.blobId === blobId)!.epochsBought).toBe(3);
    await emu.reset();
  });

  it("through the provider: the message says so, the renew is sent once, and nothing is recorded as bought", async () => {
    const { blobId } = await emu.uploadFile({ content: `provider balance ${Math.random()}`, epochs: 2 });
    const { outs } = await provider.create({ blobId, retentionEpochs: 3 });
    emu.clearRequests();
    const error = (await provider.update(blobId, outs, { blobId, retentionEpochs: 9 }).then(
      () => undefined,
      (e) => e,
    )) as Error & { properties?: Record<string, unknown> };
    expect(error?.message).toMatch(
      /the service refused to sell epochs: the prepaid balance is short \(402 INSUFFICIENT_BALANCE\); nothing was bought\. Top up the account/,
    );
    expect(emu.requests().filter((r) => r.route === "renew")).toHaveLength(1);
    // Nothing new to record: the engine keeps the state of before (3 declared: the 1 the upload's 2 lacked, bought).
    expect(error.properties).toBeUndefined();
    expect(emu.files().find((f) => f.blobId === blobId)!.epochsBought).toBe(1);
  });
});
