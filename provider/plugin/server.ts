import { type Notice, inertError, inertFailure, noticeLine, noticeText } from "../engine/notice";
import { createRequire } from "node:module";
import { PACKAGE_VERSION } from "../engine/identity";
import type { PropertyDiff } from "../file/plan";
import { StoredFilePlugin } from "./provider";
import { parseUrn, resourceUrnOf, STORED_FILE_TYPES, STORED_FOLDER_TYPES } from "../engine/urns";
import { packageSchema } from "./schema";
import { protoKeyPaths, withProtoKeysMarked } from "./proto-keys";

/**
 * The `tuskr` plugin's gRPC server. It loads the protocol code from the user's @pulumi/pulumi
 * rather than bundling its own, so there is one copy at the version the user already has.
 */

const fromSdk = createRequire(require.resolve("@pulumi/pulumi/package.json"));
const grpc = fromSdk("@grpc/grpc-js");
const provproto = fromSdk("./proto/provider_pb");
const provrpc = fromSdk("./proto/provider_grpc_pb");
const pluginproto = fromSdk("./proto/plugin_pb");
const engineproto = fromSdk("./proto/engine_pb");
const enginerpc = fromSdk("./proto/engine_grpc_pb");
const statusproto = fromSdk("./proto/status_pb");
const structproto = fromSdk("google-protobuf/google/protobuf/struct_pb");
const emptyproto = fromSdk("google-protobuf/google/protobuf/empty_pb");
const anyproto = fromSdk("google-protobuf/google/protobuf/any_pb");

type Props = Record<string, unknown>;
type Callback = (error: unknown, value?: unknown, trailer?: unknown) => void;
type Call = { request: any };

/** A protobuf Struct as plain JS (special values, such as secrets and assets, kept as markers). */
const toJs = (struct: any): Props => (struct ? (struct.toJavaScript() as Props) : {});
/** Plain JS as a protobuf Struct; undefined values are dropped, as JSON drops them. */
const toStruct = (value: unknown): any => structproto.Struct.fromJavaScript(JSON.parse(JSON.stringify(value ?? {})));

const DIFF_KINDS: Record<string, number> = {
  add: provproto.PropertyDiff.Kind.ADD,
  "add-replace": provproto.PropertyDiff.Kind.ADD_REPLACE,
  delete: provproto.PropertyDiff.Kind.DELETE,
  "delete-replace": provproto.PropertyDiff.Kind.DELETE_REPLACE,
  update: provproto.PropertyDiff.Kind.UPDATE,
  "update-replace": provproto.PropertyDiff.Kind.UPDATE_REPLACE,
};

/**
 * An error as the engine expects it, its message inert. A create or update that failed after
 * some steps went through carries the state to record (ErrorResourceInitFailed), so nothing done
 * is forgotten.
 */
function grpcError(error: unknown): { code: number; details: string; metadata: any } {
  const e = inertError(error) as { message?: string; id?: string; properties?: Props; reasons?: string[] };
  const message = String(e?.message ?? e);
  const metadata = new grpc.Metadata();
  if (e?.id && e.properties) {
    const detail = new provproto.ErrorResourceInitFailed();
    detail.setId(e.id);
    detail.setProperties(toStruct(e.properties));
    detail.setReasonsList(e.reasons ?? [message]);
    const any = new anyproto.Any();
    any.pack(detail.serializeBinary(), "pulumirpc.ErrorResourceInitFailed");
    const status = new statusproto.Status();
    status.setCode(grpc.status.UNKNOWN);
    status.setMessage(message);
    status.addDetails(any);
    metadata.add("grpc-status-details-bin", Buffer.from(status.serializeBinary()));
  }
  return { code: grpc.status.UNKNOWN, details: message, metadata };
}

/** Unary handler: runs `fn`, answers its value, or the error as the engine reads it. */
function unary(fn: (req: any) => Promise<unknown> | unknown) {
  return (call: Call, callback: Callback) => {
    Promise.resolve()
      .then(() => fn(call.request))
      .then(
        (value) => callback(null, value),
        (error) => {
          const e = grpcError(error);
          callback(e, null, e.metadata);
        },
      );
  };
}

