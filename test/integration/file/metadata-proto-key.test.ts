import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type Emulator, startEmulator } from "../../../emulator";
import { request } from "../../helpers/emulator";
import { configuredProvider } from "../../helpers/provider-fixture";

/**
 * A metadata key named `__proto__` is data from end to end: the emulator stores and answers it,
 * and the provider keeps it when it reads the file, so a declared metadata replaces it exactly
 * (the PATCH removes it) instead of leaving a key the provider never saw.
 */

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
});
afterAll(() => emu.close());
beforeEach(() => emu.reset());

const URN = "urn:pulumi:dev::p::pulumi-nodejs:dynamic/tuskr:StoredFile::f";

/** A file whose stored metadata holds `__proto__` (set by another client), as the emulator answers it. */
async function fileWithProtoKey(): Promise<string> {
  const { blobId } = await emu.uploadFile({ content: `proto ${Math.random()}`, filename: "p.txt" });
  const patched = await request(emu, "PATCH", `/v1/files/${blobId}`, {
    body: '{"metadata":{"__proto__":"x","a":"1"}}',
    headers: { "Content-Type": "application/json" },
  });
  expect(patched.status).toBe(200);
  expect(patched.text).toContain('"metadata":{"__proto__":"x","a":"1"}');
  const read = await request(emu, "GET", `/v1/files/${blobId}`);
  expect(read.text).toContain('"metadata":{"__proto__":"x","a":"1"}');
  emu.clearRequests();
  return blobId;
}

const storedKeys = (blobId: string) => Object.keys(emu.files().find((f) => f.blobId === blobId)?.metadata ?? {});

describe("a stored metadata key named __proto__", () => {
  it("an adoption declaring metadata removes it: one GET, one PATCH that sends it as null", async () => {
    const blobId = await fileWithProtoKey();
    const provider = await configuredProvider(emu);
    const { outs } = await provider.create({ blobId, metadata: { a: "1" }, __urn: URN });
    expect(emu.requests().map((r) => r.route)).toEqual(["get", "patch"]);
    expect(JSON.stringify(emu.requests()[1]?.requestBody)).toBe('{"metadata":{"a":"1","__proto__":null}}');
    expect(storedKeys(blobId)).toEqual(["a"]);
    expect(outs.metadata).toEqual({ a: "1" });
  });

  it("metadata declared on a managed file for the first time removes it too (the update reads the file first)", async () => {
    const blobId = await fileWithProtoKey();
    const provider = await configuredProvider(emu);
    const { outs } = await provider.create({ blobId, tag: "t", __urn: URN });
    expect(storedKeys(blobId)).toEqual(["__proto__", "a"]);
    emu.clearRequests();
    await provider.update(blobId, outs, { blobId, tag: "t", metadata: { a: "1" }, __urn: URN });
    expect(emu.requests().map((r) => r.route)).toEqual(["get", "patch"]);
    expect(storedKeys(blobId)).toEqual(["a"]);
  });
});
