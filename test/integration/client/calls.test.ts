import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { TuskrClient } from "../../../provider/client/client";
import { TuskrApiError } from "../../../provider/client/errors";
import { EMULATOR_DEFAULT_API_KEY, startEmulator, type FaultKind } from "../../../emulator";
import { renewFile } from "../../helpers/emulator";

type Emulator = Awaited<ReturnType<typeof startEmulator>>;
const KEY = EMULATOR_DEFAULT_API_KEY;
const fastRetry = { baseDelayMs: 5, maxDelayMs: 20, maxAttempts: 4, maxTotalMs: 10_000 };

let emu: Emulator;
let blobId: string;
const client = (extra: Partial<ConstructorParameters<typeof TuskrClient>[0]> = {}) =>
  new TuskrClient({ baseUrl: emu.url, apiKey: KEY, retry: fastRetry, ...extra });
const expectApiError = async (p: Promise<unknown>): Promise<TuskrApiError> => {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(TuskrApiError);
  return e as TuskrApiError;
};
const v1 = () => emu.requests().filter((r) => r.path.startsWith("/v1/"));
const epochsBought = (id: string) => emu.files().find((f) => f.blobId === id)?.epochsBought;

beforeAll(async () => {
  emu = await startEmulator({ port: 0, readOnlyApiKeys: ["tsk_test_readonly_key"], seed: 7 });
});
afterAll(async () => emu?.close());
beforeEach(async () => {
  await emu.reset();
  emu.setFaults({});
  const up = await emu.uploadFile({ content: Buffer.from(`hello ${Math.random()}`), filename: "hello.txt", tag: "t0" });
  blobId = up.blobId;
  emu.clearRequests();
});

describe("client ↔ emulator: operations", () => {
  it("GET reads the file's index entry", async () => {
    const file = await client().getFile(blobId);
    expect(file).toMatchObject({ blobId, name: "hello.txt", tag: "t0" });
    expect(Date.parse(file.expiresAt!)).toBeGreaterThan(Date.now());
    expect(v1()).toHaveLength(1);
  });

  it("PATCH sends only the given fields, as JSON, with the package's User-Agent", async () => {
    const updated = await client().updateFile(blobId, { tag: "t1", metadata: { a: 1 } });
    expect(updated).toMatchObject({ blobId, name: "hello.txt", tag: "t1", metadata: { a: 1 } });
    const [req] = v1();
    expect(req).toMatchObject({ method: "PATCH", route: "patch", status: 200, requestBody: { tag: "t1", metadata: { a: 1 } } });
  });

  it("renew buys exactly the epochs asked and moves expiresAt by that many epochs", async () => {
    const before = await client().getFile(blobId);
    const result = await client().renewFile(blobId, 5, { idempotencyKey: "k-5", expiresAtBefore: before.expiresAt });
    expect(result.confirmedBy).toBe("response");
    const moved = Date.parse(result.file!.expiresAt!) - Date.parse(before.expiresAt!);
    expect(moved).toBe(5 * 86_400_000);
    expect(epochsBought(blobId)).toBe(5);
  });
});