function checkResponse(result: { inputs: Props; failures: Array<{ property: string; reason: string }> }) {
  const resp = new provproto.CheckResponse();
  resp.setInputs(toStruct(result.inputs));
  resp.setFailuresList(
    result.failures.map(inertFailure).map((f) => {
      const failure = new provproto.CheckFailure();
      failure.setProperty(f.property);
      failure.setReason(f.reason);
      return failure;
    }),
  );
  return resp;
}

/** Warnings go to the engine's log, attributed to their resource; without an engine, to stderr. */
function engineLogger(engineAddress: string | undefined) {
  const engine = engineAddress ? new enginerpc.EngineClient(engineAddress, grpc.credentials.createInsecure()) : undefined;
  return (notice: Notice, urn?: string) => {
    const line = noticeLine(notice);
    if (!engine) {
      process.stderr.write(`${line}\n`);
      return;
    }
    const req = new engineproto.LogRequest();
    req.setSeverity(notice.severity === "warning" ? engineproto.LogSeverity.WARNING : engineproto.LogSeverity.INFO);
    req.setMessage(noticeText(notice));
    // A folder's entry is said of the folder: the engine has no resource of the entry's URN.
    if (urn) req.setUrn(resourceUrnOf(urn));
    engine.log(req, (err: unknown) => {
      if (err) process.stderr.write(`${line}\n`);
    });
  };
}

/** A diff's answer in the engine's terms, property paths and all. */
function diffResponse(result: { changes: boolean; replaces: string[]; detailedDiff: Record<string, PropertyDiff> }) {
  const resp = new provproto.DiffResponse();
  resp.setChanges(result.changes ? provproto.DiffResponse.DiffChanges.DIFF_SOME : provproto.DiffResponse.DiffChanges.DIFF_NONE);
  resp.setReplacesList(result.replaces);
  // Each change carries its field; its key was written from it (putChange) and is never read back.
  resp.setDiffsList(Object.values(result.detailedDiff).map((d) => d.field));
  const detailed = resp.getDetaileddiffMap();
  for (const [path, d] of Object.entries(result.detailedDiff)) {
    const diff = new provproto.PropertyDiff();
    diff.setKind(DIFF_KINDS[d.kind]);
    diff.setInputdiff(d.inputDiff);
    detailed.set(path, diff);
  }
  resp.setHasdetaileddiff(true);
  resp.setDeletebeforereplace(false);
  return resp;
}

/** The provider's own calls: its version, schema and configuration. */
function providerCalls(plugin: StoredFilePlugin, schema: string) {
  return {
    getPluginInfo: unary(() => {
      const info = new pluginproto.PluginInfo();
      info.setVersion(PACKAGE_VERSION);
      return info;
    }),
    getSchema: unary((req) => {
      if (req.getVersion() !== 0) throw new Error(`unsupported schema version ${req.getVersion()}`);
      const resp = new provproto.GetSchemaResponse();
      resp.setSchema(schema);
      return resp;
    }),
    checkConfig: unary((req) => checkResponse(plugin.checkConfig(toJs(req.getNews())))),
    diffConfig: unary((req) => {
      const resp = new provproto.DiffResponse();
      const { changes } = plugin.diffConfig(toJs(req.getOlds()), toJs(req.getNews()));
      resp.setChanges(changes ? provproto.DiffResponse.DiffChanges.DIFF_SOME : provproto.DiffResponse.DiffChanges.DIFF_NONE);
      return resp;
    }),
    configure: unary(async (req) => {
      await plugin.configure(toJs(req.getArgs()));
      const resp = new provproto.ConfigureResponse();
      resp.setAcceptsecrets(true);
      // No Create or Update at preview: the engine shows the declared inputs instead, and a
      // preview can never upload, patch or buy.
      resp.setSupportspreview(false);
      resp.setAcceptresources(false);
      resp.setAcceptoutputs(false);
      return resp;
    }),
    cancel: unary(() => new emptyproto.Empty()),
    attach: unary(() => new emptyproto.Empty()),
    construct: unary(() => {
      throw new Error("the tuskr provider has no component resources");
    }),
    call: unary(() => {
      throw new Error("the tuskr provider has no methods");
    }),
    invoke: unary(async (req) => {
      const resp = new provproto.InvokeResponse();
      resp.setReturn(toStruct(await plugin.invoke(req.getTok(), toJs(req.getArgs()))));
      return resp;
    }),
  };
}

