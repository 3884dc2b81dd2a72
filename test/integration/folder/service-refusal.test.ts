import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as net from "node:net";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, type Emulator, startEmulator } from "../../../emulator";
import type { TuskrClientOptions } from "../../../provider/client/client";
import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { StoredFileCore } from "../../../provider/file/core";
import { StoredFolderCore } from "../../../provider/folder/core";
import { validatedInputs } from "../../../provider/folder/inputs";
import type { FolderInputs, StoredFolderState } from "../../../provider/folder/schema";
import { type HostileService, rewritingProxy } from "../../helpers/hostile-service";

/**
 * A service that refuses every request (a rate limit that does not lift, a rejected key, a 5xx
 * that outlasts the retries) costs a run one request's retry budget per request in flight, not
 * one per file: once a request is refused past its budget the client sends nothing more, and a
 * folder starts no more entries, counting them. A failure that is one file's own stops nothing.
 */

const URN = "urn:pulumi:dev::proj::tuskr:index:StoredFolder::site";
/** Entries a folder works on at once (folder/core.ts), each with one request in flight at most. */
const WORKERS = 8;
const ATTEMPTS = { maxAttempts: 3, maxRateLimitedAttempts: 4 };
const FAST: Partial<TuskrClientOptions> = { retry: { ...ATTEMPTS, minDelayMs: 1, baseDelayMs: 1, maxDelayMs: 5 } };

