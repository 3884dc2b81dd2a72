import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { describe, expect, it } from "vitest";
import { STORED_FILE_TYPES } from "../../../provider/engine/urns";
import { StoredFileProvider } from "../../../provider/dynamic/stored-file-provider";
import { configureProvider } from "../../helpers/provider-fixture";

/**
 * The service keeps one entry per content: two StoredFiles of one stack that declare the same
 * bytes (or adopt the same blobId) would each buy toward an end of their own and overwrite each
 * other's name, tag and metadata. The preview refuses the second, naming both; nothing is sent.
 */

const urn = (name: string) => `urn:pulumi:dev::proj::${STORED_FILE_TYPES.dynamic}::${name}`;
const textAsset = (text: string, hash: string) => ({ [SIG_KEY]: ASSET_SIG, text, hash });

async function provider(): Promise<StoredFileProvider> {
  const p = new StoredFileProvider();
  // Nothing is sent at check: an address that answers nothing will do.
  await configureProvider(p, { url: "http://127.0.0.1:9" });
  return p;
}

describe("two StoredFiles declaring one content", () => {
  it("the same bytes: the second fails check, naming both resources", async () => {
    const p = await provider();
    const first = await p.check({}, { source: textAsset("LICENSE", "ab12"), __urn: urn("license-a") });
    expect(first.failures).toEqual([]);
    const second = await p.check({}, { source: textAsset("LICENSE", "ab12"), __urn: urn("license-b") });
    expect(second.failures).toHaveLength(1);
    expect(second.failures![0]).toMatchObject({ property: "source" });
    expect(second.failures![0].reason).toMatch(
      /StoredFile "license-b" declares the same content as StoredFile "license-a": the service keeps one entry per content/,
    );
    // The same resource checked again (preview, then up) is not a second declaration.
    expect((await p.check({}, { source: textAsset("LICENSE", "ab12"), __urn: urn("license-a") })).failures).toEqual([]);
  });

  it("the same blobId adopted twice: refused the same way", async () => {
    const p = await provider();
    expect((await p.check({}, { blobId: "b1", __urn: urn("one") })).failures).toEqual([]);
    const twice = await p.check({}, { blobId: "b1", __urn: urn("two") });
    expect(twice.failures![0].reason).toMatch(/StoredFile "two" declares the same blobId as StoredFile "one"/);
  });

  it("a secret blobId adopted twice: refused naming no property (the engine would print its value)", async () => {
    const p = await provider();
    expect((await p.check({}, { blobId: "s3cret-blob", __urn: urn("one"), __secretInputs: ["blobId"] })).failures).toEqual([]);
    const twice = await p.check({}, { blobId: "s3cret-blob", __urn: urn("two"), __secretInputs: ["blobId"] });
    expect(twice.failures).toEqual([{ property: "", reason: expect.stringMatching(/^blobId \(a secret input\): StoredFile "two" declares the same blobId/) }]);
    expect(JSON.stringify(twice.failures)).not.toContain("s3cret");
  });

  it("a resource that moves to other content frees the one it had", async () => {
    const p = await provider();
    await p.check({}, { source: textAsset("v1", "h1"), __urn: urn("doc") });
    await p.check({}, { source: textAsset("v2", "h2"), __urn: urn("doc") });
    expect((await p.check({}, { source: textAsset("v1", "h1"), __urn: urn("other") })).failures).toEqual([]);
  });
});
