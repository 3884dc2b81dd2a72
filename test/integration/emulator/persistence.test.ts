import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { STATE_FILE, startEmulator, type Emulator } from "../../../emulator";
import { filePath, getFile, jsonHeaders, patchFile, rawRequest, renewFile, request, uploadFile } from "../../helpers/emulator";

let dataDir: string;
const open: Emulator[] = [];

beforeEach(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-emulator-test-"));
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((emulator) => emulator.close()));
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function start(options: Parameters<typeof startEmulator>[0] = {}): Promise<Emulator> {
  const emulator = await startEmulator({ dataDir, ...options });
  open.push(emulator);
  return emulator;
}

const statePath = () => path.join(dataDir, STATE_FILE);
const readState = () => JSON.parse(fs.readFileSync(statePath(), "utf8"));

describe("persistence across a restart", () => {
  it("keeps files, metadata, purchases, the clock, idempotency records and blobs", async () => {
    const first = await start();
    const uploaded = (await uploadFile(first, { content: "survives", filename: "s.txt", type: "text/plain", tag: "keep", epochs: 3 })).body;
    await patchFile(first, uploaded.blob_id, { name: "Survivor", metadata: { nested: { a: 1 } } });
    const renewed = await renewFile(first, uploaded.blob_id, { epochs: 4 }, { idempotencyKey: "persisted-key" });
    expect(renewed.status).toBe(200);
    await first.advanceEpochs(2);
    const before = (await getFile(first, uploaded.blob_id)).body;
    const filesBefore = first.files();
    await first.close();

    const second = await start();
    expect(second.currentEpoch()).toBe(2);
    expect((await getFile(second, uploaded.blob_id)).body).toEqual({ ...before, url: `${second.url}/cdn/${uploaded.blob_id}` });
    expect(second.files().map(({ url, ...rest }) => rest)).toEqual(filesBefore.map(({ url, ...rest }) => rest));
    expect(second.files()[0]).toMatchObject({ name: "Survivor", endEpoch: 7, epochsBought: 4 });

    // The idempotency record survived: the retry replays and buys nothing.
    const replay = await renewFile(second, uploaded.blob_id, { epochs: 4 }, { idempotencyKey: "persisted-key" });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    // Its instants moved back with the 2 epochs advanced since, as every record's: the same moments.
    const back = (at: string) => new Date(Date.parse(at) - 2 * second.epochSeconds * 1000).toISOString();
    expect(replay.body).toEqual({ ...renewed.body, createdAt: back(renewed.body.createdAt), expiresAt: back(renewed.body.expiresAt) });
    expect(second.files()[0].epochsBought).toBe(4);

    const cdn = await fetch(`${second.url}/cdn/${uploaded.blob_id}`, { headers: { Authorization: `Bearer tsk_test_emulator_local_key` } });
    expect(await cdn.text()).toBe("survives");
    // New ids continue from the persisted counter instead of repeating.
    const next = await second.uploadFile({ content: "another" });
    expect(next.id).not.toBe(uploaded.id);
  });

  it("writes each change to disk before answering", async () => {
    const emulator = await start();
    const record = await emulator.uploadFile({ content: "durable" });
    expect(readState().files[0].blobId).toBe(record.blobId);

    const patch = await patchFile(emulator, record.blobId, { metadata: { step: 1 } });
    expect(patch.status).toBe(200);
    expect(readState().files[0].metadata).toEqual({ step: 1 });

    await renewFile(emulator, record.blobId, { epochs: 2 }, { idempotencyKey: "disk" });
    const state = readState();
    expect(state.files[0]).toMatchObject({ endEpoch: 3, epochsBought: 2 });
    expect(state.idempotency.map((r: { key: string }) => r.key)).toEqual(["disk"]);

    await request(emulator, "POST", "/_emulator/advance", { json: { epochs: 1 } });
    expect(readState().advancedEpochs).toBe(1);
  });

  it("has an apply-then-drop change on disk although no answer was sent", async () => {
    const emulator = await start({ faults: { script: [{ route: "renew", fault: "apply-then-drop" }] } });
    const record = await emulator.uploadFile({ content: "dropped" });
    const result = await rawRequest(emulator, "POST", `${filePath(record.blobId)}/renew`, { headers: jsonHeaders(), body: '{"epochs":5}' });
    expect(result.kind).toBe("connection-error");
    expect(readState().files[0].epochsBought).toBe(5);
  });

  it("serializes concurrent writes so the last state on disk has every change", async () => {
    const emulator = await start();
    const record = await emulator.uploadFile({ content: "busy" });
    const responses = await Promise.all(Array.from({ length: 25 }, (_, i) => patchFile(emulator, record.blobId, { metadata: { [`k${i}`]: i } })));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    expect(Object.keys(readState().files[0].metadata)).toHaveLength(25);
    expect(readState().files[0].metadata).toEqual(emulator.files()[0].metadata);
    // No temp file is left behind.
    expect(fs.readdirSync(dataDir).sort()).toEqual(["blobs", STATE_FILE]);
  });

  it("never lets an older snapshot land after a newer one", async () => {
    const emulator = await start();
    const record = await emulator.uploadFile({ content: "ordered" });
    // Make the first write slow: unserialized, the second would land first and then be overwritten.
    const realRename = fs.promises.rename;
    let renames = 0;
    const spy = vi.spyOn(fs.promises, "rename").mockImplementation(async (from, to) => {
      renames += 1;
      if (renames === 1) await new Promise((resolve) => setTimeout(resolve, 150));
      return realRename(from, to);
    });
    try {
      await Promise.all([patchFile(emulator, record.blobId, { metadata: { first: 1 } }), patchFile(emulator, record.blobId, { metadata: { second: 2 } })]);
    } finally {
      spy.mockRestore();
    }
    expect(renames).toBe(2);
    expect(readState().files[0].metadata).toEqual({ first: 1, second: 2 });
  });

  it("keeps a reset across a restart", async () => {
    const first = await start();
    await first.uploadFile({ content: "gone after reset" });
    await first.reset();
    expect(fs.readdirSync(path.join(dataDir, "blobs"))).toEqual([]);
    await first.close();
    const second = await start();
    expect(second.files()).toEqual([]);
  });
});