describe("client ↔ emulator: upload", () => {
  it("sends the file from disk as multipart with its name, tag, epochs and Idempotency-Key; 201 new, then 200 for the same content", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-client-"));
    try {
      const file = path.join(dir, "report.csv");
      fs.writeFileSync(file, `a,b\n${Math.random()}\n`);
      const size = fs.statSync(file).size;
      const first = await client().uploadFile({ path: file, filename: "reports/q3.csv" }, { tag: "reports", epochs: 3 }, { idempotencyKey: "up-1" });
      expect(first).toMatchObject({ created: true, keyHonoured: false, confirmedBy: "response", resent: false, file: { size, tag: "reports" } });
      const [req] = v1();
      expect(req).toMatchObject({
        route: "upload",
        status: 201,
        idempotencyKey: "up-1",
        requestBody: { file: { filename: "reports/q3.csv", bytes: size }, tag: "reports", epochs: "3" },
      });
      expect(emu.files().find((f) => f.blobId === first.file.blobId)).toMatchObject({ name: "reports/q3.csv", uploadEpochs: 3 });

      const again = await client().uploadFile({ path: file, filename: "other.csv" }, {}, { idempotencyKey: "up-2" });
      expect(again).toMatchObject({ created: false, file: { blobId: first.file.blobId } });
      const replayed = await client().uploadFile({ path: file, filename: "reports/q3.csv" }, { tag: "reports", epochs: 3 }, { idempotencyKey: "up-1" });
      expect(replayed).toMatchObject({ created: true, confirmedBy: "replay", file: { blobId: first.file.blobId } });
      expect(emu.files().filter((f) => f.blobId === first.file.blobId)).toHaveLength(1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("an ambiguous failure is not sent again unless the key is known to be honoured; then it is, and replayed", async () => {
    emu.setFaults({ script: [{ route: "upload", fault: "apply-then-drop" }] });
    const text = `ambiguous ${Math.random()}`;
    const failed = await expectApiError(client().uploadFile({ text, filename: "a.txt" }, { epochs: 2 }, { idempotencyKey: "amb-1" }));
    expect(failed.code).toBe("UPLOAD_OUTCOME_UNKNOWN");
    expect(v1().filter((r) => r.route === "upload")).toHaveLength(1);

    emu.clearRequests();
    emu.setFaults({ script: [{ route: "upload", fault: "apply-then-drop" }] });
    const text2 = `honoured ${Math.random()}`;
    const result = await client().uploadFile({ text: text2, filename: "b.txt" }, { epochs: 2 }, { idempotencyKey: "amb-2", keyHonoured: true });
    expect(result).toMatchObject({ created: true, confirmedBy: "replay", resent: true });
    expect(
      v1()
        .filter((r) => r.route === "upload")
        .map((r) => r.idempotencyKey),
    ).toEqual(["amb-2", "amb-2"]);
    expect(emu.files().filter((f) => f.name === "b.txt")).toMatchObject([{ uploadEpochs: 2 }]);
  });

  it("an upload's key is known to be honoured once the service replayed an upload's answer: the next ambiguous upload is resent, replayed", async () => {
    const c = client();
    const first = { text: `first ${Math.random()}`, filename: "f.txt" };
    await c.uploadFile(first, { epochs: 1 }, { idempotencyKey: "echo-1" });
    // An echoed key is no evidence: a gateway may echo a key the service ignores.
    expect(c.keysHonoured("upload")).toBe(false);
    await c.uploadFile(first, { epochs: 1 }, { idempotencyKey: "echo-1" });
    expect(c.keysHonoured("upload")).toBe(true);
    emu.clearRequests();
    emu.setFaults({ script: [{ route: "upload", fault: "apply-then-drop" }] });
    const result = await c.uploadFile({ text: `second ${Math.random()}`, filename: "s.txt" }, { epochs: 2 }, { idempotencyKey: "echo-2" });
    expect(result).toMatchObject({ created: true, confirmedBy: "replay", resent: true });
    expect(emu.files().filter((f) => f.name === "s.txt")).toMatchObject([{ uploadEpochs: 2 }]);
  });

  it("a service that ignores keys echoes none: after its answers an ambiguous upload or renew is still not sent again", async () => {
    const ignoring = await startEmulator({ port: 0, idempotency: "ignore" });
    try {
      const c = new TuskrClient({ baseUrl: ignoring.url, apiKey: KEY, retry: fastRetry });
      const up = await c.uploadFile({ text: `ignored ${Math.random()}`, filename: "i.txt" }, { epochs: 1 }, { idempotencyKey: "ign-1" });
      const before = await c.getFile(up.file.blobId);
      await c.renewFile(up.file.blobId, 1, { idempotencyKey: "ign-2", expiresAtBefore: before.expiresAt });
      expect([c.keysHonoured("upload"), c.keysHonoured("renew")]).toEqual([false, false]);
      ignoring.setFaults({ script: [{ route: "upload", fault: "apply-then-drop" }] });
      const failed = await expectApiError(c.uploadFile({ text: `dropped ${Math.random()}`, filename: "d.txt" }, { epochs: 2 }, { idempotencyKey: "ign-3" }));
      expect(failed.code).toBe("UPLOAD_OUTCOME_UNKNOWN");
      expect(ignoring.requests().filter((r) => r.route === "upload")).toHaveLength(2);
    } finally {
      await ignoring.close();
    }
  });
});

describe("client ↔ emulator: every error status becomes one structured error", () => {
  it("404 unknown blobId", async () => {
    const e = await expectApiError(client().getFile("no-such-blob"));
    expect(e).toMatchObject({ status: 404, code: "NOT_FOUND", method: "GET", path: "/v1/files/no-such-blob", retryable: false });
    expect(e.isGone).toBe(true);
  });

  it("410 expired file, on GET, PATCH and renew", async () => {
    await emu.advanceEpochs(2);
    for (const call of [
      () => client().getFile(blobId),
      () => client().updateFile(blobId, { tag: "x" }),
      () => client().renewFile(blobId, 1, { idempotencyKey: "k" }),
    ]) {
      const e = await expectApiError(call());
      expect(e).toMatchObject({ status: 410, code: "FILE_EXPIRED" });
    }
  });

  it("401 wrong key, and the key appears nowhere in the error", async () => {
    const wrong = "tsk_live_wrong_key_1234567890";
    const e = await expectApiError(client({ apiKey: wrong }).getFile(blobId));
    expect(e).toMatchObject({ status: 401, code: "UNAUTHORIZED" });
    const everything = `${e.message}\n${String(e)}\n${JSON.stringify(e)}\n${e.stack}`;
    expect(everything).not.toContain(wrong);
    expect(everything).not.toContain(KEY);
  });

  it("403 read-only key on a write", async () => {
    const e = await expectApiError(client({ apiKey: "tsk_test_readonly_key" }).updateFile(blobId, { tag: "x" }));
    expect(e).toMatchObject({ status: 403, code: "FORBIDDEN" });
  });

  it("422 from the service names the field and the limit", async () => {
    const tooMany = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i]));
    const e = await expectApiError(client().updateFile(blobId, { metadata: tooMany }));
    expect(e).toMatchObject({ status: 422, code: "VALIDATION_ERROR" });
    expect(e.message).toMatch(/metadata/);
    expect(e.message).toMatch(/64/);
  });

  it("422 when a renew would pass the 53-epoch horizon, with the numbers", async () => {
    const e = await expectApiError(client().renewFile(blobId, 53, { idempotencyKey: "too-far" }));
    expect(e).toMatchObject({ status: 422, code: "VALIDATION_ERROR" });
    expect(e.message).toMatch(/53/);
    expect(epochsBought(blobId) ?? 0).toBe(0);
  });

  it("a bad request body is refused before anything is sent", async () => {
    await expectApiError(client().renewFile(blobId, 0, { idempotencyKey: "k" }));
    await expectApiError(client().renewFile(blobId, 1.5, { idempotencyKey: "k" }));
    await expectApiError(client().updateFile(blobId, { name: "n".repeat(257) }));
    expect(v1()).toHaveLength(0);
  });

  it("a path-like blobId never reaches another route", async () => {
    for (const id of ["x/renew", `${blobId}/renew`, "../files", "a%2Fb"]) {
      const e = await expectApiError(client().getFile(id));
      expect(e.status).toBe(404);
    }
    expect(v1().map((r) => r.route)).toEqual(["get", "get", "get", "get"]);
    expect(epochsBought(blobId) ?? 0).toBe(0);
  });
});

