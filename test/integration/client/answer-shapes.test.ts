import { createHash } from "node:crypto";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type DuplicateUploadMode, type Emulator, startEmulator } from "../../../emulator";
import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { STORED_FILE_TYPES, formatUrn } from "../../../provider/engine/urns";
import { KEY } from "../../helpers/emulator";
import { type HostileService, type Rewrite, rewritingProxy } from "../../helpers/hostile-service";
import { configuredProvider } from "../../helpers/provider-fixture";
import { EngineStack } from "../../helpers/provider-driver";

/**
 * Every answer shape the service's docs leave open is read: a GET without the fields the docs do
 * not promise, or in the upload's snake_case; PATCH and renew answers of any shape, empty
 * included. What cannot be read is said naming the field and `pulumi-tuskr doctor`; what an
 * upload bought is kept. Content already stored is checked through the API with the key, so a
 * gateway whose download links want the key still lets a stack take it over.
 */

const urn = (name: string) => formatUrn({ stack: "dev", project: "proj", type: STORED_FILE_TYPES.dynamic, name });
const textAsset = (text: string) => ({ [SIG_KEY]: ASSET_SIG, text, hash: createHash("sha256").update(text).digest("hex") });
type Props = Record<string, unknown>;

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  vi.restoreAllMocks();
});

async function emulator(options: { duplicateUpload?: DuplicateUploadMode } = {}): Promise<Emulator> {
  const e = await startEmulator({ port: 0, ...options });
  closers.push(() => e.close());
  return e;
}
async function proxy(e: Emulator, rewrite: Rewrite): Promise<HostileService> {
  const p = await rewritingProxy(e.url, rewrite);
  closers.push(() => p.close());
  return p;
}
function printed(): string[] {
  const lines: string[] = [];
  vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
  return lines;
}
/** A stack whose every command is a new provider process on `service`, knowing the service's day. */
const stackOn = (service: { url: string }) =>
  new EngineStack(() => configuredProvider(service, { "tuskr:epochSeconds": "86400" }, { retry: { baseDelayMs: 1, maxDelayMs: 5 } }));
const routes = (e: Emulator) => e.requests().map((r) => r.route);
const isGet = (method: string, path: string) => method === "GET" && /^\/v1\/files\/[^/]+$/.test(path);
const snake = (record: Props): Props => {
  const { blobId, mimeType, createdAt, expiresAt, ...rest } = record;
  return { ...rest, blob_id: blobId, mime_type: mimeType, created_at: createdAt, expires_at: expiresAt };
};

