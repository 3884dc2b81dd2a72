import { afterEach, describe, expect, it, vi } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, startEmulator, type Emulator, type IdempotencyMode } from "../../emulator";
import type { StoredFileProvider } from "../../provider/stored-file-provider";
import { STORED_FILE_TYPES } from "../../provider/resource-types";
import { configuredProvider } from "../helpers/provider-fixture";

/**
 * What identifies a purchase survives the death of the process that sent it. A run "dies" here
 * with its renew applied by the service but unanswered (an `apply-then-hang` fault holds the
 * answer forever); the next run is a new provider, as after a killed `pulumi up`, given what the
 * engine would give it. The crash tier (test/e2e/crash.e2e.test.ts) does the same through the
 * real engine with SIGKILL.
 */

const URN = `urn:pulumi:dev::proj::${STORED_FILE_TYPES.dynamic}::logo`;
let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

async function setUp(idempotency: IdempotencyMode) {
  emu = await startEmulator({ port: 0, idempotency });
  const blobId = (await emu.uploadFile({ content: `crash ${Math.random()}`, filename: "c.txt", epochs: 5 })).blobId;
  return { emu, blobId };
}

/** A new provider process, configured by the engine. */
async function newRun(emulator: Emulator): Promise<StoredFileProvider> {
  return configuredProvider(emulator, {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
}

/** Starts `call` and returns once the service has applied its renew and holds the answer: the process "dies" there. */
async function dieDuringRenew(emulator: Emulator, blobId: string, call: () => Promise<unknown>): Promise<void> {
  emulator.setFaults({ script: [{ route: "renew", blobId, fault: "apply-then-hang" }] });
  void call().catch(() => undefined); // never settles before the emulator closes
  await vi.waitFor(() => expect(emulator.inFlight().some((r) => r.route === "renew" && r.held)).toBe(true), { timeout: 10_000, interval: 20 });
  emulator.setFaults({});
}

const bought = (emulator: Emulator, blobId: string) => emulator.files().find((f) => f.blobId === blobId)!.epochsBought;

function captureLog() {
  const spy = vi.spyOn(console, "log").mockImplementation(() => undefined);
  return { text: () => spy.mock.calls.flat().map(String).join("\n"), restore: () => spy.mockRestore() };
}

describe("against a service that honours Idempotency-Key", () => {
  it("a create killed after its renew was applied, run again: the same key, replayed, bought once", async () => {
    const { emu, blobId } = await setUp("honour");
    const inputs = { blobId, tag: "t", retentionEpochs: 9, __urn: URN };
    await dieDuringRenew(emu, blobId, async () => (await newRun(emu)).create(inputs));
    expect(bought(emu, blobId)).toBe(9);
    const log = captureLog();
    try {
      const { outs } = await (await newRun(emu)).create(inputs);
      expect(outs.retentionEpochs).toBe(9);
      expect(log.text()).toMatch(/already had this purchase of 9 epoch\(s\).*taken as bought by an earlier, interrupted run/);
    } finally {
      log.restore();
    }
    expect(bought(emu, blobId)).toBe(9);
    const keys = emu
      .requests()
      .filter((r) => r.route === "renew")
      .map((r) => r.idempotencyKey);
    expect(new Set(keys).size).toBe(1);
  });

  it("an update 2 → 5 killed mid-renew, then the program edited to 6: stops, and following its message buys exactly 4 in all", async () => {
    const { emu, blobId } = await setUp("honour");
    const { outs } = await (await newRun(emu)).create({ blobId, retentionEpochs: 2, __urn: URN });
    await dieDuringRenew(emu, blobId, async () => (await newRun(emu)).update(blobId, outs, { blobId, retentionEpochs: 5 }));
    expect(bought(emu, blobId)).toBe(5);
    // The engine still holds the state of before the killed update.
    const stopped = await (await newRun(emu)).update(blobId, outs, { blobId, retentionEpochs: 6 }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(stopped?.message).toMatch(
      /an earlier run of this stack, interrupted, already made this purchase \(retentionEpochs from 2\) for another number of epochs/,
    );
    expect(stopped?.message).toMatch(/Declare retentionEpochs as that run did/);
    expect(bought(emu, blobId)).toBe(5);
    // Following the message: declare 5 again (confirmed, nothing bought), then 6.
    const { outs: confirmed } = await (await newRun(emu)).update(blobId, outs, { blobId, retentionEpochs: 5 });
    expect(bought(emu, blobId)).toBe(5);
    const { outs: last } = await (await newRun(emu)).update(blobId, confirmed, { blobId, retentionEpochs: 6 });
    expect(last.retentionEpochs).toBe(6);
    expect(bought(emu, blobId)).toBe(6);
  });

  it("keys derive from the resource's URN: two runs of a create send the same key, two resources different ones", async () => {
    const { emu, blobId } = await setUp("honour");
    await (await newRun(emu)).create({ blobId, retentionEpochs: 1, __urn: URN });
    await (await newRun(emu)).create({ blobId, retentionEpochs: 1, __urn: `${URN}-other` });
    const keys = emu
      .requests()
      .filter((r) => r.route === "renew")
      .map((r) => r.idempotencyKey);
    expect(keys).toHaveLength(2);
    expect(keys[0]).not.toBe(keys[1]);
    expect(bought(emu, blobId)).toBe(2);
  });
});

describe("a purchase whose outcome could not be learned", () => {
  it("is recorded as unsettled, and the next run settles it from the expiry: counted if it moved by exactly it, bought if not at all", async () => {
    for (const [fault, applied] of [
      ["apply-then-drop", true],
      ["5xx", false],
    ] as const) {
      const { emu, blobId } = await setUp("honour");
      // The adoption's GET passes; then every read-back fails too: the first run cannot learn the outcome.
      emu.setFaults({
        script: [
          { route: "get", fault: "latency", latencyMs: 0 },
          { route: "renew", fault },
          { route: "get", fault: "5xx", times: 20 },
        ],
      });
      const failed = (await (await newRun(emu)).create({ blobId, retentionEpochs: 4, __urn: URN }).then(
        () => undefined,
        (e) => e,
      )) as Error & {
        properties?: Record<string, unknown>;
      };
      emu.setFaults({});
      expect(failed?.message).toMatch(/RENEW_OUTCOME_UNKNOWN|may or may not have been applied/);
      expect(failed.properties).toMatchObject({ retentionEpochs: 0, __unsettledPurchase: { kind: "retention", epochs: 4 } });
      emu.clearRequests();
      const log = captureLog();
      try {
        const { outs } = await (await newRun(emu)).update(blobId, failed.properties!, { blobId, retentionEpochs: 4, __urn: URN });
        expect(outs.retentionEpochs).toBe(4);
        expect(outs.__unsettledPurchase).toBeUndefined();
      } finally {
        log.restore();
      }
      expect(emu.requests().map((r) => r.route)).toEqual(applied ? ["get"] : ["get", "renew"]);
      expect(bought(emu, blobId)).toBe(4);
      await emu.close();
    }
  });
});

describe("against a service that ignores Idempotency-Key", () => {
  it("a create killed after its renew was applied cannot be told apart: bought again, and said so (not silently)", async () => {
    const { emu, blobId } = await setUp("ignore");
    const inputs = { blobId, retentionEpochs: 9, __urn: URN };
    await dieDuringRenew(emu, blobId, async () => (await newRun(emu)).create(inputs));
    const log = captureLog();
    try {
      await (await newRun(emu)).create(inputs);
      expect(log.text()).toMatch(/the service did not confirm the Idempotency-Key.*check on the service that it did not sell them twice/);
    } finally {
      log.restore();
    }
    expect(bought(emu, blobId)).toBe(18);
  });

  it("an update killed after its renew was applied: the next run sees the move, stops before buying, and its message leads to exactly the declared epochs", async () => {
    const { emu, blobId } = await setUp("ignore");
    const { outs } = await (await newRun(emu)).create({ blobId, retentionEpochs: 2, __urn: URN });
    expect(outs.__idempotencyHonoured).toBeUndefined();
    await dieDuringRenew(emu, blobId, async () => (await newRun(emu)).update(blobId, outs, { blobId, retentionEpochs: 5 }));
    expect(bought(emu, blobId)).toBe(5);
    const stopped = (await (await newRun(emu)).update(blobId, outs, { blobId, retentionEpochs: 6 }).then(
      () => undefined,
      (e) => e,
    )) as Error & {
      properties?: Record<string, unknown>;
    };
    expect(stopped?.message).toMatch(
      /expiry moved 3 epoch\(s\) past what this stack bought.*cannot tell whether an interrupted run of its own bought them\. Nothing was bought/,
    );
    expect(stopped?.message).toMatch(/declare retentionEpochs: 5 for the next `pulumi up`: they are then counted/);
    expect(bought(emu, blobId)).toBe(5);
    // The engine records the partial state; following the message: 5 counts them, then 6 buys one.
    const recorded = stopped.properties!;
    expect(recorded.__unconfirmedEpochs).toBe(3);
    emu.clearRequests();
    const { outs: counted } = await (await newRun(emu)).update(blobId, recorded, { blobId, retentionEpochs: 5 });
    expect(counted.retentionEpochs).toBe(5);
    expect(emu.requests().filter((r) => r.route === "renew")).toEqual([]);
    const { outs: last } = await (await newRun(emu)).update(blobId, counted, { blobId, retentionEpochs: 6 });
    expect(last.retentionEpochs).toBe(6);
    expect(bought(emu, blobId)).toBe(6);
  });

  it("after such a stop, any other declared value is taken as 'not ours' and buys the increase", async () => {
    const { emu, blobId } = await setUp("ignore");
    const { outs } = await (await newRun(emu)).create({ blobId, retentionEpochs: 2, __urn: URN });
    // Someone else buys 3 epochs.
    await emu.setFaults({});
    const other = await fetch(`${emu.url}/v1/files/${blobId}/renew`, {
      method: "POST",
      headers: { Authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ epochs: 3 }),
    });
    expect(other.status).toBe(200);
    const stopped = (await (await newRun(emu)).update(blobId, outs, { blobId, retentionEpochs: 6 }).then(
      () => undefined,
      (e) => e,
    )) as Error & {
      properties?: Record<string, unknown>;
    };
    expect(stopped?.message).toMatch(/moved 3 epoch\(s\)/);
    const { outs: last } = await (await newRun(emu)).update(blobId, stopped.properties!, { blobId, retentionEpochs: 6 });
    expect(last.retentionEpochs).toBe(6);
    expect(bought(emu, blobId)).toBe(2 + 3 + 4);
  });
});

/** The engine's wire form of `new pulumi.asset.StringAsset(text)`. */
const textAsset = (text: string) => ({ "4dabf18193072939515e22adb298388d": "c44067f5952c0a294b673a41bacd8c17", text });

/** Starts `call` and returns once the service has applied its upload and holds the answer. */
async function dieDuringUpload(emulator: Emulator, call: () => Promise<unknown>): Promise<void> {
  emulator.setFaults({ script: [{ route: "upload", fault: "apply-then-hang" }] });
  void call().catch(() => undefined);
  await vi.waitFor(() => expect(emulator.inFlight().some((r) => r.route === "upload" && r.held)).toBe(true), { timeout: 10_000, interval: 20 });
  emulator.setFaults({});
}

/** What the service stores of a content: the number of files, and the epochs bought in all (upload and renews). */
const storedAs = (emulator: Emulator, name: string) => {
  const files = emulator.files().filter((f) => f.name === name);
  return { files: files.length, epochs: files.reduce((n, f) => n + f.uploadEpochs + f.epochsBought, 0) };
};

describe("an upload (source) killed or failed mid-request", () => {
  for (const mode of ["honour", "ignore"] as IdempotencyMode[]) {
    it(`a create killed after its upload was applied, run again: one file, its epochs bought once (keys ${mode === "honour" ? "honoured" : "ignored"})`, async () => {
      emu = await startEmulator({ port: 0, idempotency: mode });
      const inputs = { source: textAsset(`upload ${Math.random()}`), name: "u.txt", tag: "t", metadata: { k: 1 }, retentionEpochs: 4, __urn: URN };
      await dieDuringUpload(emu, async () => (await newRun(emu!)).create(inputs));
      expect(storedAs(emu, "u.txt")).toEqual({ files: 1, epochs: 4 });
      const log = captureLog();
      let outs: Record<string, unknown>;
      let said: string;
      try {
        ({ outs } = await (await newRun(emu)).create(inputs));
        said = log.text();
      } finally {
        log.restore();
      }
      expect(outs.retentionEpochs).toBe(4);
      expect(storedAs(emu, "u.txt")).toEqual({ files: 1, epochs: 4 });
      expect(emu.files().find((f) => f.name === "u.txt")).toMatchObject({ tag: "t", metadata: { k: 1 } });
      expect(said).toMatch(
        mode === "honour"
          ? /already had this upload \(its Idempotency-Key was used before\): taken as made by an earlier, interrupted run/
          : /uploaded at .* for exactly the declared 4 epoch\(s\), and did not confirm the Idempotency-Key: taken as this stack's own upload/,
      );
      // The killed run's upload is still held (unanswered, so not in the log yet).
      const keys = [...emu.inFlight(), ...emu.requests()].filter((r) => r.route === "upload").map((r) => r.idempotencyKey);
      expect(keys).toHaveLength(2);
      expect(new Set(keys).size).toBe(1);
    });
  }

  it("killed with 4 epochs, the program then edited to 6: stops naming what to declare; following it, 6 bought in all", async () => {
    emu = await startEmulator({ port: 0, idempotency: "honour" });
    const inputs = { source: textAsset(`edited ${Math.random()}`), name: "e.txt", retentionEpochs: 4, __urn: URN };
    await dieDuringUpload(emu, async () => (await newRun(emu!)).create(inputs));
    const stopped = await (await newRun(emu)).create({ ...inputs, retentionEpochs: 6 }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(stopped?.message).toMatch(/not uploading: an earlier run of this stack, interrupted, already uploaded this content with another number of epochs/);
    expect(stopped?.message).toMatch(/Declare retentionEpochs as that run did/);
    expect(storedAs(emu, "e.txt")).toEqual({ files: 1, epochs: 4 });
    const { outs } = await (await newRun(emu)).create(inputs);
    expect(storedAs(emu, "e.txt")).toEqual({ files: 1, epochs: 4 });
    const { outs: last } = await (await newRun(emu)).update(String(outs.blobId), outs, { ...inputs, retentionEpochs: 6 });
    expect(last.retentionEpochs).toBe(6);
    expect(storedAs(emu, "e.txt")).toEqual({ files: 1, epochs: 6 });
  });

  it("the same content uploaded earlier by someone else, for another period: adopted, the declared epochs bought on top, and said", async () => {
    emu = await startEmulator({ port: 0, idempotency: "ignore" });
    const text = `shared ${Math.random()}`;
    await emu.uploadFile({ content: text, filename: "s.txt", epochs: 2 });
    const log = captureLog();
    let outs: Record<string, unknown>;
    let said: string;
    try {
      ({ outs } = await (await newRun(emu)).create({ source: textAsset(text), name: "s.txt", retentionEpochs: 4, __urn: URN }));
      said = log.text();
    } finally {
      log.restore();
    }
    expect(outs.retentionEpochs).toBe(4);
    expect(emu.files().find((f) => f.name === "s.txt")).toMatchObject({ uploadEpochs: 2, epochsBought: 4 });
    expect(said).toMatch(
      /already stored this content \(uploaded at .*\) and did not confirm the Idempotency-Key: adopted as it stands; the 4 declared epoch\(s\) are bought on top/,
    );
  });

  it("an upload whose answer is lost (applied, connection dropped): not sent again in that run; the next run finds it, bought once", async () => {
    emu = await startEmulator({ port: 0, idempotency: "honour" });
    const inputs = { source: textAsset(`dropped ${Math.random()}`), name: "d.txt", retentionEpochs: 3, __urn: URN };
    emu.setFaults({ script: [{ route: "upload", fault: "apply-then-drop" }] });
    const failed = await (await newRun(emu)).create(inputs).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(failed?.message).toMatch(
      /upload of d\.txt \(\d+ bytes\) may or may not have been applied .*not sent again, to avoid buying its epochs twice\. Run `pulumi up` again/,
    );
    expect(emu.requests().filter((r) => r.route === "upload")).toHaveLength(1);
    const { outs } = await (await newRun(emu)).create(inputs);
    expect(outs.retentionEpochs).toBe(3);
    expect(storedAs(emu, "d.txt")).toEqual({ files: 1, epochs: 3 });
  });
});
