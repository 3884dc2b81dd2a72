import { ASSET_SIG, SECRET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, type Emulator, startEmulator } from "../../../emulator";
import { TuskrClient } from "../../../provider/client/client";
import { StoredFilePlugin } from "../../../provider/plugin/provider";
import { STORED_FILE_TYPES, STORED_FOLDER_TYPES } from "../../../provider/engine/urns";
import { configuredProvider } from "../../helpers/provider-fixture";

/**
 * A file over the in-memory size (64 KiB) whose content the engine hashed is sent from where it
 * is, streamed, nothing written on the side; the upload checks as it reads that the bytes are
 * that content, and a file rewritten meanwhile ends the request before its body's end, so the
 * service stores nothing: a StoredFile then sends the file as it now is (and says so); a folder,
 * which uploads only what its preview saw, leaves it for the next `up`.
 */

const SIZE = 200 * 1024;
const FILE_WRAP = { [SIG_KEY]: ASSET_SIG };
const SECRET_WRAP = { [SIG_KEY]: SECRET_SIG };
const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const bytes = (fill: string) => Buffer.alloc(SIZE, fill);

let emu: Emulator;
let dir: string;
beforeEach(async () => {
  emu = await startEmulator({ port: 0 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-large-"));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await emu.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function served(blobId: string): Promise<Buffer> {
  const url = emu.files().find((f) => f.blobId === blobId)!.url;
  return Buffer.from(await (await fetch(url, { headers: { Authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}` } })).arrayBuffer());
}

describe("a large file sent from where it is", () => {
  it("client: the body ends only if the file is the content it was said to be; otherwise CONTENT_CHANGED and nothing stored", async () => {
    const at = path.join(dir, "big.bin");
    fs.writeFileSync(at, bytes("a"));
    const client = new TuskrClient({ baseUrl: emu.url, apiKey: EMULATOR_DEFAULT_API_KEY, retry: { baseDelayMs: 1, maxDelayMs: 5 } });
    const e = await client
      .uploadFile({ path: at, sha256: sha256(bytes("b")), filename: "big.bin" }, { epochs: 1 }, { idempotencyKey: "k-1", keyHonoured: true })
      .then(
        () => undefined,
        (error: unknown) => error as { code?: string; message?: string; mayHaveBeenApplied?: boolean },
      );
    expect(e).toMatchObject({ code: "CONTENT_CHANGED", mayHaveBeenApplied: false });
    expect(e?.message).toMatch(/big\.bin changed while it was read for its upload .*not sent whole/);
    expect(emu.files()).toEqual([]);
    const { file } = await client.uploadFile({ path: at, sha256: sha256(bytes("a")), filename: "big.bin" }, { epochs: 1 }, { idempotencyKey: "k-2" });
    expect((await served(file.blobId)).equals(bytes("a"))).toBe(true);
  });

  it("StoredFile: an unchanged file is uploaded without a copy; one rewritten since the engine hashed it is sent as it now is, and said", async () => {
    const p = await configuredProvider(emu, {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    const copies = vi.spyOn(fs.promises, "mkdtemp");
    const at = path.join(dir, "big.bin");
    fs.writeFileSync(at, bytes("a"));
    const urn = (n: string) => `urn:pulumi:dev::proj::${STORED_FILE_TYPES.dynamic}::${n}`;
    const same = await p.create({ source: { ...FILE_WRAP, path: at, hash: sha256(bytes("a")) }, __urn: urn("same") });
    expect(copies).not.toHaveBeenCalled();
    expect((await served(String(same.outs.blobId))).equals(bytes("a"))).toBe(true);

    // The engine hashed other bytes of the same size (the file was rewritten after the program registered it).
    const rewritten = await p.create({ source: { ...FILE_WRAP, path: at, hash: sha256(bytes("c")) }, __urn: urn("rewritten") });
    expect(rewritten.outs.blobId).toBe(same.outs.blobId);
    expect(lines.join("\n")).toMatch(/the content changed after the engine read it .*the bytes read now are uploaded and recorded/);
    // The first attempt stopped before its body's end: the service holds one file, of the bytes on disk.
    expect(emu.files()).toHaveLength(1);
  });

  it("StoredFolder: a file rewritten after the preview (same size, other bytes) is not uploaded; the others are", async () => {
    fs.writeFileSync(path.join(dir, "a.bin"), bytes("a"));
    fs.writeFileSync(path.join(dir, "b.bin"), bytes("b"));
    const plugin = new StoredFilePlugin(() => undefined, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
    await plugin.configure({ apiKey: { ...SECRET_WRAP, value: EMULATOR_DEFAULT_API_KEY }, baseUrl: emu.url });
    const urn = `urn:pulumi:dev::proj::${STORED_FOLDER_TYPES.plugin}::site`;
    const checked = await plugin.folder.check(urn, {}, { path: dir });
    fs.writeFileSync(path.join(dir, "a.bin"), bytes("c"));
    const failed = (await plugin.folder.create(urn, checked.inputs).then(
      () => undefined,
      (e: unknown) => e,
    )) as Error & { properties?: Record<string, Record<string, string>> };
    expect(failed?.message).toMatch(/1 of 2 file\(s\) failed: a\.bin: .*a\.bin changed after the preview .*not uploaded/);
    expect(Object.keys(failed.properties!.blobIds)).toEqual(["b.bin"]);
    expect(emu.files().map((f) => f.name)).toEqual(["b.bin"]);
  });
});
