import { describe, expect, it } from "vitest";
import { ERRORS } from "../../../emulator";
import { KEY, getFile, rawRequest, request, useEmulator, withEmulator } from "../../helpers/emulator";
import { recordResult } from "../../helpers/reliability-results";

/**
 * What emulator.test.ts does not already cover about keys: near-miss keys, keys in the wrong
 * place, and that a request without a valid key changes nothing, consumes nothing (no rate-limit
 * token, no scripted fault) and is refused before its body is even considered.
 */

const emulator = useEmulator();
const tried: string[] = [];

const NEAR_MISSES: Array<[string, Record<string, string>]> = [
  ["key prefix", { Authorization: `Bearer ${KEY.slice(0, -1)}` }],
  ["key with an extra character", { Authorization: `Bearer ${KEY}x` }],
  ["key in upper case", { Authorization: `Bearer ${KEY.toUpperCase()}` }],
  ["key split by a space", { Authorization: `Bearer ${KEY.slice(0, 5)} ${KEY.slice(5)}` }],
  ["key twice", { Authorization: `Bearer ${KEY} ${KEY}` }],
  ["empty bearer", { Authorization: "Bearer " }],
  ["scheme only", { Authorization: "Bearer" }],
  ["key without a scheme", { Authorization: KEY }],
  ["token scheme", { Authorization: `Token ${KEY}` }],
  ["key in X-Api-Key", { "X-Api-Key": KEY }],
  ["key in a cookie", { Cookie: `apiKey=${KEY}` }],
];

describe("near-miss and misplaced keys", () => {
  it.each(NEAR_MISSES)("%s: 401 on every route but health and the CDN, the key never echoed", async (label, headers) => {
    tried.push(label);
    const file = await emulator().uploadFile({ content: `auth ${Math.random()}` });
    const routes: Array<[string, string, string | undefined]> = [
      ["GET", `/v1/files/${file.blobId}`, undefined],
      ["PATCH", `/v1/files/${file.blobId}`, '{"tag":"stolen"}'],
      ["POST", `/v1/files/${file.blobId}/renew`, '{"epochs":5}'],
      ["GET", "/_emulator/files", undefined],
      ["POST", "/_emulator/reset", "{}"],
      ["POST", "/_emulator/faults", '{"routes":{"*":{"error5xxRate":1}}}'],
      ["GET", "/v1/files?api_key=" + KEY, undefined],
    ];
    for (const [method, path, body] of routes) {
      const response = await rawRequest(emulator(), method, path, {
        key: null,
        headers: { "Content-Type": "application/json", ...headers },
        body,
      });
      expect(response.kind === "response" && [method, path, response.status, response.body?.error?.code]).toEqual([method, path, 401, "UNAUTHORIZED"]);
      if (response.kind === "response") {
        expect(response.text).not.toContain(KEY);
        expect(response.text.toLowerCase()).not.toContain(KEY.toLowerCase().slice(4));
      }
    }
    expect(emulator().files()).toEqual([expect.objectContaining({ blobId: file.blobId, tag: null, epochsBought: 0, updateCount: 0 })]);
    expect(emulator().faults().routes).toBeUndefined();
    expect((await request(emulator(), "GET", "/_emulator/health", { key: null })).status).toBe(200);
  });
});

describe("the CDN", () => {
  it("serves a file's bytes to anyone with its url, as the real CDN presumably does; with cdnWantsKey (a gateway), only with the key", async () => {
    const file = await emulator().uploadFile({ content: "public bytes" });
    const open = await rawRequest(emulator(), "GET", `/cdn/${file.blobId}`, { key: null });
    expect(open.kind === "response" && [open.status, open.text]).toEqual([200, "public bytes"]);
    const { startEmulator } = await import("../../../emulator");
    const gateway = await startEmulator({ port: 0, cdnWantsKey: true });
    try {
      const stored = await gateway.uploadFile({ content: "keyed bytes" });
      const refused = await rawRequest(gateway, "GET", `/cdn/${stored.blobId}`, { key: null });
      expect(refused.kind === "response" && refused.status).toBe(401);
      const keyed = await rawRequest(gateway, "GET", `/cdn/${stored.blobId}`, {});
      expect(keyed.kind === "response" && [keyed.status, keyed.text]).toEqual([200, "keyed bytes"]);
    } finally {
      await gateway.close();
    }
  });
});

describe("a request without a valid key consumes nothing", () => {
  it("an unauthenticated upload creates no file, even with a valid body", async () => {
    const form = new FormData();
    form.append("file", new Blob(["sneaky"]), "s.txt");
    const response = await request(emulator(), "POST", "/v1/files", { key: "tsk_live_not_valid", body: form });
    expect(response.status).toBe(401);
    expect(emulator().files()).toEqual([]);
  });

  it("the key is checked before the body: an oversized body without a key is 401, not 413", async () => {
    const response = await rawRequest(emulator(), "PATCH", "/v1/files/x", {
      key: null,
      headers: { "Content-Type": "application/json" },
      body: "x".repeat(200_000),
    });
    expect(response.kind === "response" && response.status).toBe(ERRORS.missingApiKey.status);
  });

  it("refused requests take no rate-limit token", async () => {
    await withEmulator(
      async (limited) => {
        for (let i = 0; i < 10; i++) expect((await getFile(limited, "x", "tsk_live_wrong")).status).toBe(401);
        expect((await getFile(limited, "x")).status).toBe(404);
        expect((await getFile(limited, "x")).status).toBe(404);
      },
      { rateLimit: { requestsPerSecond: 2 } },
    );
  });

  it("refused requests use up no scripted fault", async () => {
    const file = await emulator().uploadFile({ content: `fault ${Math.random()}` });
    emulator().setFaults({ script: [{ route: "get", fault: "5xx", times: 1 }] });
    expect((await getFile(emulator(), file.blobId, null)).status).toBe(401);
    expect(emulator().faults().script).toEqual([expect.objectContaining({ route: "get", fault: "5xx", times: 1 })]);
    expect((await getFile(emulator(), file.blobId)).status).toBe(503);
    emulator().setFaults({});
    recordResult("security-auth", { nearMisses: tried, checks: ["no upload", "401 before 413", "no rate-limit token", "no scripted fault"] });
  });
});
