import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { type DuplicateUploadMode, type Emulator, type IdempotencyMode, startEmulator } from "../../../emulator";
import { type DoctorReport, doctor } from "../../../provider/cli/doctor";
import { KEY } from "../../helpers/emulator";
import { rewritingProxy } from "../../helpers/hostile-service";

/**
 * `pulumi-tuskr doctor` against the emulator in each of its behaviours: it measures the epoch,
 * what a second upload of stored bytes does and whether Idempotency-Key is honoured, buys no more
 * than it states, and exits 0, 1 or 2 as the service agrees with the provider's assumptions and
 * the stack's settings, contradicts them, or cannot be checked.
 */

const DAY = 86_400;
const run = promisify(execFile);
const CLI = path.resolve(__dirname, "../../../dist/provider/cli/main.js");

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

async function start(options: { epochSeconds: number; duplicateUpload: DuplicateUploadMode; idempotency: IdempotencyMode; cdnWantsKey?: boolean }) {
  emu = await startEmulator({ port: 0, ...options });
  return emu;
}

const verdicts = (report: DoctorReport) => Object.fromEntries(report.checks.map((c) => [c.id, c.verdict]));
const spent = (e: Emulator) => e.files().reduce((n, f) => n + f.uploadEpochs + f.epochsBought, 0);

