import { createRequire } from "node:module";
import * as pulumi from "@pulumi/pulumi";
import { beforeAll, describe, expect, it } from "vitest";
import { ReceivedFileSchema } from "../../../provider/client/wire";
import { SECRET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { StoredFile } from "../../../provider/dynamic/stored-file";
import { PROTO_KEY_STANDIN, validateInputs, withProtoKeysNamed } from "../../../provider/file/validate";
import { parseState } from "../../../provider/file/state";
import { protoKeyPaths, withProtoKeysMarked } from "../../../provider/plugin/proto-keys";

const fromSdk = createRequire(require.resolve("@pulumi/pulumi/package.json"));
const structproto = fromSdk("google-protobuf/google/protobuf/struct_pb");
const provproto = fromSdk("./proto/provider_pb");

/**
 * A metadata key named `__proto__` (JSON.parse makes one an own key) is refused, never dropped:
 * Pulumi's SDKs build objects by assignment, which loses such a key without a word, so a declared
 * `{"__proto__": 1}` would arrive as `{}` and clear the stored metadata. (The provider plugin
 * reads such keys from the request's bytes: the protobuf library drops them while decoding it.)
 */

const registered = new Map<string, Record<string, unknown>>();
beforeAll(() => {
  pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        registered.set(args.name, args.inputs);
        return { id: `${args.name}-id`, state: args.inputs };
      },
      call: (args) => args.inputs,
    },
    "proj",
    "stack",
    true,
  );
});

/** Waits until the program's registrations stop arriving (they are asynchronous under the mocks). */
async function settled(): Promise<void> {
  let seen = -1;
  while (seen !== registered.size) {
    seen = registered.size;
    await new Promise((r) => setTimeout(r, 20));
  }
}

const declared = () => JSON.parse('{"__proto__":"x","a":"1"}') as Record<string, string>;

describe("a key named __proto__", () => {
  it("is renamed in a program before the SDK sees it, deep, and the check refuses it naming where", () => {
    const declared = JSON.parse('{"tag":"t","metadata":{"team":"web","nested":[{"__proto__":{"owner":"me"}}]}}');
    const named = withProtoKeysNamed(declared);
    expect(named.metadata.nested[0]).toEqual({ [PROTO_KEY_STANDIN]: { owner: "me" } });
    const plain = { tag: "t", metadata: { team: "web" } };
    expect(withProtoKeysNamed(plain)).toBe(plain);
    const { failures } = validateInputs({ blobId: "a", ...named });
    expect(failures).toEqual([
      { property: "metadata", reason: expect.stringMatching(/^metadata\.nested\[0\]\.__proto__: a key named __proto__ cannot be stored safely/) },
    ]);
  });

  it("inside an Output, a promise or a secret, reaches the check under the standin and is refused", async () => {
    registered.clear();
    const inputs = {
      plain: declared(),
      output: pulumi.output("x").apply(declared),
      promise: Promise.resolve(declared()),
      secret: pulumi.secret("x").apply(declared),
    };
    for (const [name, metadata] of Object.entries(inputs)) new StoredFile(name, { blobId: "abc", metadata });
    await settled();
    expect([...registered.keys()].sort()).toEqual(Object.keys(inputs).sort());
    for (const [name, sent] of registered) {
      // The mocks hand a secret over in its wire form (the engine unwraps it for the provider).
      const wire = sent.metadata as Record<string, unknown>;
      const metadata = wire[SIG_KEY] === SECRET_SIG ? wire.value : wire;
      const { failures } = validateInputs({ blobId: sent.blobId, metadata });
      expect({ name, failures }).toEqual({
        name,
        failures: [{ property: "metadata", reason: expect.stringMatching(/^metadata\.__proto__: a key named __proto__ cannot be stored/) }],
      });
    }
  });

  it("is kept as data when the service answers with one, and when a state holds one: the PATCH can then remove it", () => {
    const file = ReceivedFileSchema.parse({ blobId: "abc", metadata: declared() });
    expect(Object.keys(file.metadata ?? {})).toEqual(["__proto__", "a"]);
    expect(Object.keys(parseState({ blobId: "abc", metadata: declared() }).metadata ?? {})).toEqual(["__proto__", "a"]);
  });

  it("is found in a plugin request's bytes, inside secrets and lists, and marked for check where decoding dropped it", () => {
    const news = { blobId: "b1", metadata: { [SIG_KEY]: SECRET_SIG, value: { __proto_X: "x", list: [1, { __proto_X: {} }] } } };
    // The library cannot hold the key: a same-length one is renamed in the request's bytes.
    const request = new provproto.CheckRequest();
    request.setNews(structproto.Struct.fromJavaScript(news));
    const renamed = (b: Uint8Array) => Buffer.from(Buffer.from(b).toString("latin1").replaceAll("__proto_X", "__proto__"), "latin1");
    const message = renamed(request.serializeBinary());
    const paths = protoKeyPaths(message, 3);
    expect(paths).toEqual([
      ["metadata", "value", "__proto__"],
      ["metadata", "value", "list", 1, "__proto__"],
    ]);
    const decoded = provproto.CheckRequest.deserializeBinary(message).getNews().toJavaScript();
    const marked = withProtoKeysMarked(decoded, paths) as { metadata: { value: Record<string, unknown> } };
    expect(validateInputs({ blobId: "b1", metadata: marked.metadata.value }).failures).toEqual([
      { property: "metadata", reason: expect.stringMatching(/^metadata\.__proto__: a key named __proto__/) },
    ]);
    expect(protoKeyPaths(Buffer.from([0x1a, 0x05, 0xff]), 3)).toEqual([]);
  });
});