describe("atomic state file", () => {
  it("ignores a temp file left by a crash", async () => {
    const first = await start();
    await first.uploadFile({ content: "real state", tag: "real" });
    await first.close();
    fs.writeFileSync(path.join(dataDir, `.${STATE_FILE}.tmp-99999-1`), '{"half written');

    const second = await start();
    expect(second.files().map((f) => f.tag)).toEqual(["real"]);
  });

  it("starts empty when only a temp file exists", async () => {
    fs.writeFileSync(path.join(dataDir, `.${STATE_FILE}.tmp-99999-1`), '{"format":"tuskr-emulator-state"');
    const emulator = await start();
    expect(emulator.files()).toEqual([]);
    expect(readState().format).toBe("tuskr-emulator-state");
  });

  it("refuses to start over a data directory whose blobs remain but whose state.json is gone, and writes nothing", async () => {
    const first = await start();
    await first.uploadFile({ content: "kept bytes", filename: "k.txt" });
    await first.close();
    fs.rmSync(statePath());
    const blobsBefore = fs.readdirSync(path.join(dataDir, "blobs"));
    await expect(startEmulator({ dataDir })).rejects.toThrow(/holds 1 blob\(s\) in blobs\/ but no state\.json\. The emulator will not start over it/);
    expect(fs.existsSync(statePath())).toBe(false);
    expect(fs.readdirSync(path.join(dataDir, "blobs"))).toEqual(blobsBefore);
  });

  it("refuses to start over a corrupt state.json and leaves it as it was", async () => {
    fs.writeFileSync(statePath(), '{"format":"tuskr-emulator-state", "files": [');
    await expect(start()).rejects.toThrow(/cannot load .*state\.json: not valid JSON.*will not start/s);
    expect(fs.readFileSync(statePath(), "utf8")).toBe('{"format":"tuskr-emulator-state", "files": [');
  });

  it("refuses a state.json of the wrong shape, naming what is wrong", async () => {
    const first = await start();
    await first.uploadFile({ content: "shape" });
    await first.close();
    const state = readState();
    state.files[0].endEpoch = "soon";
    fs.writeFileSync(statePath(), JSON.stringify(state));
    await expect(start()).rejects.toThrow(/files\[0\]\.endEpoch is not an integer/);

    fs.writeFileSync(statePath(), "");
    await expect(start()).rejects.toThrow(/not valid JSON/);
  });

  it("refuses an epoch length other than the one the data was written with", async () => {
    const first = await start({ epochSeconds: 60 });
    await first.close();
    await expect(start({ epochSeconds: 120 })).rejects.toThrow(/epochSeconds=60.*epochSeconds=120/s);
    const again = await start();
    expect(again.epochSeconds).toBe(60);
  });
});
