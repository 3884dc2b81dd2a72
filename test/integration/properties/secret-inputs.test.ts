import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { ERRORS, type Emulator } from "../../../emulator";
import { TuskrClient } from "../../../provider/client/client";
import { LIMITS } from "../../../api";
import { storedFileProvider as provider } from "../../../provider/dynamic/stored-file-provider";
import { inert } from "../../../provider/engine/inert";
import { KEY, getFile, jsonHeaders, patchFile, rawRequest, renewFile, request, useEmulator, withEmulator } from "../../helpers/emulator";
import { recordResult } from "../../helpers/reliability-results";
import { configureProvider } from "../../helpers/provider-fixture";

/**
 * Untrusted blobIds and field values, through the client and through the provider, and request
 * bodies the emulator must refuse with a clear 4xx while changing nothing. (The basics, such as
 * malformed PATCH JSON, wrong PATCH types, 413 and the metadata limits, are in emulator.test.ts.)
 */

const emulator = useEmulator();
const fast = { baseDelayMs: 1, maxDelayMs: 5, maxAttempts: 3, maxTotalMs: 5_000 };
const client = () => new TuskrClient({ baseUrl: emulator().url, apiKey: KEY, retry: fast });
const tried: Record<string, unknown[]> = { blobIds: [], fieldValues: [], bodies: [] };
afterAll(() => {
  recordResult("security-inputs", tried);
});

let sentinel: string;
beforeEach(async () => {
  sentinel = (await emulator().uploadFile({ content: `sentinel ${Math.random()}`, epochs: 3 })).blobId;
  await client().updateFile(sentinel, { tag: "sentinel", metadata: { keep: true } });
  emulator().clearRequests();
});

/** The sentinel file as it must stay: nothing reset, renewed or patched by a hostile id. */
const sentinelIntact = (target: Emulator = emulator()) => {
  const f = target.files().find((x) => x.blobId === sentinel);
  expect(f).toMatchObject({ tag: "sentinel", metadata: { keep: true }, epochsBought: 0, updateCount: 1 });
};

/** Ids that look like paths, encodings, routes, or are just odd. All unknown to the service. */
const HOSTILE_IDS = [
  "a/b",
  "x/renew",
  "../_emulator/reset",
  "../../_emulator/reset",
  "..%2F..%2F_emulator%2Freset",
  "%2e%2e",
  "%2F",
  "%252F",
  "%",
  "%zz",
  "...",
  "./x",
  "a\\b",
  "a?b=c",
  "a#frag",
  "a;b",
  " spaced id ",
  "renew",
  "_emulator",
  "é",
  "🐘🐘",
  "\u202etxt.exe",
  "\ufeffbom",
  "a".repeat(LIMITS.blobIdMaxLength),
  `${"é".repeat(300)}`,
];
/** Ids the client refuses before sending anything. */
const REFUSED_IDS = ["", ".", "..", "a\u0000b", "tab\there", "new\nline", "del\u007f", "a".repeat(LIMITS.blobIdMaxLength + 1)];

describe("hostile blobIds through the client: one path segment, the exact id, never another route", () => {
  it.each(HOSTILE_IDS.map((id) => [JSON.stringify(id).slice(0, 40), id]))("%s: GET, PATCH and renew answer 404 for that exact id", async (_label, id) => {
    tried.blobIds.push({ id: id.length > 40 ? `${id.slice(0, 12)}… (${id.length} chars)` : id, via: "client" });
    for (const call of [
      () => client().getFile(id),
      () => client().updateFile(id, { tag: "x" }),
      () => client().renewFile(id, 1, { idempotencyKey: `k-${Math.random()}` }),
    ]) {
      const e = await call().then(
        () => undefined,
        (err: { status?: number; code?: string; message: string }) => err,
      );
      expect(e, id).toBeDefined();
      expect([e!.status, e!.code]).toEqual([404, "NOT_FOUND"]);
    }
    const log = emulator().requests();
    expect(log.map((r) => [r.route, r.blobId])).toEqual([
      ["get", id],
      ["patch", id],
      ["renew", id],
    ]);
    sentinelIntact();
  });

  it.each(REFUSED_IDS.map((id) => [JSON.stringify(id).slice(0, 40), id]))("%s: refused before any request", async (_label, id) => {
    tried.blobIds.push({ id: id.length > 40 ? `${id.slice(0, 12)}… (${id.length} chars)` : id, via: "client (refused locally)" });
    for (const call of [() => client().getFile(id), () => client().updateFile(id, { tag: "x" }), () => client().renewFile(id, 1, { idempotencyKey: "k" })]) {
      await expect(call()).rejects.toMatchObject({ code: "BAD_REQUEST" });
    }
    expect(emulator().requests()).toEqual([]);
  });
});

