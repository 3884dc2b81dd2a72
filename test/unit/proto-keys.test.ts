import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { PROTO_KEY_STANDIN, validateInputs, withProtoKeysNamed } from "../../provider/stored-file-schema";
import { StoredFolder } from "../../provider/stored-folder";

/**
 * A metadata key named `__proto__` (JSON.parse makes one an own key) is refused, never dropped:
 * Pulumi's SDKs build objects by assignment, which loses such a key without a word, so a declared
 * `{"__proto__": 1}` would arrive as `{}` and clear the stored metadata. (The provider plugin
 * cannot see one: the protobuf library drops it while decoding the request.)
 */

describe("a key named __proto__", () => {
  it("is renamed in a program before the SDK sees it, deep, and the check refuses it naming where", () => {
    const declared = JSON.parse('{"tag":"t","metadata":{"team":"web","nested":[{"__proto__":{"owner":"me"}}]}}');
    const named = withProtoKeysNamed(declared);
    expect(named.metadata.nested[0]).toEqual({ [PROTO_KEY_STANDIN]: { owner: "me" } });
    const plain = { tag: "t", metadata: { team: "web" } };
    expect(withProtoKeysNamed(plain)).toBe(plain);
    const { failures } = validateInputs(undefined, { blobId: "a", ...named });
    expect(failures).toEqual([
      { property: "metadata", reason: expect.stringMatching(/^metadata\.nested\[0\]\.__proto__: a key named __proto__ cannot be stored safely/) },
    ]);
  });
});

describe("a key named __proto__ in a StoredFolder's values", () => {
  let root: string;
  const registered: Array<{ type: string; inputs: Record<string, unknown> }> = [];
  beforeAll(() => {
    pulumi.runtime.setMocks(
      {
        newResource: (args) => {
          registered.push({ type: args.type, inputs: args.inputs });
          return { id: `${args.name}-id`, state: args.inputs };
        },
        call: (args) => args.inputs,
      },
      "proj",
      "stack",
      true,
    );
    root = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-proto-"));
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it("reaches the StoredFile's check under the standin (refused there), and the folder names the file", async () => {
    fs.writeFileSync(path.join(root, "a.txt"), "a");
    const errors: string[] = [];
    const spy = vi.spyOn(pulumi.log, "error").mockImplementation(async (message: string) => void errors.push(message));
    try {
      new StoredFolder("site", { path: root, metadata: JSON.parse('{"__proto__":1,"team":"web"}') });
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      spy.mockRestore();
    }
    const file = registered.find((r) => r.type !== "tuskr:index:StoredFolder");
    expect(file?.inputs.metadata).toEqual({ [PROTO_KEY_STANDIN]: 1, team: "web" });
    expect(errors).toEqual([expect.stringMatching(/^StoredFolder site: "a\.txt": metadata\.__proto__: a key named __proto__/)]);
  });
});
