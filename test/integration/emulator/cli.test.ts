import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { EMULATOR_DEFAULT_API_KEY } from "../../../emulator";
import { getFile, request } from "../../helpers/emulator";

/** The CLI is tested as built: `npm run build` (or `npm run test:integration`) comes first. */
const CLI = path.resolve(__dirname, "../../../dist/emulator/cli.js");

beforeAll(() => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` before the CLI tests`);
});

interface Running {
  child: ChildProcess;
  line: string;
  url: string;
  stdout: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Spawns the CLI and resolves with its first stdout line (or rejects with what it printed). */
function launch(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Running> {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, TUSKR_API_KEY: "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`no line within 10 s; stdout=${stdout} stderr=${stderr}`));
    }, 10_000);
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
      const newline = stdout.indexOf("\n");
      if (newline === -1) return;
      clearTimeout(timer);
      const line = stdout.slice(0, newline);
      const url = /listening on (http:\/\/\S+)/.exec(line)?.[1] ?? "";
      resolve({ child, line, url, stdout: () => stdout, exit });
    });
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    void exit.then(({ code }) => {
      clearTimeout(timer);
      reject(Object.assign(new Error(`exited with ${code}: ${stderr}`), { code, stderr, stdout }));
    });
  });
}

/** Runs the CLI to completion. */
function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, stdout, stderr })));
}

describe("tuskr-emulator CLI", () => {
  it("prints one line with the URL and a masked key, serves requests, and stops on SIGTERM", async () => {
    const running = await launch(["--port", "0", "--in-memory"]);
    try {
      expect(running.line).toMatch(/^tuskr emulator listening on http:\/\/127\.0\.0\.1:\d+ \(data: in-memory, epoch 86400s, key tsk_…_key\)$/);
      expect(running.stdout()).not.toContain(EMULATOR_DEFAULT_API_KEY);
      const health = await request(running, "GET", "/_emulator/health", { key: null });
      expect(health.body).toMatchObject({ status: "ok", epoch: 0, epochSeconds: 86400 });
      expect((await getFile(running, "nothing")).status).toBe(404);
    } finally {
      running.child.kill("SIGTERM");
    }
    expect(await running.exit).toEqual({ code: 0, signal: null });
  });

  it("takes a data directory, keys, an epoch length and fault flags", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-cli-"));
    const running = await launch([
      "--port=0",
      "--data",
      dir,
      "--api-key",
      "tsk_test_custom_key_9876",
      "--epoch-seconds",
      "60",
      "--fault",
      "get:error5xxRate=1",
      "--seed",
      "3",
    ]);
    try {
      expect(running.line).toContain(`(data: ${dir}, epoch 60s, key tsk_…9876)`);
      expect(running.line).not.toContain("custom_key");
      expect((await request(running, "GET", "/_emulator/files", { key: "tsk_test_custom_key_9876" })).status).toBe(200);
      expect((await request(running, "GET", "/_emulator/files")).status).toBe(401); // the default key is off
      expect((await getFile(running, "x", "tsk_test_custom_key_9876")).status).toBe(503);
      expect(fs.existsSync(path.join(dir, "state.json"))).toBe(true);
    } finally {
      running.child.kill("SIGINT");
      await running.exit;
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("uses TUSKR_API_KEY when no --api-key is given", async () => {
    const running = await launch(["--port", "0", "--in-memory"], { TUSKR_API_KEY: "tsk_test_from_env_abcd" });
    try {
      expect(running.line).toContain("key tsk_…abcd");
      expect((await request(running, "GET", "/_emulator/files", { key: "tsk_test_from_env_abcd" })).status).toBe(200);
    } finally {
      running.child.kill("SIGTERM");
      await running.exit;
    }
  });

  it("prints help, and refuses unknown or conflicting flags with exit code 2", async () => {
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: tuskr-emulator");
    expect(help.stdout).toContain("--fault ROUTE:FIELD=V");

    const unknown = await run(["--bogus"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown option "--bogus"');

    const both = await run(["--in-memory", "--data", "x"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--data and --in-memory exclude each other");

    const badFault = await run(["--fault", "renew:resetRate=5"]);
    expect(badFault.code).toBe(2);
    expect(badFault.stderr).toContain("resetRate");
  });

  it("exits 1 with the reason when the state file is corrupt", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-cli-"));
    try {
      fs.writeFileSync(path.join(dir, "state.json"), "garbage");
      const result = await run(["--port", "0", "--data", dir]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("cannot load");
      expect(fs.readFileSync(path.join(dir, "state.json"), "utf8")).toBe("garbage");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
