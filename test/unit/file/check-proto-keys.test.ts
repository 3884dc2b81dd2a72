import { describe, expect, it } from "vitest";
import { PROTO_KEY_STANDIN, validateInputs, withProtoKeysNamed } from "../../../provider/file/schema";

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