describe("hostile blobIds through the provider: check refuses or create fails clearly, nothing written", () => {
  const configure = () => configureProvider(provider, emulator(), { "tuskr:apiKey": KEY });

  it.each([...HOSTILE_IDS, ...REFUSED_IDS].map((id) => [JSON.stringify(id).slice(0, 40), id]))("%s", async (_label, id) => {
    await configure();
    tried.blobIds.push({ id: id.length > 40 ? `${id.slice(0, 12)}… (${id.length} chars)` : id, via: "provider" });
    const checked = await provider.check({}, { blobId: id, tag: "t", metadata: { a: 1 }, retentionEpochs: 2 });
    if (checked.failures && checked.failures.length > 0) {
      expect(checked.failures.map((f) => f.property)).toContain("blobId");
      expect(REFUSED_IDS).toContain(id);
    } else {
      const e = await provider.create({ ...checked.inputs, __provider: "stub" }).then(
        () => undefined,
        (err: { message: string; id?: string }) => err,
      );
      expect(e, id).toBeDefined();
      // Named as the console shows it: bidi, control and zero-width characters escaped.
      expect(e!.message).toContain(`StoredFile ${inert(JSON.stringify(id))}`);
      expect(e!.message).toMatch(/unknown blobId/);
      expect(e!.id).toBeUndefined(); // nothing to record: nothing was done
      // A refresh of such an id drops it from the stack instead of failing.
      expect(await provider.read(id, { blobId: id, retentionEpochs: 2 })).toEqual({});
    }
    expect(
      emulator()
        .requests()
        .filter((r) => r.route === "patch" || r.route === "renew"),
    ).toEqual([]);
    sentinelIntact();
  });
});

describe("untrusted field values are stored exactly as declared, through check, plan and PATCH", () => {
  const cases: Array<[string, Record<string, unknown>]> = [
    ["path-like name and tag", { name: "../../etc/passwd", tag: "a/b%2Fc" }],
    ["unicode at the length limit", { name: "é".repeat(LIMITS.nameMaxLength), tag: "🐘".repeat(LIMITS.tagMaxLength / 2) }],
    ["control characters and quotes in values", { name: 'quote " back\\slash \u0000 nul', tag: "\r\n\t" }],
    ["metadata keys that look like paths or encodings", { metadata: { "a/b": 1, "..": 2, "%2F": 3, "": 4, " ": 5, ключ: 6, "🐘": { "x.y": [null, 1] } } }],
    ["metadata at 64 keys", { metadata: Object.fromEntries(Array.from({ length: LIMITS.metadataMaxKeys }, (_, i) => [`k${i}`, "v".repeat(100)])) }],
    ["markup and template strings", { name: "<script>alert(1)</script>", tag: "${process.env.TUSKR_API_KEY}", metadata: { sql: "'; DROP TABLE files; --" } }],
  ];

  it.each(cases)("%s", async (_label, fields) => {
    tried.fieldValues.push(_label);
    await configureProvider(provider, emulator(), { "tuskr:apiKey": KEY });
    const blobId = (await emulator().uploadFile({ content: `values ${Math.random()}` })).blobId;
    const checked = await provider.check({}, { blobId, ...fields });
    expect(checked.failures).toEqual([]);
    const { outs } = await provider.create({ ...checked.inputs, __provider: "stub" });
    const stored = emulator()
      .files()
      .find((f) => f.blobId === blobId)!;
    for (const [k, v] of Object.entries(fields)) {
      expect((stored as unknown as Record<string, unknown>)[k]).toEqual(v);
      expect(outs[k]).toEqual(v);
    }
    // And a second up plans nothing.
    expect((await provider.diff(blobId, outs, { ...checked.inputs })).changes).toBe(false);
    sentinelIntact();
  });
});

