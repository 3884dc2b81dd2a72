import { afterAll, describe, expect, it } from "vitest";
import { sharedEmulator, stopEmulator, withStack } from "../../helpers/engine";

/**
 * getFile through the real engine: a file another stack keeps, read by blobId from a YAML
 * program (`fn::invoke` of tuskr:index:getFile, the provider plugin) and from a TypeScript one
 * (the package's getFileOutput): its record in the outputs, GETs only, nothing adopted; an
 * unknown blobId fails the preview with a clear message.
 */
afterAll(stopEmulator);

describe.each([
  ["YAML, fn::invoke of tuskr:index:getFile", "test/e2e/file/getfile-yaml"],
  ["TypeScript, getFileOutput", "test/e2e/file/getfile-ts"],
])("getFile from %s", (_label, project) => {
  it("returns the record as outputs with GETs only; an unknown blobId fails clearly", async () => {
    const emu = await sharedEmulator();
    const blobId = (await emu.uploadFile({ content: `shared ${Math.random()}`, filename: "shared.csv", tag: "reports", epochs: 6 })).blobId;
    await withStack(
      project,
      async ({ stack, cli, fileRequests }) => {
        const up = await stack.up();
        expect(up.outputs.name.value).toBe("shared.csv");
        expect(up.outputs.tag.value).toBe("reports");
        expect(up.outputs.remainingEpochs.value).toBe(6);
        expect(typeof up.outputs.expiresAt.value).toBe("string");
        expect(new Set(fileRequests().map((r) => r.route))).toEqual(new Set(["get"]));
        const state = JSON.parse((await cli(["stack", "export"])).stdout).deployment.resources as Array<{ type: string }>;
        expect(state.map((r) => r.type).filter((t) => t.includes("StoredFile"))).toEqual([]);
        await stack.setConfig("blobId", { value: "no-such-blob" });
        const preview = await cli(["preview"]);
        expect(preview.code).not.toBe(0);
        expect(preview.stdout + preview.stderr).toMatch(/getFile: no file with blobId "no-such-blob" exists/);
      },
      { config: { blobId } },
    );
  });
});