/** The resources' calls, each sent to the front door of the URN's type. */
function resourceCalls(plugin: StoredFilePlugin) {
  const resourceOf = (urn: string) => {
    const type = parseUrn(urn)?.type;
    if (type === STORED_FILE_TYPES.plugin) return plugin;
    if (type === STORED_FOLDER_TYPES.plugin) return plugin.folder;
    throw new Error(`the tuskr provider has no resource type ${type}`);
  };
  return {
    check: unary(async (req) => {
      const news = withProtoKeysMarked(toJs(req.getNews()), protoKeysOf.get(req) ?? []);
      return checkResponse(await resourceOf(req.getUrn()).check(req.getUrn(), toJs(req.getOlds()), news));
    }),
    diff: unary(async (req) =>
      diffResponse(await resourceOf(req.getUrn()).diff(req.getId(), req.getUrn(), toJs(req.getOlds()), toJs(req.getNews()), toJs(req.getOldInputs()))),
    ),
    create: unary(async (req) => {
      const target = resourceOf(req.getUrn());
      const resp = new provproto.CreateResponse();
      // Not asked for (supportsPreview is false), and never a write if it is: the inputs as they are.
      if (req.getPreview()) return resp.setProperties(req.getProperties());
      const { id, outs } = await target.create(req.getUrn(), toJs(req.getProperties()));
      resp.setId(id);
      resp.setProperties(toStruct(outs));
      return resp;
    }),
    read: unary(async (req) => {
      const result = await resourceOf(req.getUrn()).read(req.getId(), req.getUrn(), toJs(req.getProperties()));
      const resp = new provproto.ReadResponse();
      // Gone (an unknown or expired file): an empty id drops it from the stack.
      resp.setId(result.id ?? "");
      if (result.props) resp.setProperties(toStruct(result.props));
      if (result.inputs) resp.setInputs(toStruct(result.inputs));
      return resp;
    }),
    update: unary(async (req) => {
      const target = resourceOf(req.getUrn());
      const resp = new provproto.UpdateResponse();
      if (req.getPreview()) return resp.setProperties(req.getNews());
      const { outs } = await target.update(req.getId(), req.getUrn(), toJs(req.getOlds()), toJs(req.getNews()));
      resp.setProperties(toStruct(outs));
      return resp;
    }),
    delete: unary(async () => {
      await plugin.delete();
      return new emptyproto.Empty();
    }),
  };
}

/** The `__proto__` keys of each check request's inputs, read from its bytes (decoding drops them: proto-keys.ts). */
const protoKeysOf = new WeakMap<object, Array<Array<string | number>>>();

/** The ResourceProvider service's definition, its check requests read for `__proto__` keys too (`news` is field 3). */
function serviceDefinition() {
  const check = provrpc.ResourceProviderService.check;
  const requestDeserialize = (bytes: Buffer) => {
    const req = check.requestDeserialize(bytes);
    const paths = protoKeyPaths(bytes, 3);
    if (paths.length > 0) protoKeysOf.set(req, paths);
    return req;
  };
  return { ...provrpc.ResourceProviderService, check: { ...check, requestDeserialize } };
}

/** The ResourceProvider service, over one StoredFilePlugin. */
function service(plugin: StoredFilePlugin, schema: string) {
  return { ...providerCalls(plugin, schema), ...resourceCalls(plugin) };
}

/**
 * Starts the provider: listens on a free loopback port and prints it, as the engine expects of
 * a plugin; serves until the engine goes away. `args` are the plugin's command-line arguments
 * (the engine's address first).
 */
export async function serve(args: readonly string[]): Promise<void> {
  const engineAddress = args.find((a) => !a.startsWith("-"));
  const plugin = new StoredFilePlugin(engineLogger(engineAddress));
  const server = new grpc.Server({ "grpc.max_receive_message_length": 400 * 1024 * 1024 });
  server.addService(serviceDefinition(), service(plugin, JSON.stringify(packageSchema())));
  const port: number = await new Promise((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err: Error | null, p: number) => (err ? reject(err) : resolve(p))),
  );
  process.stdout.write(`${port}\n`);
  // The engine closes our stdin... or kills us; either way nothing is left to flush here.
  await new Promise<void>(() => undefined);
}
