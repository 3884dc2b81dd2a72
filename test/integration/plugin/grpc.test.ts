import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORED_FILE_TYPES } from "../../../provider/engine/urns";

/**
 * The provider plugin's gRPC front door, run as the engine runs it (dist/, an engine address as its
 * argument): what it logs to the engine, its check failures and its errors show a user's bidi,
 * control and zero-width characters escaped, as the dynamic provider's lines do; and a key named
 * `__proto__`, which the protobuf library drops while decoding, is refused at check all the same.
 */

const fromSdk = createRequire(require.resolve("@pulumi/pulumi/package.json"));
const grpc = fromSdk("@grpc/grpc-js");
const provrpc = fromSdk("./proto/provider_grpc_pb");
const provproto = fromSdk("./proto/provider_pb");
const enginerpc = fromSdk("./proto/engine_grpc_pb");
const structproto = fromSdk("google-protobuf/google/protobuf/struct_pb");
const emptyproto = fromSdk("google-protobuf/google/protobuf/empty_pb");

const URN = `urn:pulumi:dev::p::${STORED_FILE_TYPES.plugin}::f`;
const DAY = 86_400_000;
const RAW = /[\p{Cc}\u200B\u202E]/u;
const name = "invoice\u202Efdp.exe";
const struct = (value: unknown) => structproto.Struct.fromJavaScript(value);
const stateOf = (daysLeft: number) => ({
  blobId: "b1",
  name,
  metadata: { "team\u200B": "web" },
  retentionEpochs: 0,
  createdAt: new Date(Date.now() - DAY).toISOString(),
  expiresAt: new Date(Date.now() + daysLeft * DAY).toISOString(),
});

const logged: string[] = [];
// The SDK's gRPC modules are untyped: only what is used here is.
type Unary = (req: unknown, done: (err: Error | null, resp: unknown) => void) => void;
let engine: { tryShutdown(done: () => void): void } | undefined;
let plugin: ChildProcess;
let client: Record<string, Unary> & { close(): void };
const call = <T>(method: string, req: unknown): Promise<T> =>
  new Promise((resolve, reject) => client[method](req, (err, resp) => (err ? reject(err) : resolve(resp as T))));

beforeAll(async () => {
  // The engine's log service, recording what the plugin tells it.
  const server = new grpc.Server();
  engine = server;
  server.addService(enginerpc.EngineService, {
    log: (c: { request: { getMessage(): string } }, done: (e: null, r: unknown) => void) => {
      logged.push(c.request.getMessage());
      done(null, new emptyproto.Empty());
    },
  });
  const enginePort: number = await new Promise((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e: Error | null, p: number) => (e ? reject(e) : resolve(p))),
  );
  plugin = spawn(process.execPath, [path.resolve(__dirname, "../../../dist/provider/plugin/main.js"), `127.0.0.1:${enginePort}`], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const port = await new Promise<string>((resolve) => plugin.stdout?.once("data", (d: Buffer) => resolve(d.toString().trim())));
  client = new provrpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const configure = new provproto.ConfigureRequest();
  configure.setArgs(struct({ apiKey: "tsk_test", baseUrl: "http://127.0.0.1:9" }));
  await call("configure", configure);
});
afterAll(async () => {
  client?.close();
  plugin?.kill();
  await new Promise<void>((resolve) => (engine ? engine.tryShutdown(resolve) : resolve()));
});

const diffRequest = (olds: unknown, news: unknown) => {
  const req = new provproto.DiffRequest();
  req.setId("b1");
  req.setUrn(URN);
  req.setOlds(struct(olds));
  req.setNews(struct(news));
  return req;
};