describe("GET answers in every shape the docs allow", () => {
  const SHAPES: Array<[string, (record: Props) => Props]> = [
    ["without size and name", ({ size: _s, name: _n, ...rest }) => rest],
    ["in the upload's snake_case", snake],
    ["without blobId (its path names it), with fields the docs never named", ({ blobId: _b, ...rest }) => ({ ...rest, owner: "someone", tags: ["x"] })],
  ];
  for (const [label, shape] of SHAPES) {
    it(`${label}: the upload is read back and recorded; later ups send only what is declared`, async () => {
      const e = await emulator();
      printed();
      const p = await proxy(e, { json: (method, path, _status, body) => (isGet(method, path) ? shape(body as Props) : body) });
      const stack = stackOn(p);
      const inputs = { source: textAsset(`shape ${label} ${Math.random()}`), name: "s.txt", tag: "a", retentionEpochs: 3, __urn: urn("s") };
      const first = await stack.up({ f: inputs });
      expect(first.steps.map((s) => [s.op, s.outcome])).toEqual([["create", "ok"]]);
      const id = stack.get("f")!.id;
      e.clearRequests();
      for (let round = 1; round <= 2; round++) await stack.up({ f: inputs }, { refresh: round === 1 });
      expect(routes(e).filter((r) => r !== "get")).toEqual([]);
      await stack.up({ f: { ...inputs, tag: "b", retentionEpochs: 4 } });
      expect(routes(e).filter((r) => r !== "get")).toEqual(["patch", "renew"]);
      expect(e.files().find((f) => f.blobId === id)).toMatchObject({ tag: "b", uploadEpochs: 3, epochsBought: 1 });
    });
  }

  for (const epochSet of [true, false]) {
    it(`a value that cannot be read is said in one line naming the field and pulumi-tuskr doctor; the upload is kept as unconfirmed, not bought again (tuskr:epochSeconds ${epochSet ? "set" : "unset"})`, async () => {
      const e = await emulator();
      printed();
      let broken = true;
      const p = await proxy(e, { json: (method, path, _status, body) => (isGet(method, path) && broken ? { ...(body as Props), expiresAt: "soon" } : body) });
      const stack = epochSet ? stackOn(p) : new EngineStack(() => configuredProvider(p, {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } }));
      const inputs = { source: textAsset(`unreadable ${Math.random()}`), name: "u.txt", retentionEpochs: 2, __urn: urn("u") };
      const [created] = (await stack.up({ f: inputs })).steps;
      expect(created.outcome).toBe("partial");
      expect(created.error).toMatch(/expiresAt: expiresAt is not a time; `pulumi-tuskr doctor` shows what this service answers/);
      expect(created.error?.split("\n")).toHaveLength(1);
      expect(stack.get("f")?.state).toMatchObject({ __unconfirmedUpload: { created: true } });
      // Read again once the service answers what it should: checked, recorded; no second upload.
      broken = false;
      await stack.up({ f: inputs });
      expect(routes(e).filter((r) => r === "upload")).toHaveLength(1);
      expect(stack.get("f")?.state).not.toHaveProperty("__unconfirmedUpload");
      expect(e.files()[0]).toMatchObject({ uploadEpochs: 2, epochsBought: 0 });
      expect(routes(e).filter((r) => r === "renew")).toEqual([]);
    });
  }

  // What every count of a file's epochs starts from: a record without it is refused, never counted on a guess.
  for (const field of ["createdAt", "expiresAt"] as const) {
    it(`a GET without ${field}, on two-week epochs with tuskr:epochSeconds unset: refused naming ${field} and pulumi-tuskr doctor, nothing bought; exact once it answers`, async () => {
      const e = await startEmulator({ port: 0, epochSeconds: 14 * 86400 });
      closers.push(() => e.close());
      printed();
      let broken = false;
      const p = await proxy(e, {
        json: (method, path, _status, body) => {
          if (!(isGet(method, path) && broken)) return body;
          const { [field]: _left, ...rest } = body as Props;
          return rest;
        },
      });
      const stack = new EngineStack(() => configuredProvider(p, {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } }));
      // Uploaded by the stack for 3 while the service answered whole, then raised to 5.
      const uploaded = { source: textAsset(`raised ${field} ${Math.random()}`), name: "r.txt", retentionEpochs: 3, __urn: urn("r") };
      expect((await stack.up({ r: uploaded })).steps.map((s) => s.outcome)).toEqual(["ok"]);
      broken = true;
      const raised = { ...uploaded, retentionEpochs: 5 };
      // Adopted with 1 epoch left, 6 declared: counted in days, its 14 "left" would buy nothing.
      const adopted = (await e.uploadFile({ content: `adopted ${field} ${Math.random()}`, filename: "a.txt", epochs: 1 })).blobId;
      const adopt = { blobId: adopted, retentionEpochs: 6, __urn: urn("a") };
      for (const declared of [{ r: raised }, { a: adopt }] as Array<Record<string, Props>>) {
        const failed = (await stack.up(declared)).steps.filter((s) => s.outcome !== "ok" && s.outcome !== "noop");
        expect(failed).toHaveLength(1);
        expect(failed[0].error).toMatch(new RegExp(`${field}: .*\`pulumi-tuskr doctor\``));
      }
      expect(routes(e).filter((r) => r === "renew")).toEqual([]);
      expect(e.files().map((f) => f.epochsBought)).toEqual([0, 0]);
      // Once the record is whole, each file ends exactly at its declared end.
      broken = false;
      const last = await stack.upUntilDone({ r: raised, a: adopt }, 3);
      expect(last.done).toBe(true);
      const ends = Object.fromEntries(e.files().map((f) => [f.blobId === adopted ? "a" : "r", f.endEpoch - f.startEpoch]));
      expect(ends).toEqual({ a: 6, r: 5 });
    });
  }
});