describe("client ↔ emulator: retries", () => {
  it("GET and PATCH retry 5xx and resets until they succeed", async () => {
    emu.setFaults({
      script: [
        { route: "get", fault: "5xx", times: 2 },
        { route: "patch", fault: "reset", times: 1 },
      ],
    });
    await expect(client().getFile(blobId)).resolves.toMatchObject({ blobId });
    await expect(client().updateFile(blobId, { tag: "after-reset" })).resolves.toMatchObject({ tag: "after-reset" });
    expect(v1().map((r) => `${r.route}:${r.status ?? r.fault}`).length).toBe(5);
  });

  it("PATCH after apply-then-drop is retried as is and converges", async () => {
    emu.setFaults({ script: [{ route: "patch", fault: "apply-then-drop", times: 1 }] });
    await expect(client().updateFile(blobId, { metadata: { a: 1 } })).resolves.toMatchObject({ metadata: { a: 1 } });
    expect(v1().filter((r) => r.route === "patch")).toHaveLength(2);
  });

  it("honours Retry-After on 429", async () => {
    emu.setFaults({ script: [{ route: "get", fault: "429", times: 1, retryAfterSeconds: 1 }] });
    const waits: number[] = [];
    const started = Date.now();
    await client({ onRetry: (i) => waits.push(i.waitMs) }).getFile(blobId);
    expect(waits).toEqual([1000]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it("gives up after maxAttempts, and within the time budget", async () => {
    emu.setFaults({ script: [{ route: "get", fault: "5xx", times: 100 }] });
    const e = await expectApiError(client().getFile(blobId));
    expect(e.status).toBeGreaterThanOrEqual(500);
    expect(v1()).toHaveLength(fastRetry.maxAttempts);
    emu.setFaults({ script: [{ route: "get", fault: "429", times: 100, retryAfterSeconds: 30 }] });
    emu.clearRequests();
    const started = Date.now();
    await expectApiError(client({ retry: { ...fastRetry, maxTotalMs: 2_000 } }).getFile(blobId));
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(v1()).toHaveLength(1);
  });

  it("never exceeds the configured concurrency", async () => {
    emu.setFaults({ routes: { "*": { latencyMs: 40 } } });
    const c = client({ maxConcurrency: 2 });
    let peak = 0;
    const timer = setInterval(() => (peak = Math.max(peak, c.inFlight)), 2);
    await Promise.all(Array.from({ length: 10 }, () => c.getFile(blobId)));
    clearInterval(timer);
    expect(peak).toBe(2);
    expect(v1()).toHaveLength(10);
  });
});

describe("client ↔ emulator: renew never buys twice", () => {
  const renewOnce = async (fault: FaultKind, c = client()) => {
    emu.setFaults({ script: [{ route: "renew", fault, times: 1 }] });
    const before = await c.getFile(blobId);
    emu.clearRequests();
    const result = await c.renewFile(blobId, 4, { idempotencyKey: `key-${fault}`, expiresAtBefore: before.expiresAt });
    return { result, routes: v1().map((r) => r.route) };
  };
  const renewFails = async (fault: FaultKind) => {
    const error = await expectApiError(renewOnce(fault));
    return { error, routes: v1().map((r) => r.route) };
  };

  it("apply-then-drop: the read-back sees the expiry moved by the purchase, so no second renew", async () => {
    const c = client();
    emu.setFaults({ script: [{ route: "renew", fault: "apply-then-drop", times: 1 }] });
    const before = await c.getFile(blobId);
    emu.clearRequests();
    const result = await c.renewFile(blobId, 4, { idempotencyKey: "key-apply-then-drop", expiresAtBefore: before.expiresAt, epochMs: 86_400_000 });
    const routes = v1().map((r) => r.route);
    expect(result.confirmedBy).toBe("read-back");
    expect(routes).toEqual(["renew", "get"]);
    expect(epochsBought(blobId)).toBe(4);
  });

  // Unmoved at the read-back says nothing of later: a service may still apply it, and one that
  // ignores the key would then sell the resend too.
  it("5xx not applied, keys not known to be honoured: the read-back sees no move, so it stops, never resent", async () => {
    const { error, routes } = await renewFails("5xx");
    expect(error.code).toBe("RENEW_OUTCOME_UNKNOWN");
    expect(error.message).toMatch(/expiry unmoved, and the service is not known to honour Idempotency-Key.*Run `pulumi up` again later/);
    expect(routes).toEqual(["renew", "get"]);
    expect(epochsBought(blobId)).toBe(0);
  });

  it("reset before applying, keys not known to be honoured: stops after the read-back, never resent", async () => {
    const { error, routes } = await renewFails("reset");
    expect(error.code).toBe("RENEW_OUTCOME_UNKNOWN");
    expect(routes).toEqual(["renew", "get"]);
    expect(epochsBought(blobId)).toBe(0);
  });

  it("5xx not applied, keys known from an earlier renew's replay: resent under the same key, bought once", async () => {
    const c = client();
    const before = await c.getFile(blobId);
    await c.renewFile(blobId, 1, { idempotencyKey: "key-first", expiresAtBefore: before.expiresAt });
    expect(c.keysHonoured("renew")).toBe(false);
    await c.renewFile(blobId, 1, { idempotencyKey: "key-first", expiresAtBefore: before.expiresAt });
    expect(c.keysHonoured("renew")).toBe(true);
    expect(c.keysHonoured("upload")).toBe(false);
    const { result, routes } = await renewOnce("5xx", c);
    expect(result.confirmedBy).toBe("response");
    expect(routes).toEqual(["renew", "renew"]);
    const keys = emu
      .requests()
      .filter((r) => r.route === "renew")
      .map((r) => r.idempotencyKey);
    expect(new Set(keys)).toEqual(new Set(["key-5xx"]));
    expect(epochsBought(blobId)).toBe(1 + 4);
  });

  // Someone else renews the file after this client last saw its expiry, then our renew fails
  // ambiguously: the expiry moved by more than our purchase whether or not ours was applied.
  const renewAfterOutOfBand = async (fault: FaultKind, outOfBand: number, keyHonoured = false) => {
    const before = await client().getFile(blobId);
    expect((await renewFile(emu, blobId, { epochs: outOfBand })).status).toBe(200);
    const boughtBefore = epochsBought(blobId)!;
    emu.setFaults({ script: [{ route: "renew", fault, times: 1 }] });
    emu.clearRequests();
    const outcome = await client()
      .renewFile(blobId, 4, { idempotencyKey: `oob-${fault}-${keyHonoured}`, expiresAtBefore: before.expiresAt, epochMs: 86_400_000, keyHonoured })
      .then(
        (result) => ({ result, error: undefined }),
        (error: TuskrApiError) => ({ result: undefined, error }),
      );
    return { ...outcome, routes: v1().map((r) => r.route), added: epochsBought(blobId)! - boughtBefore };
  };

  it("5xx after a larger renewal elsewhere, keys not known to be honoured: the move cannot be attributed, so it stops, nothing bought", async () => {
    const { error, routes, added } = await renewAfterOutOfBand("5xx", 5);
    expect(routes).toEqual(["renew", "get"]);
    expect(error?.code).toBe("RENEW_OUTCOME_UNKNOWN");
    expect(error?.message).toMatch(/this purchase alone does not explain: someone else may have renewed the file too/);
    expect(added).toBe(0);
  });

  it("apply-then-drop after a larger renewal elsewhere, keys not known to be honoured: stops rather than risk a second purchase", async () => {
    const { error, routes, added } = await renewAfterOutOfBand("apply-then-drop", 5);
    expect(routes).toEqual(["renew", "get"]);
    expect(error?.code).toBe("RENEW_OUTCOME_UNKNOWN");
    expect(added).toBe(4);
  });

  it("5xx after a larger renewal elsewhere, keys known to be honoured: resent under the same key at once, bought once", async () => {
    const { result, routes, added } = await renewAfterOutOfBand("5xx", 5, true);
    expect(routes).toEqual(["renew", "renew"]);
    expect(result?.confirmedBy).toBe("response");
    expect(added).toBe(4);
  });

  it("apply-then-drop after a larger renewal elsewhere, keys known to be honoured: resent under the same key, replayed, not bought twice", async () => {
    const { result, routes, added } = await renewAfterOutOfBand("apply-then-drop", 5, true);
    expect(routes).toEqual(["renew", "renew"]);
    expect(result?.confirmedBy).toBe("replay");
    const keys = emu
      .requests()
      .filter((r) => r.route === "renew")
      .map((r) => r.idempotencyKey);
    expect(new Set(keys)).toEqual(new Set(["oob-apply-then-drop-true"]));
    expect(added).toBe(4);
  });

  it("5xx after a smaller renewal elsewhere: a move short of our purchase means not applied; stops, never resent", async () => {
    const { error, routes, added } = await renewAfterOutOfBand("5xx", 2);
    expect(error?.code).toBe("RENEW_OUTCOME_UNKNOWN");
    expect(routes).toEqual(["renew", "get"]);
    expect(added).toBe(0);
  });

  it("429 is not ambiguous: retried directly without a read-back", async () => {
    const { routes } = await renewOnce("429");
    expect(routes).toEqual(["renew", "renew"]);
    expect(epochsBought(blobId)).toBe(4);
  });

  it("without a known prior expiry it refuses to guess: RENEW_OUTCOME_UNKNOWN, bought at most once", async () => {
    emu.setFaults({ script: [{ route: "renew", fault: "apply-then-drop", times: 1 }] });
    const e = await expectApiError(client().renewFile(blobId, 3, { idempotencyKey: "k-unknown" }));
    expect(e.code).toBe("RENEW_OUTCOME_UNKNOWN");
    expect(epochsBought(blobId)).toBe(3);
    // The next attempt with the same key is replayed by the service, not bought again.
    await client().renewFile(blobId, 3, { idempotencyKey: "k-unknown" });
    expect(epochsBought(blobId)).toBe(3);
  });
});