describe("doctor --spend measures the service, whatever it does", () => {
  const LENGTHS = [3600, 86_000, DAY, 14 * DAY];
  const MODES: DuplicateUploadMode[] = ["existing", "purchase", "refuse"];
  const KEYS: IdempotencyMode[] = ["honour", "ignore"];
  for (const epochSeconds of LENGTHS) {
    for (const duplicateUpload of MODES) {
      for (const idempotency of KEYS) {
        it(`${epochSeconds} s epochs, duplicate upload ${duplicateUpload}, keys ${idempotency === "honour" ? "honoured" : "ignored"}`, async () => {
          const e = await start({ epochSeconds, duplicateUpload, idempotency });
          const said: string[] = [];
          const report = await doctor({ apiKey: KEY, baseUrl: e.url, spend: true, say: (l) => said.push(l) });
          expect({ epochSeconds: report.epochSeconds, duplicateUpload: report.duplicateUpload, idempotencyKeys: report.idempotencyKeys }).toEqual({
            epochSeconds,
            duplicateUpload,
            idempotencyKeys: idempotency === "honour" ? "honoured" : "ignored",
          });
          // Stated before anything was bought, and kept to: 2 uploads of 1 epoch at most, 1 renew of 1.
          expect(said[0]).toMatch(/buying at most 2 uploads of a 64-byte file for 1 epoch each and 1 renew of 1 epoch/);
          expect(e.files()).toHaveLength(1);
          expect(spent(e)).toBe(duplicateUpload === "purchase" ? 3 : 2);
          expect(e.files()[0].size).toBeLessThanOrEqual(1024);
          const asAssumed = epochSeconds === DAY && duplicateUpload !== "purchase" && idempotency === "honour";
          expect(report.exitCode).toBe(asAssumed ? 0 : 1);
          expect(report.bought).toEqual({ uploads: duplicateUpload === "purchase" ? 2 : 1, renews: 1, bytes: 64 });
          expect(report.configLines).toEqual([
            `pulumi config set tuskr:epochSeconds ${epochSeconds}`,
            `pulumi config set tuskr:idempotencyKeys ${idempotency === "honour" ? "honoured" : "ignored"}`,
          ]);
          // Every other assumption holds on the emulator.
          const others = Object.entries(verdicts(report)).filter(([id]) => !["epoch", "duplicate-upload", "idempotency-keys"].includes(id));
          expect(others.filter(([, v]) => v !== "as assumed")).toEqual([]);
        });
      }
    }
  }

  it("what the stack's settings say counts as assumed: the settings doctor printed make it exit 0", async () => {
    const e = await start({ epochSeconds: 14 * DAY, duplicateUpload: "existing", idempotency: "ignore" });
    const first = await doctor({ apiKey: KEY, baseUrl: e.url, spend: true });
    expect(first.exitCode).toBe(1);
    const second = await doctor({ apiKey: KEY, baseUrl: e.url, spend: true, settings: { epochSeconds: 14 * DAY, idempotencyKeys: "ignored" } });
    expect(second.exitCode).toBe(0);
    // A setting the service contradicts is said.
    const wrong = await doctor({ apiKey: KEY, baseUrl: e.url, spend: true, settings: { epochSeconds: DAY } });
    expect(wrong.checks.find((c) => c.id === "epoch")).toMatchObject({
      verdict: "differs",
      seen: expect.stringMatching(/1209600 s \(tuskr:epochSeconds 86400\)/),
    });
  });

  it("a gateway whose download links want the key: the url check differs, and says what the provider does then", async () => {
    const e = await start({ epochSeconds: DAY, duplicateUpload: "existing", idempotency: "honour", cdnWantsKey: true });
    const report = await doctor({ apiKey: KEY, baseUrl: e.url, spend: true });
    expect(report.checks.find((c) => c.id === "url-readable")).toMatchObject({
      verdict: "differs",
      seen: expect.stringMatching(/answered 401 without the key/),
    });
    expect(report.exitCode).toBe(1);
  });

  it("a GET without expiresAt: the GET differs; what only its expiry could tell is not measured, and the second upload counted as bought", async () => {
    const e = await start({ epochSeconds: DAY, duplicateUpload: "purchase", idempotency: "ignore" });
    const proxy = await rewritingProxy(e.url, {
      json: (method, path, _status, body) => {
        if (method !== "GET" || !/^\/v1\/files\/[^/]+$/.test(path)) return body;
        const { expiresAt: _left, ...rest } = body as Record<string, unknown>;
        return rest;
      },
    });
    try {
      const report = await doctor({ apiKey: KEY, baseUrl: proxy.url, spend: true });
      expect(verdicts(report)).toMatchObject({ "get-answer": "differs", "idempotency-keys": "not measured", "duplicate-upload": "not measured" });
      expect({ duplicateUpload: report.duplicateUpload, idempotencyKeys: report.idempotencyKeys }).toEqual({ duplicateUpload: null, idempotencyKeys: null });
      // The emulator sold the second upload: what doctor says it bought is what it did.
      expect(spent(e)).toBe(3);
      expect(report.bought).toEqual({ uploads: 2, renews: 1, bytes: 64 });
      expect(report.exitCode).toBe(1);
    } finally {
      await proxy.close();
    }
  });
});

