import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, type Emulator, startEmulator } from "../../../emulator";
import { TuskrClient } from "../../../provider/client/client";
import { multipartBody } from "../../../provider/client/multipart";

/**
 * The upload's multipart body, written by the client itself: what the service's form parser
 * (the emulator's) reads from it is exactly what was sent — the bytes (binary, line breaks and
 * boundary-like text included), the filename, the type, the tag and the epochs — for bytes held
 * in memory and for a file streamed from disk; a file that changes size while it is streamed is
 * not sent as something else.
 */

let emu: Emulator;
let dir: string;
const client = () => new TuskrClient({ baseUrl: emu.url, apiKey: EMULATOR_DEFAULT_API_KEY, retry: { maxAttempts: 1 } });
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-body-"));
});
afterAll(async () => {
  await emu.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Content that a careless multipart writer would cut or merge: CRLFs, dashes, a fake boundary, every byte value. */
const awkward = (n: number) =>
  Buffer.concat([Buffer.from("\r\n--tuskr-0000\r\n--\r\n\r\n"), Buffer.from(Array.from({ length: n }, (_, i) => i % 256)), Buffer.from("\r\n")]);

async function served(url: string): Promise<{ bytes: Buffer; status: number }> {
  const res = await fetch(url, { headers: { Authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}` } });
  return { bytes: Buffer.from(await res.arrayBuffer()), status: res.status };
}

describe("the upload's body", () => {
  it("bytes in memory: the service reads the same bytes, filename (escaped as a browser does), type, tag and epochs", async () => {
    const bytes = awkward(3000);
    const { file } = await client().uploadFile(
      { bytes, filename: 'données "1".bin' },
      { tag: "é\nx", epochs: 3, contentType: "image/png" },
      { idempotencyKey: "body-1" },
    );
    const stored = emu.files().find((f) => f.blobId === file.blobId)!;
    expect(stored).toMatchObject({
      // A quote in a filename is escaped as a browser does (the service names the file after the filename it reads).
      name: "données %221%22.bin",
      tag: "é\r\nx",
      mimeType: "image/png",
      size: bytes.length,
      endEpoch: emu.currentEpoch() + 3,
    });
    expect((await served(stored.url)).bytes.equals(bytes)).toBe(true);
  });

  it("a file on disk, streamed: the same, and a type left to the service when none is given", async () => {
    const bytes = awkward(200_000);
    const at = path.join(dir, "big.bin");
    fs.writeFileSync(at, bytes);
    const { file } = await client().uploadFile({ path: at, filename: "big.bin" }, { epochs: 1 }, { idempotencyKey: "body-2" });
    const stored = emu.files().find((f) => f.blobId === file.blobId)!;
    expect(stored).toMatchObject({ name: "big.bin", size: bytes.length, mimeType: "application/octet-stream" });
    expect((await served(stored.url)).bytes.equals(bytes)).toBe(true);
  });

  it("a type that would end the part's header early is refused before anything is sent", async () => {
    for (const type of ["text/html\r\n\r\n;a=b", "text/html\n", "text/é"]) {
      expect(() => multipartBody({ bytes: Buffer.from("x"), filename: "x.html", type }, [])).toThrow(/is not one line of visible ASCII/);
    }
    expect(multipartBody({ bytes: Buffer.from("x"), filename: "x.html", type: "text/html;\tcharset=utf-8" }, []).length).toBeGreaterThan(0);
  });

  it("a file that cannot be read once the upload began (a directory in its place) stops the body: a definite failure, sent once, nothing stored", async () => {
    const at = path.join(dir, "was-a-file");
    fs.mkdirSync(at);
    emu.clearRequests();
    const keyed = new TuskrClient({ baseUrl: emu.url, apiKey: EMULATOR_DEFAULT_API_KEY, retry: { baseDelayMs: 1, maxDelayMs: 5 } });
    const e = await keyed
      .uploadFile({ path: at, sha256: "0".repeat(64), filename: "x" }, { epochs: 1 }, { idempotencyKey: "body-dir", keyHonoured: true })
      .then(
        () => undefined,
        (error: unknown) => error as { code?: string; message?: string },
      );
    expect(e).toMatchObject({ code: "CONTENT_CHANGED", message: expect.stringMatching(/could not be read for its upload \(EISDIR/) });
    expect(emu.requests().filter((r) => r.route === "upload").length).toBeLessThanOrEqual(1);
    expect(emu.files().filter((f) => f.name === "x")).toEqual([]);
  });

  it("a body that cannot be written (a type no header may carry) is a definite failure: nothing sent", async () => {
    emu.clearRequests();
    const e = await client()
      .uploadFile({ bytes: Buffer.from("x"), filename: "f" }, { epochs: 1, contentType: "text/html\r\nX: y" }, { idempotencyKey: "body-type" })
      .then(
        () => undefined,
        (error: unknown) => error as { code?: string; message?: string },
      );
    expect(e).toMatchObject({ code: "BAD_REQUEST", message: expect.stringMatching(/is not one line of visible ASCII; nothing sent/) });
    expect(emu.requests()).toEqual([]);
  });

  it("a file that is not the size the upload began with is not streamed as something else", async () => {
    const at = path.join(dir, "grew.bin");
    fs.writeFileSync(at, Buffer.alloc(5000, 1));
    for (const size of [4000, 6000]) {
      const { body, length } = multipartBody({ path: at, size, filename: "grew.bin", type: "" }, []);
      const read = async () => {
        let sent = 0;
        for await (const chunk of body as AsyncIterable<Buffer>) sent += chunk.length;
        return sent;
      };
      await expect(read()).rejects.toThrow(`${at} changed size while it was read for its upload (${size} bytes when the upload began)`);
      expect(length).toBeGreaterThan(size);
    }
  });
});
