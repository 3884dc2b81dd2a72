import { execFile } from "node:child_process";
import * as path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, startEmulator } from "../../../emulator";

const run = promisify(execFile);
const repoRoot = path.resolve(__dirname, "../../..");
const packageEntry = JSON.stringify(path.join(repoRoot, "dist", "provider", "index.js"));

/** Runs `script` in a node process of its own (a fresh module cache), with the emulator's URL and key; returns what it wrote, parsed. */
async function inFreshProcess<T>(script: string, blobId: string): Promise<T> {
  const env = { ...process.env, K: EMULATOR_DEFAULT_API_KEY, U: emu.url, B: blobId };
  return JSON.parse((await run(process.execPath, ["-e", script], { env })).stdout);
}
let emu: Awaited<ReturnType<typeof startEmulator>>;

beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
});
afterAll(async () => {
  await emu.close();
});

// Every program that declares a StoredFile or StoredFolder loads the package, on every preview
// and up; only a provider that sends a request needs the HTTP client's dependencies.
it("loading pulumi-tuskr (as a program does) loads no axios; a client loads it at its first request and then works", async () => {
  const blobId = (await emu.uploadFile({ content: Buffer.from(`load test ${Math.random()}`), filename: "l.txt" })).blobId;
  const script = `
    const inAxios = () => Object.keys(require.cache).filter((p) => p.includes("/node_modules/axios/")).length;
    const { TuskrClient } = require(${packageEntry});
    const atLoad = inAxios();
    const client = new TuskrClient({ apiKey: process.env.K, baseUrl: process.env.U });
    const atConstruction = inAxios();
    client.getFile(process.env.B).then((file) => {
      process.stdout.write(JSON.stringify({ atLoad, atConstruction, atRequest: inAxios(), blobId: file.blobId }));
    });`;
  const seen = await inFreshProcess<{ atRequest: number }>(script, blobId);
  expect(seen).toEqual({ atLoad: 0, atConstruction: 0, atRequest: expect.any(Number), blobId });
  expect(seen.atRequest).toBeGreaterThan(0);
});

// Loaded at the first request, a broken install fails there: it must say so, not read as a
// request that may have been applied (retried, or an upload left "outcome unknown").
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
  const [get, upload] = await inFreshProcess<{ message: string }[]>(script, blobId);
  for (const answer of [get, upload]) {
    expect(answer).toMatchObject({ code: "CONFIG_ERROR", mayHaveBeenApplied: false });
    expect(answer.message).toContain("axios");
    expect(answer.message).toContain("nothing sent");
  }
  expect(emu.requests().length).toBe(before);
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