describe("doctor without --spend", () => {
  it("makes free requests only: no upload, no PATCH, no renew; what needs a purchase is not measured", async () => {
    const e = await start({ epochSeconds: DAY, duplicateUpload: "existing", idempotency: "honour" });
    const report = await doctor({ apiKey: KEY, baseUrl: e.url });
    expect(e.requests().map((r) => r.method)).toEqual(["GET", "GET"]);
    expect(report.exitCode).toBe(0);
    expect(report).toMatchObject({ epochSeconds: null, duplicateUpload: null, idempotencyKeys: null, configLines: [] });
    expect(verdicts(report)).toMatchObject({ key: "as assumed", "missing-key": "as assumed", "error-envelope": "as assumed", epoch: "not measured" });
  });

  it("--blob-id reads a file of yours for free: the GET's shape and whether its url serves it without the key", async () => {
    const e = await start({ epochSeconds: DAY, duplicateUpload: "existing", idempotency: "honour" });
    const { blobId } = await e.uploadFile({ content: "mine", filename: "m.txt" });
    const report = await doctor({ apiKey: KEY, baseUrl: e.url, blobId });
    expect(verdicts(report)).toMatchObject({ "get-answer": "as assumed", "url-readable": "as assumed" });
    expect(e.requests().every((r) => r.method === "GET")).toBe(true);
    expect(e.files()[0]).toMatchObject({ epochsBought: 0, updateCount: 0 });
  });

  it("cannot run (exit 2, nothing bought): no key, a key refused, nothing answering", async () => {
    const e = await start({ epochSeconds: DAY, duplicateUpload: "existing", idempotency: "honour" });
    expect(await doctor({ baseUrl: e.url, spend: true })).toMatchObject({ exitCode: 2, problem: expect.stringMatching(/no API key: set TUSKR_API_KEY/) });
    expect(await doctor({ apiKey: "tsk_wrong_key_123", baseUrl: e.url, spend: true })).toMatchObject({
      exitCode: 2,
      problem: expect.stringMatching(/key is refused \(401/),
    });
    const sent = e.requests().length;
    expect(await doctor({ apiKey: `${KEY.slice(0, 6)}\u0007${KEY.slice(6)}`, baseUrl: e.url, spend: true })).toMatchObject({
      exitCode: 2,
      problem: expect.stringMatching(/^TUSKR_API_KEY holds a control character/),
    });
    expect(await doctor({ apiKey: " \n", baseUrl: e.url, spend: true })).toMatchObject({
      exitCode: 2,
      problem: expect.stringMatching(/^TUSKR_API_KEY is blank/),
    });
    expect(e.requests()).toHaveLength(sent);
    const free = net.createServer().listen(0, "127.0.0.1");
    await new Promise((r) => free.once("listening", r));
    const port = (free.address() as net.AddressInfo).port;
    await new Promise((r) => free.close(r));
    expect(await doctor({ apiKey: KEY, baseUrl: `http://127.0.0.1:${port}`, spend: true })).toMatchObject({
      exitCode: 2,
      problem: expect.stringMatching(/nothing answers/),
    });
    expect(e.files()).toEqual([]);
  });
});

describe("the command", () => {
  it("reads TUSKR_API_KEY and TUSKR_BASE_URL, prints one object with --json, the settings from --config, and exits as its report says", async () => {
    const e = await start({ epochSeconds: 3600, duplicateUpload: "refuse", idempotency: "honour" });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "doctor-"));
    const config = path.join(dir, "config.json");
    fs.writeFileSync(config, JSON.stringify({ "tuskr:epochSeconds": { value: "3600", secret: false } }));
    const env = { ...process.env, TUSKR_API_KEY: KEY, TUSKR_BASE_URL: e.url };
    const { stdout, stderr } = await run(process.execPath, [CLI, "doctor", "--spend", "--json", "--config", config], { env });
    const report = JSON.parse(stdout) as DoctorReport;
    expect(report).toMatchObject({ epochSeconds: 3600, duplicateUpload: "refuse", idempotencyKeys: "honoured", exitCode: 0 });
    expect(stderr).toMatch(/--spend: buying at most/);
    expect(stdout + stderr).not.toContain(KEY);
    // Text, and the exit code of a contradiction: no --config, so the hour contradicts the day assumed.
    const failed = await run(process.execPath, [CLI, "doctor", "--spend"], { env }).catch((err: { code: number; stdout: string }) => err);
    expect(failed).toMatchObject({ code: 1 });
    expect((failed as { stdout: string }).stdout).toMatch(/differs +an epoch lasts 86400 s .* moved expiresAt by 3600 s\n.*so: /);
    expect((failed as { stdout: string }).stdout).toMatch(/pulumi config set tuskr:epochSeconds 3600\n/);
    const noKey = await run(process.execPath, [CLI, "doctor"], { env: { ...process.env, TUSKR_API_KEY: "", TUSKR_BASE_URL: e.url } }).catch(
      (err: { code: number; stdout: string }) => err,
    );
    expect(noKey).toMatchObject({ code: 2 });
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
