import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { EMULATOR_DEFAULT_API_KEY } from "../../../emulator";
import { offlineEngineEnv } from "../../../scripts/offline-engine.mjs";
import { FIXTURE, repoRoot, sharedEmulator, stopEmulator } from "../../helpers/engine";

afterAll(stopEmulator);

/**
 * An inline Automation API program (the program a function in the calling process) whose
 * `source` names a file that does not exist: the preview fails within seconds with one line
 * naming the resource and the path, reported through check. (A program that rejects an input
 * promise instead hangs an inline preview forever.) The program runs in a child process with
 * the fixture's install of pulumi-tuskr, as a user's script would.
 */
const SCRIPT = `
const pulumi = require("@pulumi/pulumi");
const { LocalWorkspace, PulumiCommand } = require("@pulumi/pulumi/automation");
const { StoredFile } = require("pulumi-tuskr");
(async () => {
  const envVars = JSON.parse(process.env.INLINE_ENV);
  const pulumiCommand = await PulumiCommand.get({ root: process.env.PULUMI_ROOT });
  const program = async () => {
    new StoredFile("bad", { source: new pulumi.asset.FileAsset("nowhere.txt"), tag: "t" });
  };
  const stack = await LocalWorkspace.createOrSelectStack(
    { stackName: "inline", projectName: "tuskr-inline", program },
    { envVars, pulumiCommand, workDir: process.env.INLINE_WORKDIR },
  );
  await stack.setConfig("tuskr:apiKey", { value: process.env.INLINE_KEY, secret: true });
  await stack.setConfig("tuskr:baseUrl", { value: process.env.INLINE_URL });
  const started = Date.now();
  try {
    await stack.preview();
    console.log("RESULT " + JSON.stringify({ ok: true, seconds: (Date.now() - started) / 1000 }));
  } catch (e) {
    console.log("RESULT " + JSON.stringify({ ok: false, seconds: (Date.now() - started) / 1000, message: String(e && e.message) }));
  }
})();
`;

describe("an inline Automation API program with a missing source", () => {
  it("fails its preview within seconds, naming the resource and the path, and sends nothing", async () => {
    const emu = await sharedEmulator();
    emu.clearRequests();
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-inline-"));
    const workDir = path.join(tmp, "work");
    fs.mkdirSync(workDir);
    const pulumiDir = inject("pulumiDir");
    const env = offlineEngineEnv({ pulumiDir, tmp, passphrase: "test-passphrase", isolated: true });
    const scriptPath = path.join(tmp, "inline-preview.cjs");
    fs.writeFileSync(scriptPath, SCRIPT);
    try {
      const out = await new Promise<string>((resolve) => {
        execFile(
          process.execPath,
          [scriptPath],
          {
            cwd: workDir,
            // Killed if it hangs: a hang is the failure this test guards against.
            timeout: 120_000,
            env: {
              ...process.env,
              ...env,
              // The fixture's install, as the user's own node_modules.
              NODE_PATH: path.join(repoRoot, FIXTURE, "node_modules"),
              INLINE_ENV: JSON.stringify(env),
              PULUMI_ROOT: path.dirname(pulumiDir),
              INLINE_WORKDIR: workDir,
              INLINE_KEY: EMULATOR_DEFAULT_API_KEY,
              INLINE_URL: emu.url,
            },
          },
          (_error, stdout, stderr) => resolve(`${stdout}\n${stderr}`),
        );
      });
      const line = out.split("\n").find((l) => l.startsWith("RESULT "));
      expect(line, `no result (the preview hung, or the script failed):\n${out.slice(-3000)}`).toBeDefined();
      const result = JSON.parse(line!.slice("RESULT ".length)) as { ok: boolean; seconds: number; message?: string };
      expect(result.ok).toBe(false);
      expect(result.message).toMatch(/StoredFile bad: source file nowhere\.txt does not exist/);
      expect(result.seconds).toBeLessThan(60);
      expect(emu.requests()).toEqual([]);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
});