describe("the provider plugin's messages", () => {
  it("a warning sent to the engine's log names the file with its bidi and zero-width characters escaped", async () => {
    await call("diff", diffRequest(stateOf(1.5), { blobId: "b1", name, metadata: {} }));
    // The log calls are not awaited by the answer: wait for them.
    for (let i = 0; i < 50 && logged.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(logged).toEqual([
      expect.stringMatching(/^StoredFile "invoice\\u202Efdp\.exe" \(b1\): expiring soon/),
      expect.stringMatching(/^StoredFile "invoice\\u202Efdp\.exe" \(b1\): metadata is declared empty: .*\(team\\u200B\)/),
    ]);
    for (const line of logged) expect(line).not.toMatch(RAW);
  });

  it("a check failure and an error sent to the engine show them escaped too", async () => {
    const check = new provproto.CheckRequest();
    check.setUrn(URN);
    check.setOlds(struct({}));
    check.setNews(struct({ blobId: "b1", retainUntil: "2027-01-01\u202E" }));
    const checked = await call<{ getFailuresList(): Array<{ getReason(): string }> }>("check", check);
    const reasons = checked.getFailuresList().map((f) => f.getReason());
    expect(reasons).toEqual([expect.stringContaining('got "2027-01-01\\u202E"')]);
    const refused = await call("diff", diffRequest(stateOf(-2), { blobId: "b1", name, tag: "new" })).catch((e: { details: string }) => e);
    expect((refused as { details: string }).details).toMatch(/^StoredFile "invoice\\u202Efdp\.exe" \(b1\): .*expired/);
    expect((refused as { details: string }).details).not.toMatch(RAW);
  });
});

describe("a metadata key named __proto__ sent by another language's program", () => {
  /** A check request whose inputs hold `__proto__` keys: the library cannot build one, so a same-length key is renamed in its bytes. */
  const checkWithProtoKeys = (news: unknown) => {
    const req = new provproto.CheckRequest();
    req.setUrn(URN);
    req.setOlds(struct({}));
    req.setNews(struct(news));
    const bytes = Buffer.from(req.serializeBinary()).toString("latin1").replaceAll("__proto_X", "__proto__");
    req.serializeBinary = () => Buffer.from(bytes, "latin1");
    return req;
  };
  const reasons = async (news: unknown) =>
    (await call<{ getFailuresList(): Array<{ getProperty(): string; getReason(): string }> }>("check", checkWithProtoKeys(news)))
      .getFailuresList()
      .map((f) => [f.getProperty(), f.getReason()]);

  it("is refused at check, naming the field and the key, at the top of the metadata or nested in a list", async () => {
    for (const metadata of [{ __proto_X: "x", a: "1" }, { a: [{ __proto_X: { owner: "me" } }] }]) {
      expect(await reasons({ blobId: "b1", metadata }), JSON.stringify(metadata)).toEqual([
        ["metadata", expect.stringMatching(/^metadata(\.a\[0\])?\.__proto__: a key named __proto__ cannot be stored safely/)],
      ]);
    }
    // Without one, nothing is refused.
    expect(await reasons({ blobId: "b1", metadata: { a: "1" } })).toEqual([]);
  });
});

describe("a diff's answer", () => {
  it("names each change by its property path, and lists the field each is under", async () => {
    const news = { blobId: "b1", name, tag: "new", metadata: { "team\u200B": "ops", "a.b": 1, owner: "me" } };
    type Change = { getKind(): number; getInputdiff(): boolean };
    type Diff = { getDiffsList(): string[]; getDetaileddiffMap(): { forEach(each: (value: Change, key: string) => void): void } };
    const diff = await call<Diff>("diff", diffRequest(stateOf(30), news));
    const detailed: Array<[string, number, boolean]> = [];
    diff.getDetaileddiffMap().forEach((value, key) => {
      detailed.push([key, value.getKind(), value.getInputdiff()]);
    });
    const { ADD, UPDATE } = provproto.PropertyDiff.Kind;
    // The map comes back sorted by key.
    expect(detailed).toEqual([
      ["metadata.owner", ADD, true],
      ['metadata["a.b"]', ADD, true],
      ['metadata["team\u200B"]', UPDATE, true],
      ["tag", ADD, true],
    ]);
    // One entry per change, as the engine has always been sent.
    expect(diff.getDiffsList()).toEqual(["tag", "metadata", "metadata", "metadata"]);
  });
});
