import { execFile } from "node:child_process";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, startEmulator } from "../../../emulator";

const run = promisify(execFile);
const repoRoot = path.resolve(__dirname, "../../..");
const packageEntry = JSON.stringify(path.join(repoRoot, "dist", "provider", "index.js"));

/** The variables that name a proxy (any case), which the tests set themselves. */
const PROXY_VARIABLE = /^(npm_config_)?(https?_|all_)?proxy$/i;
/** This process's environment without proxy variables, plus `extra`. */
const envWith = (extra: Record<string, string>) => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !PROXY_VARIABLE.test(name) && !/^no_proxy$/i.test(name))),
  ...extra,
});

/**
 * Runs `script` in a node process of its own (a fresh module cache), with the emulator's URL and key
 * and no proxy unless `env` names one; returns what it wrote, parsed.
 */
async function inFreshProcess<T>(script: string, blobId: string, env: Record<string, string> = {}): Promise<T> {
  return JSON.parse((await run(process.execPath, ["-e", script], { env: envWith({ K: EMULATOR_DEFAULT_API_KEY, U: emu.url, B: blobId, ...env }) })).stdout);
}

/** A loopback forward proxy to plain-HTTP targets, counting the requests it carried. */
async function forwardProxy(): Promise<{ url: string; carried: string[]; close(): Promise<void> }> {
  const carried: string[] = [];
  const server = http.createServer((req, res) => {
    carried.push(`${req.method} ${req.url}`);
    const upstream = http.request(req.url ?? "", { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, carried, close: () => new Promise((ok) => server.close(() => ok())) };
}
let emu: Awaited<ReturnType<typeof startEmulator>>;

beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
});
afterAll(async () => {
  await emu.close();
});

// Every program that declares a StoredFile or StoredFolder loads the package, on every preview
// and up; only a provider that sends through a proxy needs axios, which costs ~90 ms to load.
const inAxiosScript = `
    const inAxios = () => Object.keys(require.cache).filter((p) => p.includes("/node_modules/axios/")).length;
    const { TuskrClient } = require(${packageEntry});
    const atLoad = inAxios();
    const client = new TuskrClient({ apiKey: process.env.K, baseUrl: process.env.U });
    const atConstruction = inAxios();
    client.getFile(process.env.B).then((file) => {
      process.stdout.write(JSON.stringify({ atLoad, atConstruction, atRequest: inAxios(), blobId: file.blobId }));
    });`;

it("loading pulumi-tuskr loads no axios, nor does a client that sends without a proxy", async () => {
  const blobId = (await emu.uploadFile({ content: Buffer.from(`load test ${Math.random()}`), filename: "l.txt" })).blobId;
  expect(await inFreshProcess(inAxiosScript, blobId)).toEqual({ atLoad: 0, atConstruction: 0, atRequest: 0, blobId });
});

// HTTP_PROXY, HTTPS_PROXY and NO_PROXY are honoured as axios honours them: requests go through it
// whenever one names a proxy for the service's scheme.
it("with HTTP_PROXY set, a client loads axios at its first request and sends through the proxy, unless NO_PROXY names the host", async () => {
  const blobId = (await emu.uploadFile({ content: Buffer.from(`proxy test ${Math.random()}`), filename: "p.txt" })).blobId;
  const proxy = await forwardProxy();
  try {
    const through = await inFreshProcess<{ atRequest: number }>(inAxiosScript, blobId, { HTTP_PROXY: proxy.url });
    expect(through).toMatchObject({ atLoad: 0, atConstruction: 0, blobId });
    expect(through.atRequest).toBeGreaterThan(0);
    expect(proxy.carried).toEqual([`GET ${emu.url}/v1/files/${blobId}`]);
    const lower = await inFreshProcess(inAxiosScript, blobId, { http_proxy: proxy.url });
    expect(lower).toMatchObject({ blobId });
    expect(proxy.carried).toHaveLength(2);
    const bypassed = await inFreshProcess(inAxiosScript, blobId, { HTTP_PROXY: proxy.url, NO_PROXY: "127.0.0.1" });
    expect(bypassed).toMatchObject({ blobId });
    expect(proxy.carried).toHaveLength(2);
  } finally {
    await proxy.close();
  }
});

// Loaded at the first request through a proxy, a broken install fails there: it must say so, not
// read as a request that may have been applied (retried, or an upload left "outcome unknown").
it("a client whose HTTP library cannot be loaded fails as a configuration error, having sent nothing", async () => {
  const blobId = (await emu.uploadFile({ content: Buffer.from(`broken install ${Math.random()}`), filename: "b.txt" })).blobId;
  const before = emu.requests().length;
  const file = path.join(repoRoot, "package.json");
  const script = `
    const Module = require("node:module");
    const resolve = Module._resolveFilename;
    Module._resolveFilename = function (request, ...rest) {
      if (request === "axios") throw Object.assign(new Error("Cannot find module 'axios'"), { code: "MODULE_NOT_FOUND" });
      return resolve.call(this, request, ...rest);
    };
    const { TuskrClient } = require(${packageEntry});
    const client = new TuskrClient({ apiKey: process.env.K, baseUrl: process.env.U, retry: { minDelayMs: 1, maxDelayMs: 1 } });
    const seen = (e) => ({ code: e.code, mayHaveBeenApplied: e.mayHaveBeenApplied, message: e.message });
    Promise.all([
      client.getFile(process.env.B).then(() => "sent", seen),
      client.uploadFile({ path: ${JSON.stringify(file)}, filename: "p.json" }, {}, { idempotencyKey: "k" }).then(() => "sent", seen),
    ]).then((r) => process.stdout.write(JSON.stringify(r)));`;
  const [get, upload] = await inFreshProcess<{ message: string }[]>(script, blobId, { HTTP_PROXY: "http://127.0.0.1:9" });
  for (const answer of [get, upload]) {
    expect(answer).toMatchObject({ code: "CONFIG_ERROR", mayHaveBeenApplied: false });
    expect(answer.message).toContain("axios");
    expect(answer.message).toContain("nothing sent");
  }
  expect(emu.requests().length).toBe(before);
  // Without a proxy the same broken install sends: Node's own client needs no axios.
  expect(await inFreshProcess(script, blobId)).toEqual(["sent", "sent"]);
});

// The plugin is started by the engine for every preview, up and refresh of a stack that uses it:
// it speaks the protocol with the SDK's generated modules and needs nothing else of the SDK.
// Loading the SDK whole (its Automation API, closure serializer, TypeScript) cost a refresh of
// 500 files about 0.4 s of the plugin's start.
it("the provider plugin loads the SDK's protocol modules only, not @pulumi/pulumi's runtime", async () => {
  const server = JSON.stringify(path.join(repoRoot, "dist", "provider", "plugin", "server.js"));
  const script = `
    require(${server});
    const sdk = Object.keys(require.cache).filter((p) => p.includes("/node_modules/@pulumi/pulumi/"));
    process.stdout.write(JSON.stringify(sdk.map((p) => p.split("/node_modules/@pulumi/pulumi/")[1])));`;
  const loaded = await inFreshProcess<string[]>(script, "");
  // Found where this test looks (else it would pass having seen nothing): the protocol's modules.
  expect(loaded).toContain("proto/provider_pb.js");
  expect(loaded.filter((p) => !p.startsWith("proto/") && p !== "package.json")).toEqual([]);
});