let emu: Emulator;
let proxy: HostileService;
let dir: string;
/** What the proxy answers a request itself; undefined: the emulator answers. */
let refuse: (method: string, path: string, body?: Buffer) => [number, unknown] | undefined | Promise<[number, unknown] | undefined>;
beforeEach(async () => {
  emu = await startEmulator({ port: 0 });
  refuse = () => undefined;
  proxy = await rewritingProxy(emu.url, { answer: (method, p, request) => refuse(method, p, request.body) });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-refusal-"));
});
afterEach(async () => {
  await proxy.close();
  await emu.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const rateLimited: [number, unknown] = [429, { error: { code: "RATE_LIMIT_EXCEEDED", message: "slow down" } }];
const uploads = () => proxy.requests.filter((r) => r.method === "POST" && r.path === "/v1/files").length;

function writeFiles(count: number, from = 0): void {
  for (let i = from; i < from + count; i++) fs.writeFileSync(path.join(dir, `f${String(i).padStart(3, "0")}.txt`), `file ${i}`);
}

function folder(apiKey = EMULATOR_DEFAULT_API_KEY, clientOptions = FAST, baseUrl = proxy.url) {
  const files = new StoredFileCore(clientOptions, () => {});
  files.configure({ get: (k: string) => ({ "tuskr:apiKey": apiKey, "tuskr:baseUrl": baseUrl })[k] } as never);
  const core = new StoredFolderCore(files, () => {});
  const inputs = (declared: Record<string, unknown>, olds: FolderInputs = {}) => {
    const checked = core.check(() => olds, validatedInputs({ path: dir, ...declared }, []), [], URN);
    expect(checked.failures).toEqual([]);
    return { inputs: checked.inputs, urn: URN, secretInputs: [] };
  };
  return { files, core, inputs };
}

type FolderFailure = Error & { properties: StoredFolderState };
const failure = (p: Promise<unknown>) =>
  p.then(
    () => expect.unreachable("the up should fail"),
    (e: FolderFailure) => e,
  );
/** Files not sent because the service refused every request: those not started, and those held back by the client. */
const notAttempted = (e: Error) => Number(/(\d+) of \d+ file\(s\) not sent, as the service refuses every request/.exec(e.message)?.[1] ?? 0);

describe("a service that refuses every request", () => {
  it("429 to every upload: the entries stored before stay recorded, the folder stops starting others and counts them; uploads stay within one budget per worker", async () => {
    writeFiles(5);
    const first = folder();
    const created = await first.core.create(first.inputs({}));
    writeFiles(43, 5);
    refuse = (method, p) => (method === "POST" && p === "/v1/files" ? rateLimited : undefined);
    const { core, inputs } = folder();
    const e = await failure(core.update(created.id, () => created.state, inputs({}, first.inputs({}).inputs)));
    // Each file its own budget would be 43 × 4 uploads.
    expect(uploads() - 5).toBeLessThanOrEqual(WORKERS * ATTEMPTS.maxRateLimitedAttempts);
    expect(e.message).toMatch(/^StoredFolder "site": \d+ of 48 file\(s\) failed: .*429 RATE_LIMIT_EXCEEDED/);
    const failed = Number(/(\d+) of 48 file\(s\) failed/.exec(e.message)?.[1]);
    expect(failed + notAttempted(e)).toBe(43);
    expect(notAttempted(e)).toBeGreaterThanOrEqual(43 - WORKERS);
    expect(e.properties.blobIds).toEqual(created.state.blobIds);
  });

  it("a key the service rejects (401): one upload per worker at most, the rest not attempted", async () => {
    writeFiles(40);
    const { core, inputs } = folder("tsk_live_rejected_key");
    const e = await failure(core.create(inputs({})));
    expect(uploads()).toBeLessThanOrEqual(WORKERS);
    expect(e.message).toMatch(/rejected the API key \(401 UNAUTHORIZED\)/);
    expect(notAttempted(e)).toBeGreaterThanOrEqual(40 - WORKERS);
  });

  it("a PATCH answered 503 past its attempts: an update of 40 entries sends one budget per worker, and the entries not started stay as recorded", async () => {
    writeFiles(40);
    const first = folder();
    const created = await first.core.create(first.inputs({ tag: "a" }));
    const { core, inputs } = folder();
    emu.setFaults({ script: [{ route: "patch", fault: "5xx", times: 10_000 }] });
    emu.clearRequests();
    const e = await failure(core.update(created.id, () => created.state, inputs({ tag: "b" }, first.inputs({ tag: "a" }).inputs)));
    expect(emu.requests().filter((r) => r.route === "patch").length).toBeLessThanOrEqual(WORKERS * ATTEMPTS.maxAttempts);
    expect(e.message).toMatch(/SERVICE_UNAVAILABLE/);
    expect(notAttempted(e)).toBeGreaterThanOrEqual(40 - WORKERS);
    // Each entry is still recorded: none was dropped for not being started.
    expect(e.properties.blobIds).toEqual(created.state.blobIds);
    // A refresh fails at the first entry that cannot be read, not after reading every other.
    emu.setFaults({ script: [{ route: "get", fault: "5xx", times: 10_000 }] });
    emu.clearRequests();
    await failure(core.read(created.id, created.state, URN));
    expect(emu.requests().filter((r) => r.route === "get").length).toBeLessThanOrEqual(WORKERS * ATTEMPTS.maxAttempts);
  });

  it("StoredFiles through one provider: those under way when one upload is refused past its budget send nothing more and say so; a later one starts anew", async () => {
    // The later files' first answers wait until the first file has failed: they are under way when it trips, whatever the machine's load.
    let firstFailed = (): void => {};
    const tripped = new Promise<void>((resolve) => {
      firstFailed = resolve;
    });
    refuse = async (_method, _path, body) => {
      if (!body?.includes("file 0")) await tripped;
      return rateLimited;
    };
    // The trip holds for 2 × 500 ms; the later files' next attempts come 500 ms after their first answer.
    const { files } = folder(EMULATOR_DEFAULT_API_KEY, { retry: { ...ATTEMPTS, minDelayMs: 500, baseDelayMs: 500, maxDelayMs: 500 } });
    const create = (i: number) => {
      const text = `file ${i}`;
      const source = { [SIG_KEY]: ASSET_SIG, text, hash: createHash("sha256").update(text).digest("hex") };
      return files.create({ inputs: { source, name: `f${i}.txt` } as never, urn: `urn:pulumi:dev::proj::tuskr:index:StoredFile::f${i}`, secretInputs: [] });
    };
    const first = failure(create(0)).finally(firstFailed);
    await vi.waitUntil(() => uploads() >= 1, { interval: 5 });
    const later = Promise.all([1, 2, 3].map((i) => failure(create(i))));
    expect((await first).message).toMatch(/429 RATE_LIMIT_EXCEEDED/);
    // Each its own budget would be 4 × 4 uploads.
    expect(uploads()).toBeLessThan(4 * ATTEMPTS.maxRateLimitedAttempts);
    for (const e of await later) expect(e.message).toMatch(/POST \/v1\/files not sent: the service refuses every request \(POST \/v1\/files failed with 429/);
    // Nothing under way any more: the next request (a later run of a long-lived process) is sent.
    refuse = () => undefined;
    await create(4);
  });
});

it("a failure that is one file's own (422 on its upload) stops nothing: the other files are stored", async () => {
  writeFiles(20);
  let served = 0;
  refuse = (method, p) =>
    method === "POST" && p === "/v1/files" && ++served === 1 ? [422, { error: { code: "VALIDATION_ERROR", message: "not this one" } }] : undefined;
  const { core, inputs } = folder();
  const e = await failure(core.create(inputs({})));
  expect(e.message).toMatch(/^StoredFolder "site": 1 of 20 file\(s\) failed: .*422 VALIDATION_ERROR: not this one$/);
  expect(notAttempted(e)).toBe(0);
  expect(Object.keys(e.properties.blobIds ?? {})).toHaveLength(19);
});

/** A loopback port where nothing listens: a connection to it is refused. */
async function deadPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("a base URL where nothing answers (a wrong tuskr:baseUrl)", () => {
  it("20 files: one message that counts all 20, says the service cannot be reached, names each file once by its path; nothing recorded", async () => {
    writeFiles(19);
    fs.writeFileSync(path.join(dir, "notes.md"), "notes");
    const { core, inputs } = folder(EMULATOR_DEFAULT_API_KEY, FAST, `http://127.0.0.1:${await deadPort()}`);
    const e = (await failure(core.create(inputs({})))) as FolderFailure & { id?: string; reasons?: string[] };
    // One reason: the engine prints "N errors occurred" for several, and counts none of the files not sent.
    expect(e.reasons).toEqual([e.message]);
    const failed = Number(/(\d+) of 20 file\(s\) failed/.exec(e.message)?.[1] ?? 0);
    const notSent = Number(/(\d+) of 20 file\(s\) not sent/.exec(e.message)?.[1] ?? 0);
    expect(failed + notSent).toBe(20);
    expect(failed).toBeGreaterThanOrEqual(1);
    expect(e.message).toMatch(/ECONNREFUSED: nothing answers at http:\/\/127\.0\.0\.1:\d+: check tuskr:baseUrl/);
    expect(e.message).toMatch(/not sent, as the service cannot be reached; the next `pulumi up` sends them$/);
    expect(e.message).not.toMatch(/refuses every request/);
    // A file is named by its path, once; not as an upload with no resource name.
    expect(e.message).not.toMatch(/upload of|StoredFile "/);
    expect(e.message).toMatch(/^StoredFolder "site": \d+ of 20 file\(s\) failed: [\w.]+(, [\w.]+)*( \(and \d+ more\))?: uploading the file failed: POST /);
    // Nothing stored: nothing for the engine to record (it would show the folder as created).
    expect(e.properties).toBeUndefined();
    expect(e.id).toBeUndefined();
  });

  it("a StoredFile's upload that fails is named by its resource, as the engine names it", async () => {
    const { files } = folder(EMULATOR_DEFAULT_API_KEY, FAST, `http://127.0.0.1:${await deadPort()}`);
    const text = "notes";
    const source = { [SIG_KEY]: ASSET_SIG, text, hash: createHash("sha256").update(text).digest("hex") };
    const e = await failure(
      files.create({ inputs: { source, name: "notes.md" } as never, urn: "urn:pulumi:dev::proj::tuskr:index:StoredFile::handbook", secretInputs: [] }),
    );
    expect(e.message).toMatch(
      /^StoredFile "handbook": uploading the file failed: POST http:\/\/127\.0\.0\.1:\d+\/v1\/files failed \(NETWORK_ERROR\): ECONNREFUSED/,
    );
  });
});