describe("request bodies the emulator refuses: a clear 4xx, and nothing changes", () => {
  const bodies: Array<[string, "PATCH" | "renew", string | Buffer, Record<string, string>, number]> = [
    ["renew: not JSON", "renew", "{epochs:1}", jsonHeaders(), 400],
    ["renew: empty body", "renew", "", jsonHeaders(), 400],
    ["renew: an array", "renew", "[1]", jsonHeaders(), 400],
    ["renew: null", "renew", "null", jsonHeaders(), 400],
    ["renew: epochs null", "renew", '{"epochs":null}', jsonHeaders(), 422],
    ["renew: epochs true", "renew", '{"epochs":true}', jsonHeaders(), 422],
    ["renew: epochs [1]", "renew", '{"epochs":[1]}', jsonHeaders(), 422],
    ["renew: epochs 1e300", "renew", '{"epochs":1e300}', jsonHeaders(), 422],
    ["renew: epochs 2^53", "renew", '{"epochs":9007199254740992}', jsonHeaders(), 422],
    ["renew: __proto__ member", "renew", '{"epochs":1,"__proto__":{"epochs":50}}', jsonHeaders(), 422],
    ["renew: text/plain", "renew", '{"epochs":1}', { "Content-Type": "text/plain" }, 415],
    ["renew: oversized", "renew", JSON.stringify({ epochs: 1, pad: "x".repeat(LIMITS.jsonBodyMaxBytes) }), jsonHeaders(), 413],
    ["renew: invalid UTF-8", "renew", Buffer.from([0x7b, 0x22, 0x65, 0xff, 0x22, 0x3a, 0x31, 0x7d]), jsonHeaders(), 400],
    ["renew: Idempotency-Key with a space", "renew", '{"epochs":1}', jsonHeaders({ "Idempotency-Key": "a b" }), 422],
    ["PATCH: name true", "PATCH", '{"name":true}', jsonHeaders(), 422],
    ["PATCH: tag 1", "PATCH", '{"tag":1}', jsonHeaders(), 422],
    ["PATCH: metadata true", "PATCH", '{"metadata":true}', jsonHeaders(), 422],
    ["PATCH: __proto__ member", "PATCH", '{"__proto__":{"tag":"x"}}', jsonHeaders(), 422],
    ["PATCH: invalid UTF-8", "PATCH", Buffer.from([0x7b, 0x22, 0x74, 0x61, 0x67, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]), jsonHeaders(), 400],
    [
      "PATCH: 65 keys in one request",
      "PATCH",
      JSON.stringify({ metadata: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i])) }),
      jsonHeaders(),
      422,
    ],
    ["PATCH: metadata 16 KiB + 1 as JSON", "PATCH", JSON.stringify({ metadata: { k: "x".repeat(LIMITS.metadataMaxBytes) } }), jsonHeaders(), 422],
    ["PATCH: no Content-Type", "PATCH", '{"tag":"x"}', {}, 415],
    ["PATCH: Content-Length above the limit", "PATCH", "{}", jsonHeaders({ "Content-Length": String(LIMITS.jsonBodyMaxBytes + 1) }), 413],
  ];

  it.each(bodies)("%s → %s", async (label, route, body, headers, status) => {
    tried.bodies.push({ body: label, expected: status });
    const path = route === "renew" ? `/v1/files/${sentinel}/renew` : `/v1/files/${sentinel}`;
    const method = route === "renew" ? "POST" : "PATCH";
    const sendHeaders = { ...headers };
    let result: { status: number; body: any };
    if (sendHeaders["Content-Length"] !== undefined) {
      // A declared length larger than the body: refused on the header alone.
      result = await new Promise<{ status: number; body: any }>((resolve, reject) => {
        const url = new URL(emulator().url);
        const req = require("node:http").request(
          { host: url.hostname, port: url.port, method, path, headers: { ...sendHeaders, Authorization: `Bearer ${KEY}` } },
          (res: any) => {
            let text = "";
            res.on("data", (c: Buffer) => (text += c));
            res.on("end", () => resolve({ status: res.statusCode, body: JSON.parse(text) }));
          },
        );
        req.on("error", reject);
        req.write(body);
        setTimeout(() => req.destroy(), 2_000);
      });
    } else {
      const raw = await rawRequest(emulator(), method, path, { headers: sendHeaders, body });
      expect(raw.kind).toBe("response");
      result = raw as { status: number; body: any };
    }
    expect(result.status).toBe(status);
    expect(result.body?.error?.code).toBe(status === 413 ? "PAYLOAD_TOO_LARGE" : status === 422 ? "VALIDATION_ERROR" : "BAD_REQUEST");
    expect(result.body.error.message.length).toBeGreaterThan(10);
    sentinelIntact();
    expect((await getFile(emulator(), sentinel)).status).toBe(200);
  });

  // Merging, cloning or answering deeply nested metadata recursively would overflow the stack.
  it("metadata nested 2,000 deep is refused with 4xx and the file stays readable", async () => {
    await withEmulator(async (own) => {
      const blobId = (await own.uploadFile({ content: "deep" })).blobId;
      let deep = "1";
      for (let i = 0; i < 2_000; i++) deep = `{"d":${deep}}`;
      const patch = await request(own, "PATCH", `/v1/files/${blobId}`, { body: `{"metadata":${deep}}`, headers: jsonHeaders() });
      const after = await getFile(own, blobId);
      expect(own.files()[0].updateCount).toBe(0);
      expect(patch.status).toBeGreaterThanOrEqual(400);
      expect(patch.status).toBeLessThan(500);
      expect(after.status).toBe(200);
      expect(after.body.metadata).toEqual({});
    });
  });

  it("a refused renew with an Idempotency-Key does not use up the key, and an accepted one replays", async () => {
    const key = "security-replay-key";
    expect((await renewFile(emulator(), sentinel, { epochs: "1" }, { idempotencyKey: key })).status).toBe(ERRORS.wrongType.status);
    expect((await renewFile(emulator(), sentinel, { epochs: 2 }, { idempotencyKey: key })).status).toBe(200);
    expect((await renewFile(emulator(), sentinel, { epochs: 2 }, { idempotencyKey: key })).headers.get("idempotent-replayed")).toBe("true");
    expect((await renewFile(emulator(), sentinel, { epochs: 3 }, { idempotencyKey: key })).status).toBe(ERRORS.idempotencyKeyReused.status);
    expect(
      emulator()
        .files()
        .find((f) => f.blobId === sentinel)!.epochsBought,
    ).toBe(2);
    expect((await patchFile(emulator(), sentinel, {})).status).toBe(200);
  });
});
