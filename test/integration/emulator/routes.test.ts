import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { ERRORS, type ErrorEntry } from "../../../emulator";
import { LIMITS } from "../../../api";
import {
  KEY,
  getFile,
  jsonHeaders,
  patchFile,
  rawRequest,
  renewFile,
  request,
  uploadFile,
  useEmulator,
  withEmulator,
  type ApiResponse,
  type UploadOptions,
} from "../../helpers/emulator";

const DAY_MS = 86_400_000;

function expectError(response: { status: number; body: any }, entry: ErrorEntry<any>, ...fragments: string[]): void {
  expect({ status: response.status, code: response.body?.error?.code }).toEqual({ status: entry.status, code: entry.code });
  for (const fragment of fragments) expect(response.body.error.message).toContain(fragment);
}

const emulator = useEmulator({ readOnlyApiKeys: ["tsk_test_readonly_key"] });

async function upload(content = `content ${Math.random()}`, extra: Partial<UploadOptions> = {}) {
  const response = await uploadFile(emulator(), { content, filename: "notes.txt", type: "text/plain", ...extra });
  expect(response.status).toBe(201);
  return response.body;
}

describe("health and authentication", () => {
  it("answers health without a key", async () => {
    const response = await request(emulator(), "GET", "/_emulator/health", { key: null });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: "ok", epoch: 0, epochSeconds: 86400 });
  });

  const routes: [string, string][] = [
    ["POST", "/v1/files"],
    ["GET", "/v1/files/abc"],
    ["PATCH", "/v1/files/abc"],
    ["POST", "/v1/files/abc/renew"],
    ["POST", "/_emulator/reset"],
    ["POST", "/_emulator/advance"],
    ["GET", "/_emulator/requests"],
    ["GET", "/_emulator/request-counts"],
    ["DELETE", "/_emulator/requests"],
    ["GET", "/_emulator/files"],
    ["GET", "/_emulator/faults"],
    ["POST", "/_emulator/faults"],
    ["POST", "/_emulator/health"],
    ["GET", "/no/such/route"],
  ];

  it("serves the CDN without a key, as the real CDN presumably does: an unknown blob is its 404", async () => {
    const response = await request(emulator(), "GET", "/cdn/abc", { key: null });
    expect(response.status).toBe(404);
  });

  it.each(routes)("%s %s: 401 without a key, 401 with a wrong key or scheme", async (method, path) => {
    const json = method === "GET" ? undefined : {};
    expectError(await request(emulator(), method, path, { key: null, json }), ERRORS.missingApiKey, "Bearer");
    const wrong = await request(emulator(), method, path, { key: "tsk_live_not_a_configured_key", json });
    expectError(wrong, ERRORS.invalidApiKey);
    expect(wrong.text).not.toContain("tsk_live_not_a_configured_key");
    const basic = await request(emulator(), method, path, { key: null, headers: { Authorization: `Basic ${KEY}` }, json });
    expectError(basic, ERRORS.malformedAuthorization);
    expect(basic.text).not.toContain(KEY);
  });

  it("never writes a key into the request log", async () => {
    await request(emulator(), "GET", "/v1/files/abc", { key: "tsk_live_secret_value_1234" });
    await request(emulator(), "GET", "/v1/files/abc");
    const log = JSON.stringify(emulator().requests());
    expect(emulator().requests()).toHaveLength(2);
    expect(log).not.toContain("tsk_live_secret_value_1234");
    expect(log).not.toContain(KEY);
    expect(log.toLowerCase()).not.toContain("authorization");
  });

  it("lets a read-only key read and refuses every write with 403, changing nothing", async () => {
    const file = await upload();
    await patchFile(emulator(), file.blob_id, { metadata: { kept: true } });
    const ro = "tsk_test_readonly_key";
    expect((await getFile(emulator(), file.blob_id, ro)).status).toBe(200);
    expect((await request(emulator(), "GET", "/_emulator/files", { key: ro })).status).toBe(200);

    expectError(await uploadFile(emulator(), { content: "other", key: ro }), ERRORS.readOnlyApiKey, "read-only");
    expectError(await patchFile(emulator(), file.blob_id, { metadata: { kept: null } }, { key: ro }), ERRORS.readOnlyApiKey);
    expectError(await renewFile(emulator(), file.blob_id, { epochs: 1 }, { key: ro }), ERRORS.readOnlyApiKey);
    expectError(await request(emulator(), "POST", "/_emulator/reset", { key: ro }), ERRORS.readOnlyApiKey);
    expectError(await request(emulator(), "POST", "/_emulator/advance", { key: ro, json: { epochs: 1 } }), ERRORS.readOnlyApiKey);

    const [record] = emulator().files();
    expect(emulator().files()).toHaveLength(1);
    expect(record).toMatchObject({ metadata: { kept: true }, epochsBought: 0 });
    expect(emulator().currentEpoch()).toBe(0);
  });
});