describe("PATCH and renew answers of any shape, empty included", () => {
  const ANSWERS: Array<[string, number, ((record: Props) => unknown) | undefined]> = [
    ["204, no body", 204, undefined],
    ["{success}", 200, () => ({ success: true })],
    ["{success, epochs}", 200, () => ({ success: true, epochs: 1 })],
    ["Tusky's extend: {expiresAt, epochsAdded, totalEpochs, cost}", 200, (r) => ({ expiresAt: r.expiresAt, epochsAdded: 1, totalEpochs: 4, cost: "0.01" })],
    ["201 with the record in snake_case", 201, snake],
    ["a body of another shape (a list)", 200, () => [{ ok: true }]],
  ];
  for (const [label, status, body] of ANSWERS) {
    it(`${label}: the change is made and recorded exactly, once`, async () => {
      const e = await emulator();
      printed();
      const rewrite: Rewrite = {
        answer: async (method, path, request) => {
          if (!(method === "PATCH" || (method === "POST" && path.endsWith("/renew")))) return undefined;
          const sent = await fetch(`${e.url}${path}`, { method, headers: request.headers, body: request.body });
          const record = (await sent.json()) as Props;
          return [status, body ? body(record) : undefined];
        },
      };
      const p = await proxy(e, rewrite);
      const stack = stackOn(p);
      const inputs = { source: textAsset(`answers ${label} ${Math.random()}`), name: "a.txt", tag: "a", retentionEpochs: 3, __urn: urn("a") };
      await stack.up({ f: inputs });
      const id = stack.get("f")!.id;
      const [step] = (await stack.up({ f: { ...inputs, tag: "b", metadata: { k: 1 }, retentionEpochs: 5 } })).steps;
      expect([step.op, step.outcome]).toEqual(["update", "ok"]);
      expect(e.files().find((f) => f.blobId === id)).toMatchObject({ tag: "b", metadata: { k: 1 }, uploadEpochs: 3, epochsBought: 2, renewCount: 1 });
      expect(stack.get("f")!.state).toMatchObject({ tag: "b", metadata: { k: 1 }, retentionEpochs: 5 });
      e.clearRequests();
      await stack.up({ f: { ...inputs, tag: "b", metadata: { k: 1 }, retentionEpochs: 5 } }, { refresh: true });
      expect(routes(e)).toEqual(["get"]);
    });
  }
});

describe("a 404 without the service's error", () => {
  it("names the blobId as a likely cause, and the base URL, and keeps the file", async () => {
    const e = await emulator();
    printed();
    const p = await proxy(e, { answer: (method, path) => (isGet(method, path) ? [404, { message: "Not Found" }] : undefined) });
    const provider = await configuredProvider(p, { "tuskr:epochSeconds": "86400" });
    const error = await provider.create({ blobId: "Xk3q9vH2s7nR0dLw1pY4bC8eF5gJ6mA2tU9zQ0oI1sE", __urn: urn("n") }).then(
      () => undefined,
      (err: Error) => err.message,
    );
    expect(error).toMatch(/the blobId "Xk3q9vH2s7nR0dLw1pY4bC8eF5gJ6mA2tU9zQ0oI1sE" may not exist, or .* may not be the service's route .*pulumi-tuskr doctor/);
  });
});

describe("a gateway whose download links want the key", () => {
  /** A CDN on another origin that serves the emulator's bytes only with a key the provider never sends there. */
  async function keyedCdn(e: Emulator): Promise<string> {
    const server = http.createServer(async (req, res) => {
      if (req.headers.authorization !== `Bearer ${KEY}`) return res.writeHead(401, { "Content-Type": "text/plain" }).end("key required");
      const sent = await fetch(`${e.url}/cdn${req.url}`, { headers: { authorization: `Bearer ${KEY}` } });
      res.writeHead(sent.status).end(Buffer.from(await sent.arrayBuffer()));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  for (const mode of ["existing", "refuse"] as const) {
    it(`content another stack stored (${mode}) is taken over on the service's record: one entry, the declared end, said once`, async () => {
      const e = await emulator({ duplicateUpload: mode });
      const lines = printed();
      const cdn = await keyedCdn(e);
      const p = await proxy(e, {
        json: (_method, _path, _status, body) =>
          JSON.parse(JSON.stringify(body).replace(/"url":"[^"]*\/cdn\/([^"]+)"/g, (_m, id: string) => `"url":"${cdn}/${id}"`)),
      });
      const texts = [`gateway a ${Math.random()}`, `gateway b ${Math.random()}`];
      for (const text of texts) await e.uploadFile({ content: text, filename: "g.txt", epochs: 2 });
      const stack = stackOn(p);
      const declared = Object.fromEntries(
        texts.map((text, i) => [`f${i}`, { source: textAsset(text), name: "g.txt", retentionEpochs: 4, __urn: urn(`g${i}`) }]),
      );
      const { steps } = await stack.up(declared);
      expect(steps.map((s) => s.outcome)).toEqual(["ok", "ok"]);
      for (const f of e.files()) expect(f.endEpoch - e.currentEpoch()).toBe(4);
      expect(lines.filter((l) => l.includes("download links want the key"))).toHaveLength(1);
      e.clearRequests();
      await stack.up(declared, { refresh: true });
      expect(routes(e).filter((r) => r !== "get")).toEqual([]);
    });
  }
});