describe("upload and read", () => {
  it("uploads multipart content and answers the documented snake_case shape", async () => {
    const before = Date.now();
    const response = await uploadFile(emulator(), {
      content: "hello walrus",
      filename: "hello.txt",
      type: "text/plain",
      tag: "greeting",
      category: "docs",
      epochs: 3,
    });
    expect(response.status).toBe(201);
    const blobId = createHash("sha256").update("hello walrus").digest("base64url");
    expect(blobId).toHaveLength(43);
    expect(Object.keys(response.body).sort()).toEqual(["blob_id", "category", "created_at", "expires_at", "id", "mime_type", "size", "tag", "url"].sort());
    expect(response.body).toMatchObject({
      blob_id: blobId,
      url: `${emulator().url}/cdn/${blobId}`,
      size: 12,
      mime_type: "text/plain",
      tag: "greeting",
      category: "docs",
    });
    expect(response.body.id).toMatch(/^file_[0-9a-f]{24}$/);
    const created = Date.parse(response.body.created_at);
    const expires = Date.parse(response.body.expires_at);
    expect(created).toBeGreaterThanOrEqual(before - 5);
    // The file ends at the start of epoch 3: within three epochs, more than two.
    expect(expires - created).toBeLessThanOrEqual(3 * DAY_MS);
    expect(expires - created).toBeGreaterThan(2 * DAY_MS);
  });

  it("reads the file back in the documented camelCase shape", async () => {
    const file = await upload("read me", { tag: "t", epochs: 2 });
    const response = await getFile(emulator(), file.blob_id);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      blobId: file.blob_id,
      url: file.url,
      name: "notes.txt",
      tag: "t",
      metadata: {},
      size: 7,
      mimeType: "text/plain",
      createdAt: file.created_at,
      expiresAt: file.expires_at,
    });
  });

  it("takes name from the name field over the filename, and defaults epochs to 1", async () => {
    const file = await upload("named", { name: "Display Name" });
    const [record] = emulator().files();
    expect(record).toMatchObject({ blobId: file.blob_id, name: "Display Name", uploadEpochs: 1, endEpoch: 1 });
  });

  it("serves the bytes at the file's url", async () => {
    const file = await upload("bytes on the cdn");
    const response = await fetch(file.url, { headers: { Authorization: `Bearer ${KEY}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/plain");
    expect(await response.text()).toBe("bytes on the cdn");
  });

  it("returns the existing file unchanged (200) when the same content is uploaded again", async () => {
    const first = await upload("same bytes", { tag: "first", epochs: 2 });
    const again = await uploadFile(emulator(), { content: "same bytes", tag: "second", epochs: 9 });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first);
    expect(emulator().files()).toHaveLength(1);
    expect(emulator().files()[0]).toMatchObject({ tag: "first", endEpoch: 2 });
  });

  it.each([
    ["0", "0"],
    ["54", "54"],
    ["abc", '"abc"'],
    ["1.5", '"1.5"'],
  ])("refuses epochs=%s with 422 naming epochs and its range", async (epochs, shown) => {
    const response = await uploadFile(emulator(), { content: "x", epochs });
    expectError(response, ERRORS.integerOutOfRange, '"epochs"', "1 to 53", shown);
    expect(emulator().files()).toHaveLength(0);
  });

  it("refuses a form without file, with an unknown field, or with a tag over the limit", async () => {
    const noFile = new FormData();
    noFile.append("tag", "x");
    expectError(await request(emulator(), "POST", "/v1/files", { body: noFile }), ERRORS.requiredField, '"file"');

    const extra = new FormData();
    extra.append("file", new Blob(["x"]), "x");
    extra.append("colour", "blue");
    expectError(await request(emulator(), "POST", "/v1/files", { body: extra }), ERRORS.unknownField, '"colour"');

    const longTag = await uploadFile(emulator(), { content: "x", tag: "t".repeat(LIMITS.tagMaxLength + 1) });
    expectError(longTag, ERRORS.tooLong, '"tag"', "257", `at most ${LIMITS.tagMaxLength}`);
    expect(emulator().files()).toHaveLength(0);
  });

  it("refuses a body that is not multipart/form-data with 415", async () => {
    const response = await request(emulator(), "POST", "/v1/files", { json: { file: "x" } });
    expectError(response, ERRORS.unsupportedMediaType, "multipart/form-data");
  });

  it("refuses a multipart body whose boundary never appears with 400", async () => {
    const response = await request(emulator(), "POST", "/v1/files", {
      body: "no parts here",
      headers: { "Content-Type": "multipart/form-data; boundary=XyZ" },
    });
    expectError(response, ERRORS.malformedMultipart);
  });

  it("answers 404 for a file it never had", async () => {
    expectError(await getFile(emulator(), "never-uploaded"), ERRORS.fileNotFound, "never-uploaded");
  });
});

describe("PATCH /v1/files/:blobId (JSON Merge Patch)", () => {
  it("replaces name and tag and merges metadata recursively, removing null members", async () => {
    const file = await upload();
    let response = await patchFile(emulator(), file.blob_id, { name: "n1", tag: "t1", metadata: { a: 1, b: { c: 1, d: 2 }, list: [1, 2] } });
    expect(response.status).toBe(200);
    response = await patchFile(emulator(), file.blob_id, { metadata: { a: null, b: { c: null, e: { f: null, g: 3 } }, list: [3], h: "x" } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ name: "n1", tag: "t1" });
    expect(response.body.metadata).toEqual({ b: { d: 2, e: { g: 3 } }, list: [3], h: "x" });
    expect((await getFile(emulator(), file.blob_id)).body.metadata).toEqual(response.body.metadata);
  });

  it("clears name and tag with null, and all metadata with metadata: null", async () => {
    const file = await upload();
    await patchFile(emulator(), file.blob_id, { tag: "t", metadata: { a: 1, b: 2 } });
    const response = await patchFile(emulator(), file.blob_id, { name: null, tag: null, metadata: null });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ name: null, tag: null, metadata: {} });
  });

  it("answers 200 and changes nothing for an empty object", async () => {
    const file = await upload();
    await patchFile(emulator(), file.blob_id, { metadata: { a: 1 } });
    const response = await patchFile(emulator(), file.blob_id, {});
    expect(response.status).toBe(200);
    expect(response.body.metadata).toEqual({ a: 1 });
    expect(emulator().files()[0].updateCount).toBe(1);
  });

  it("keeps a __proto__ key as ordinary data", async () => {
    const file = await upload();
    const response = await patchFile(emulator(), file.blob_id, JSON.parse('{"metadata":{"__proto__":{"polluted":true}}}'));
    expect(response.status).toBe(200);
    expect(Object.keys(response.body.metadata)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("refuses an unknown field with 422 naming it, and changes nothing", async () => {
    const file = await upload();
    const response = await patchFile(emulator(), file.blob_id, { name: "ok", colour: "blue" });
    expectError(response, ERRORS.unknownField, '"colour"', "name, tag, metadata");
    expect(emulator().files()[0].name).toBe("notes.txt");
  });

  it.each([
    [{ name: 5 }, '"name"', "a string or null", "number"],
    [{ tag: {} }, '"tag"', "a string or null", "object"],
    [{ metadata: [] }, '"metadata"', "an object or null", "array"],
    [{ metadata: "text" }, '"metadata"', "an object or null", "string"],
  ] as [unknown, string, string, string][])("refuses %j with 422 naming the field and the type", async (body, ...fragments) => {
    const file = await upload();
    expectError(await patchFile(emulator(), file.blob_id, body), ERRORS.wrongType, ...fragments);
  });

  it("refuses malformed JSON and non-object bodies with 400", async () => {
    const file = await upload();
    const path = `/v1/files/${file.blob_id}`;
    expectError(await request(emulator(), "PATCH", path, { body: "{not json", headers: jsonHeaders() }), ERRORS.malformedJson);
    expectError(await request(emulator(), "PATCH", path, { body: "", headers: jsonHeaders() }), ERRORS.malformedJson);
    expectError(await patchFile(emulator(), file.blob_id, [1, 2]), ERRORS.bodyNotObject, "array");
    expectError(await patchFile(emulator(), file.blob_id, null), ERRORS.bodyNotObject, "null");
    expectError(await patchFile(emulator(), file.blob_id, "name"), ERRORS.bodyNotObject, "string");
  });

  it("refuses a body without the JSON content type with 415", async () => {
    const file = await upload();
    const path = `/v1/files/${file.blob_id}`;
    const body = JSON.stringify({ tag: "x" });
    expectError(await request(emulator(), "PATCH", path, { body, headers: { "Content-Type": "text/plain" } }), ERRORS.unsupportedMediaType, "application/json");
    const none = await rawRequest(emulator(), "PATCH", path, { body });
    expect(none.kind === "response" && none.status).toBe(ERRORS.unsupportedMediaType.status);
    // A charset parameter is fine.
    const withCharset = await request(emulator(), "PATCH", path, { body, headers: { "Content-Type": "application/json; charset=utf-8" } });
    expect(withCharset.status).toBe(200);
  });

  it("refuses a body over the JSON limit with 413 and changes nothing", async () => {
    const file = await upload();
    const big = { metadata: { blob: "x".repeat(LIMITS.jsonBodyMaxBytes) } };
    expectError(await patchFile(emulator(), file.blob_id, big), ERRORS.payloadTooLarge, String(LIMITS.jsonBodyMaxBytes));
    expect(emulator().files()[0].updateCount).toBe(0);
    // The connection stays usable for the next request.
    expect((await getFile(emulator(), file.blob_id)).status).toBe(200);
  });

  it("refuses a chunked body (no Content-Length) once it passes the limit", async () => {
    const file = await upload();
    const chunk = new TextEncoder().encode(`{"metadata":{"a":"${"y".repeat(LIMITS.jsonBodyMaxBytes)}"}}`);
    const stream = new ReadableStream({
      start(controller) {
        controller.enqueue(chunk);
        controller.close();
      },
    });
    const response = await fetch(`${emulator().url}/v1/files/${file.blob_id}`, {
      method: "PATCH",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(response.status).toBe(ERRORS.payloadTooLarge.status);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe(ERRORS.payloadTooLarge.code);
  });

  describe("limits, naming the field and the limit", () => {
    it("name and tag: at most 256 characters", async () => {
      const file = await upload();
      expect((await patchFile(emulator(), file.blob_id, { name: "n".repeat(256), tag: "t".repeat(256) })).status).toBe(200);
      expectError(await patchFile(emulator(), file.blob_id, { name: "n".repeat(257) }), ERRORS.tooLong, '"name"', "257", "at most 256");
      expectError(await patchFile(emulator(), file.blob_id, { tag: "t".repeat(300) }), ERRORS.tooLong, '"tag"', "300", "at most 256");
    });

    it("metadata: at most 64 keys, counted after the merge", async () => {
      const file = await upload();
      const keys = (n: number, prefix = "k") => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, i]));
      expect((await patchFile(emulator(), file.blob_id, { metadata: keys(60) })).status).toBe(200);
      // 60 stored + 5 new = 65: refused although the patch itself has only 5 keys.
      expectError(await patchFile(emulator(), file.blob_id, { metadata: keys(5, "new") }), ERRORS.metadataTooManyKeys, '"metadata"', "65", "at most 64");
      expect(Object.keys(emulator().files()[0].metadata)).toHaveLength(60);
      // Removing one while adding five lands on 64: allowed.
      const response = await patchFile(emulator(), file.blob_id, { metadata: { ...keys(5, "new"), k0: null } });
      expect(response.status).toBe(200);
      expect(Object.keys(response.body.metadata)).toHaveLength(64);
    });

    it("metadata: at most 16 KiB as JSON, counted after the merge", async () => {
      const file = await upload();
      const half = "x".repeat(9000);
      expect((await patchFile(emulator(), file.blob_id, { metadata: { a: half } })).status).toBe(200);
      const response = await patchFile(emulator(), file.blob_id, { metadata: { b: half } });
      expectError(response, ERRORS.metadataTooLarge, '"metadata"', `at most ${LIMITS.metadataMaxBytes} bytes`);
      expect(response.body.error.message).toMatch(/would be 180\d\d bytes/);
      // Replacing a instead of adding b fits.
      expect((await patchFile(emulator(), file.blob_id, { metadata: { a: null, b: half } })).status).toBe(200);
    });
  });
});

describe("Idempotency-Key on upload", () => {
  it("replays the first answer, with its status, for a repeated key, and stores nothing more", async () => {
    const first = await upload("keyed upload", { epochs: 3, tag: "t", idempotencyKey: "up-1" });
    const again = await uploadFile(emulator(), {
      content: "keyed upload",
      filename: "notes.txt",
      type: "text/plain",
      epochs: 3,
      tag: "t",
      idempotencyKey: "up-1",
    });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotency-key")).toBe("up-1");
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first);
    expect(emulator().files()).toMatchObject([{ blobId: first.blob_id, uploadEpochs: 3 }]);
  });

  it("replays, after the clock advanced, the instants the record reports now: the answer names the same moments", async () => {
    const first = await upload("keyed then advanced", { epochs: 3, idempotencyKey: "up-adv" });
    await emulator().advanceEpochs(2);
    const again = await uploadFile(emulator(), {
      content: "keyed then advanced",
      filename: "notes.txt",
      type: "text/plain",
      epochs: 3,
      idempotencyKey: "up-adv",
    });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const record = (await getFile(emulator(), first.blob_id)).body;
    expect({ created: again.body.created_at, expires: again.body.expires_at }).toEqual({ created: record.createdAt, expires: record.expiresAt });
    expect(Date.parse(again.body.created_at)).toBe(Date.parse(first.created_at) - 2 * emulator().epochSeconds * 1000);
  });

  it("echoes the key on a first upload, and refuses it for another upload (other content or epochs) with 422", async () => {
    const response = await uploadFile(emulator(), { content: "echoed", filename: "e.txt", epochs: 2, idempotencyKey: "up-2" });
    expect(response.status).toBe(201);
    expect(response.headers.get("idempotency-key")).toBe("up-2");
    expect(response.headers.get("idempotent-replayed")).toBeNull();
    expectError(
      await uploadFile(emulator(), { content: "echoed", filename: "e.txt", epochs: 5, idempotencyKey: "up-2" }),
      ERRORS.idempotencyKeyReused,
      "Idempotency-Key",
    );
    expectError(
      await uploadFile(emulator(), { content: "other content", filename: "o.txt", epochs: 2, idempotencyKey: "up-2" }),
      ERRORS.idempotencyKeyReused,
      "Idempotency-Key",
    );
    expect(emulator().files()).toHaveLength(1);
  });

  it('is ignored, like renew\'s, by an emulator started with idempotency: "ignore" (no echo, no replay, no refusal)', async () => {
    await withEmulator(
      async (emu) => {
        const first = await uploadFile(emu, { content: "ignored key", filename: "i.txt", epochs: 2, idempotencyKey: "up-3" });
        expect(first.status).toBe(201);
        expect(first.headers.get("idempotency-key")).toBeNull();
        const again = await uploadFile(emu, { content: "ignored key", filename: "i.txt", epochs: 4, idempotencyKey: "up-3" });
        expect(again.status).toBe(200); // the same content, still alive: the existing file
        expect(again.headers.get("idempotent-replayed")).toBeNull();
        const renewed = await renewFile(emu, first.body.blob_id, { epochs: 1 }, { idempotencyKey: "r-3" });
        expect(renewed.headers.get("idempotency-key")).toBeNull();
        await renewFile(emu, first.body.blob_id, { epochs: 1 }, { idempotencyKey: "r-3" });
        expect(emu.files()).toMatchObject([{ uploadEpochs: 2, epochsBought: 2 }]);
      },
      { port: 0, idempotency: "ignore" },
    );
  });
});

describe("POST /v1/files/:blobId/renew", () => {
  it("buys epochs, moves expiresAt by exactly that many epochs and counts the purchase", async () => {
    const file = await upload("renew me", { epochs: 2 });
    const response = await renewFile(emulator(), file.blob_id, { epochs: 5 });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ blobId: file.blob_id, epochsAdded: 5, endEpoch: 7 });
    expect(Date.parse(response.body.expiresAt) - Date.parse(file.expires_at)).toBe(5 * DAY_MS);
    expect(emulator().files()[0]).toMatchObject({ endEpoch: 7, epochsBought: 5, renewCount: 1 });
  });

  it.each([
    [{ epochs: 0 }, ERRORS.integerOutOfRange, "from 1"],
    [{ epochs: -3 }, ERRORS.integerOutOfRange, "-3"],
    [{ epochs: 1.5 }, ERRORS.wrongType, "an integer"],
    [{ epochs: "3" }, ERRORS.wrongType, "string"],
    [{}, ERRORS.requiredField, "required"],
  ] as const)("refuses %j with 422 naming epochs", async (body, entry, fragment) => {
    const file = await upload();
    expectError(await renewFile(emulator(), file.blob_id, body), entry, '"epochs"', fragment);
    expect(emulator().files()[0].epochsBought).toBe(0);
  });

  it("refuses unknown fields", async () => {
    const file = await upload();
    expectError(await renewFile(emulator(), file.blob_id, { epochs: 1, days: 2 }), ERRORS.unknownField, '"days"');
  });

  it("allows ending exactly 53 epochs ahead and refuses one more, with the numbers", async () => {
    const file = await upload("horizon", { epochs: 3 });
    const refused = await renewFile(emulator(), file.blob_id, { epochs: 51 });
    expectError(refused, ERRORS.renewBeyondHorizon, "renewing by 51", "would end 54 epochs ahead", "current epoch 0", "at most 53", "ends at epoch 3");
    expect(emulator().files()[0].epochsBought).toBe(0);
    const accepted = await renewFile(emulator(), file.blob_id, { epochs: 50 });
    expect(accepted.status).toBe(200);
    expect(accepted.body.endEpoch).toBe(53);
    expectError(await renewFile(emulator(), file.blob_id, { epochs: 1 }), ERRORS.renewBeyondHorizon, "would end 54 epochs ahead");
  });

  it("replays the stored answer for a repeated Idempotency-Key without buying again", async () => {
    const file = await upload("idempotent");
    const first = await renewFile(emulator(), file.blob_id, { epochs: 4 }, { idempotencyKey: "renew-1" });
    expect(first.status).toBe(200);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    await emulator().advanceEpochs(1); // the replay is the stored answer, not a fresh read
    const again = await renewFile(emulator(), file.blob_id, { epochs: 4 }, { idempotencyKey: "renew-1" });
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    // Its instants moved back with the clock, as every record's: the same moments.
    const back = (at: string) => new Date(Date.parse(at) - emulator().epochSeconds * 1000).toISOString();
    expect(again.body).toEqual({ ...first.body, createdAt: back(first.body.createdAt), expiresAt: back(first.body.expiresAt) });
    expect(emulator().files()[0]).toMatchObject({ epochsBought: 4, renewCount: 1, endEpoch: 5 });
  });

  it("refuses the same Idempotency-Key for a different request with 422", async () => {
    const a = await upload("file a");
    const b = await upload("file b");
    expect((await renewFile(emulator(), a.blob_id, { epochs: 2 }, { idempotencyKey: "k" })).status).toBe(200);
    expectError(await renewFile(emulator(), a.blob_id, { epochs: 3 }, { idempotencyKey: "k" }), ERRORS.idempotencyKeyReused, "Idempotency-Key", "by 2 epochs");
    expectError(await renewFile(emulator(), b.blob_id, { epochs: 2 }, { idempotencyKey: "k" }), ERRORS.idempotencyKeyReused, a.blob_id);
    expect(
      emulator()
        .files()
        .map((f) => f.epochsBought)
        .sort(),
    ).toEqual([0, 2]);
  });

  it("does not remember a key whose request was refused", async () => {
    const file = await upload("refused first", { epochs: 3 });
    expect((await renewFile(emulator(), file.blob_id, { epochs: 60 }, { idempotencyKey: "retry-me" })).status).toBe(422);
    const response = await renewFile(emulator(), file.blob_id, { epochs: 2 }, { idempotencyKey: "retry-me" });
    expect(response.status).toBe(200);
    expect(response.headers.get("idempotent-replayed")).toBeNull();
  });

  it("refuses an Idempotency-Key longer than 255 characters", async () => {
    const file = await upload();
    expectError(
      await renewFile(emulator(), file.blob_id, { epochs: 1 }, { idempotencyKey: "k".repeat(256) }),
      ERRORS.idempotencyKeyInvalid,
      "Idempotency-Key",
      "256",
    );
  });
});

describe("epochs and expiry", () => {
  it("makes expiresAt and createdAt one epoch earlier per advanced epoch", async () => {
    const file = await upload("ageing", { epochs: 5 });
    const epoch = await emulator().advanceEpochs(2);
    expect(epoch).toBe(2);
    const after = (await getFile(emulator(), file.blob_id)).body;
    expect(Date.parse(file.expires_at) - Date.parse(after.expiresAt)).toBe(2 * DAY_MS);
    expect(Date.parse(file.created_at) - Date.parse(after.createdAt)).toBe(2 * DAY_MS);
  });

  it("answers 410 on GET, PATCH, renew and the cdn once the end epoch begins", async () => {
    const file = await upload("short lived", { epochs: 2 });
    await emulator().advanceEpochs(1);
    expect((await getFile(emulator(), file.blob_id)).status).toBe(200);
    const response = await request(emulator(), "POST", "/_emulator/advance", { json: { epochs: 1 } });
    expect(response.body).toEqual({ epoch: 2, advancedEpochs: 2 });

    expectError(await getFile(emulator(), file.blob_id), ERRORS.fileExpired, "epoch 2");
    expectError(await patchFile(emulator(), file.blob_id, { tag: "x" }), ERRORS.fileExpired);
    expectError(await renewFile(emulator(), file.blob_id, { epochs: 1 }), ERRORS.fileExpired);
    expect((await fetch(file.url, { headers: { Authorization: `Bearer ${KEY}` } })).status).toBe(ERRORS.fileExpired.status);
    const [record] = emulator().files();
    expect(record).toMatchObject({ expired: true, epochsBought: 0, tag: null });
    // A client's own clock agrees: the reported expiry is already past.
    expect(Date.parse(record.expiresAt)).toBeLessThanOrEqual(Date.now());
  });

  it("lets expired content be uploaded again as a new file", async () => {
    const file = await upload("comes back", { epochs: 1 });
    await patchFile(emulator(), file.blob_id, { metadata: { old: true } });
    await emulator().advanceEpochs(1);
    const again = await uploadFile(emulator(), { content: "comes back", epochs: 2 });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(file.id);
    expect((await getFile(emulator(), file.blob_id)).body.metadata).toEqual({});
  });

  it("reports the advanced epoch on health", async () => {
    await request(emulator(), "POST", "/_emulator/advance", { json: { epochs: 7 } });
    expect((await request(emulator(), "GET", "/_emulator/health", { key: null })).body.epoch).toBe(7);
    expectError(await request(emulator(), "POST", "/_emulator/advance", { json: { epochs: -1 } }), ERRORS.integerOutOfRange, '"epochs"');
  });
});

describe("routing and path encoding", () => {
  it("keeps %2F inside the blobId instead of splitting the path", async () => {
    const response = await request(emulator(), "GET", "/v1/files/a%2Fb");
    expectError(response, ERRORS.fileNotFound, '"a/b"');
    const renew = await request(emulator(), "POST", "/v1/files/a%2Fb/renew", { json: { epochs: 1 } });
    expectError(renew, ERRORS.fileNotFound, '"a/b"');
    expect(
      emulator()
        .requests()
        .map((e) => [e.route, e.blobId]),
    ).toEqual([
      ["get", "a/b"],
      ["renew", "a/b"],
    ]);
  });

  it("never lets .. or extra segments reach another route", async () => {
    const file = await upload();
    const cases: [string, string, ErrorEntry<any>][] = [
      ["GET", "/v1/files/..", ERRORS.fileNotFound],
      ["GET", "/v1/files/../files", ERRORS.routeNotFound],
      ["POST", `/v1/files/${file.blob_id}/renew/..`, ERRORS.routeNotFound],
      ["POST", "/v1/files/%2E%2E/renew", ERRORS.fileNotFound],
      ["GET", `/_emulator/../v1/files/${file.blob_id}`, ERRORS.routeNotFound],
      ["POST", `/v1/files/${file.blob_id}/renew/extra`, ERRORS.routeNotFound],
      ["GET", `/v1/files/${file.blob_id}/`, ERRORS.routeNotFound],
      ["GET", "/v1/files//renew", ERRORS.routeNotFound],
    ];
    for (const [method, path, entry] of cases) {
      const response = await rawRequest(emulator(), method, path, { headers: jsonHeaders(), body: '{"epochs":1}' });
      expect(response.kind === "response" && [path, response.status, response.body.error.code]).toEqual([path, entry.status, entry.code]);
    }
    expect(emulator().files()[0].epochsBought).toBe(0);
  });

  it("decodes unicode ids once and refuses malformed percent-encoding with 400", async () => {
    expectError(await request(emulator(), "GET", `/v1/files/${encodeURIComponent("🐘 é")}`), ERRORS.fileNotFound, '"🐘 é"');
    expect(emulator().requests()[0].blobId).toBe("🐘 é");
    // %25 decodes once to "%", never twice.
    expectError(await request(emulator(), "GET", "/v1/files/%252F"), ERRORS.fileNotFound, '"%2F"');
    const bad = await rawRequest(emulator(), "GET", "/v1/files/%E0%A4%A");
    expect(bad.kind === "response" && [bad.status, bad.body.error.code]).toEqual([ERRORS.malformedPath.status, ERRORS.malformedPath.code]);
  });

  it("answers 404 naming the limit for a blobId longer than the limit", async () => {
    const long = "a".repeat(LIMITS.blobIdMaxLength + 1);
    expectError(await getFile(emulator(), long), ERRORS.blobIdTooLong, "513 characters", `at most ${LIMITS.blobIdMaxLength}`);
    expectError(await patchFile(emulator(), long, { tag: "x" }), ERRORS.blobIdTooLong);
    expectError(await renewFile(emulator(), long, { epochs: 1 }), ERRORS.blobIdTooLong);
    expectError(await getFile(emulator(), "a".repeat(LIMITS.blobIdMaxLength)), ERRORS.fileNotFound);
  });

  it("answers 404 NOT_FOUND for unknown routes and 405 with Allow for a wrong method", async () => {
    expectError(await request(emulator(), "GET", "/v2/files/x"), ERRORS.routeNotFound, "/v2/files/x");
    expectError(await request(emulator(), "GET", "/v1/nothing"), ERRORS.routeNotFound);
    const del = await request(emulator(), "DELETE", "/v1/files/x");
    expectError(del, ERRORS.methodNotAllowed, "DELETE");
    expect(del.headers.get("allow")).toBe("GET, PATCH");
    const list = await request(emulator(), "GET", "/v1/files");
    expectError(list, ERRORS.methodNotAllowed);
    expect(list.headers.get("allow")).toBe("POST");
    // /v2 is outside /v1 and not logged; the other three are, as route "unknown".
    expect(
      emulator()
        .requests()
        .map((e) => [e.path, e.route, e.status]),
    ).toEqual([
      ["/v1/nothing", "unknown", 404],
      ["/v1/files/x", "unknown", 405],
      ["/v1/files", "unknown", 405],
    ]);
  });
});

describe("request log", () => {
  it("records each /v1 request with route, blobId, status, body (an upload's fields, its file by name and size) and idempotency key, and no admin calls", async () => {
    const file = await upload("logged");
    await patchFile(emulator(), file.blob_id, { tag: "x" });
    await renewFile(emulator(), file.blob_id, { epochs: 2 }, { idempotencyKey: "log-key" });
    await getFile(emulator(), "missing");
    await request(emulator(), "GET", "/_emulator/files");

    const log = emulator().requests();
    expect(log.map(({ time, ...rest }) => rest)).toEqual([
      { seq: 1, method: "POST", path: "/v1/files", route: "upload", status: 201, requestBody: { file: { filename: "notes.txt", bytes: 6 } } },
      { seq: 2, method: "PATCH", path: `/v1/files/${file.blob_id}`, route: "patch", blobId: file.blob_id, status: 200, requestBody: { tag: "x" } },
      {
        seq: 3,
        method: "POST",
        path: `/v1/files/${file.blob_id}/renew`,
        route: "renew",
        blobId: file.blob_id,
        status: 200,
        idempotencyKey: "log-key",
        requestBody: { epochs: 2 },
      },
      { seq: 4, method: "GET", path: "/v1/files/missing", route: "get", blobId: "missing", status: 404 },
    ]);
    for (const entry of log) expect(Number.isNaN(Date.parse(entry.time))).toBe(false);

    const overHttp = await request(emulator(), "GET", "/_emulator/requests");
    expect(overHttp.body).toEqual(log);
    expect((await request(emulator(), "DELETE", "/_emulator/requests")).body).toEqual({ cleared: 4 });
    expect(emulator().requests()).toEqual([]);
  });

  it("counts every request by route and status, past the 10,000 the log keeps, over HTTP too; a clear starts over", async () => {
    const file = await upload("counted");
    await patchFile(emulator(), file.blob_id, { tag: "x" });
    // 10,001 reads past the upload and the PATCH: the log keeps the latest 10,000, the counts every one.
    let next = 0;
    const reader = async () => {
      while (next++ < 10_000) await getFile(emulator(), file.blob_id);
    };
    await Promise.all(Array.from({ length: 16 }, reader));
    await getFile(emulator(), "missing");
    expect(emulator().requests()).toHaveLength(10_000);
    const counts = { upload: { "201": 1 }, patch: { "200": 1 }, get: { "200": 10_000, "404": 1 } };
    expect(emulator().requestCounts()).toEqual(counts);
    expect((await request(emulator(), "GET", "/_emulator/request-counts")).body).toEqual(counts);
    emulator().clearRequests();
    expect(emulator().requestCounts()).toEqual({});
  }, 60_000);

  it("records refused requests too (401, 413)", async () => {
    await request(emulator(), "GET", "/v1/files/x", { key: null });
    await request(emulator(), "PATCH", "/v1/files/x", { body: "x".repeat(LIMITS.jsonBodyMaxBytes + 1), headers: jsonHeaders() });
    expect(
      emulator()
        .requests()
        .map((e) => [e.route, e.status, e.requestBody]),
    ).toEqual([
      ["get", 401, undefined],
      ["patch", 413, undefined],
    ]);
  });
});

describe("admin", () => {
  it("dumps internal records with endEpoch and epochsBought", async () => {
    const file = await upload("dump", { epochs: 2 });
    await renewFile(emulator(), file.blob_id, { epochs: 3 });
    const dump = await request(emulator(), "GET", "/_emulator/files");
    expect(dump.body).toEqual(emulator().files());
    expect(dump.body[0]).toMatchObject({ id: file.id, blobId: file.blob_id, startEpoch: 0, endEpoch: 5, uploadEpochs: 2, epochsBought: 3, expired: false });
  });

  it("resets files, log, idempotency and the clock, keeping keys", async () => {
    const file = await upload("before reset");
    await renewFile(emulator(), file.blob_id, { epochs: 1 }, { idempotencyKey: "reset-key" });
    await emulator().advanceEpochs(3);
    const response = await request(emulator(), "POST", "/_emulator/reset");
    expect(response.body).toEqual({ status: "reset", epoch: 0 });
    expect(emulator().files()).toEqual([]);
    expect(emulator().requests()).toEqual([]);
    // The key still works, and the idempotency key is free again.
    const again = await upload("before reset");
    const renew = await renewFile(emulator(), again.blob_id, { epochs: 2 }, { idempotencyKey: "reset-key" });
    expect(renew.status).toBe(200);
    expect(renew.headers.get("idempotent-replayed")).toBeNull();
  });

  it("uploads directly through the library helper, with the same rules", async () => {
    const record = await emulator().uploadFile({ content: "direct", filename: "d.txt", tag: "lib", epochs: 4 });
    expect(record).toMatchObject({ name: "d.txt", tag: "lib", endEpoch: 4, size: 6 });
    expect((await getFile(emulator(), record.blobId)).body.tag).toBe("lib");
    await expect(emulator().uploadFile({ content: "x", epochs: 54 })).rejects.toMatchObject({ status: 422, code: "VALIDATION_ERROR" });
    expect(emulator().requests()).toHaveLength(1); // only the GET went over HTTP
  });
});

describe("rate limit", () => {
  it("answers 429 with Retry-After and X-RateLimit-Reset past the budget, then recovers", async () => {
    await withEmulator(
      async (limited) => {
        const statuses: number[] = [];
        let refused: ApiResponse | undefined;
        for (let i = 0; i < 3; i++) {
          const response = await getFile(limited, "x");
          statuses.push(response.status);
          if (response.status === 429) refused = response;
        }
        expect(statuses).toEqual([404, 404, 429]);
        expectError(refused as ApiResponse, ERRORS.rateLimited, "retry after 1 s");
        expect(refused?.headers.get("retry-after")).toBe("1");
        const reset = Number(refused?.headers.get("x-ratelimit-reset"));
        expect(reset).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
        expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 1);
        // Admin routes are not limited.
        expect((await request(limited, "GET", "/_emulator/health", { key: null })).status).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 600));
        expect((await getFile(limited, "x")).status).toBe(404);
        expect(limited.requests().map((e) => e.status)).toEqual([404, 404, 429, 404]);
      },
      { rateLimit: { requestsPerSecond: 2 } },
    );
  });
});

describe("README", () => {
  const readme = fs.readFileSync(path.resolve(__dirname, "../../../emulator/README.md"), "utf8");

  it("lists every catalogue entry with its status and code", () => {
    for (const [name, entry] of Object.entries(ERRORS)) {
      expect(readme).toContain(`| \`${name}\` | ${entry.status} | \`${entry.code}\` |`);
    }
  });

  it("has the section on differences from the real service", () => {
    expect(readme).toMatch(/^## Differences from the real service$/m);
  });
});
