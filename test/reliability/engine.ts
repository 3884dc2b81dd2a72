import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { LocalWorkspace, PulumiCommand, type Stack } from "@pulumi/pulumi/automation";
import { inject } from "vitest";
import { copyProject, offlineEngineEnv } from "../../scripts/offline-engine.mjs";
import type { Emulator } from "../../emulator";

/**
 * A stack of test/e2e/fixture (StoredFiles declared from the `files` config) against a given
 * emulator, for the reliability tests: its own file:// backend and Pulumi home in a temp dir,
 * the CLI at hand for what the Automation API cannot do (`stack export` without
 * --show-secrets), and a transcript of everything every run printed, failed runs included.
 */
export const repoRoot = path.resolve(__dirname, "../..");
export const FIXTURE = path.join(repoRoot, "test/e2e/fixture");
export const STORED_FILE_TYPE = "pulumi-nodejs:dynamic/tuskr:StoredFile";

export interface ReliabilityStack {
  stack: Stack;
  name: string;
  workDir: string;
  /** The backend directory (checkpoints, history, backups). */
  stateDir: string;
  /** PULUMI_HOME of this stack (workspace settings, logs). */
  homeDir: string;
  /** Everything every run printed, and every error message, in order. */
  transcript: string[];
  declare(files: Record<string, Record<string, unknown>>): Promise<void>;
  /** `pulumi up`; resolves to ok/failed with its output (a failed up does not throw). */
  up(options?: { parallel?: number }): Promise<{ ok: boolean; output: string; seconds: number }>;
  preview(): Promise<{ ok: boolean; output: string; changeSummary?: Record<string, number> }>;
  refresh(): Promise<{ ok: boolean; output: string }>;
  /** The pulumi CLI on this stack, same environment: stdout, stderr and exit code. */
  cli(args: string[]): Promise<{ stdout: string; stderr: string; code: number }>;
  /** Every file of the backend directory, concatenated. */
  storedState(): string;
  /** The StoredFile resources of the current checkpoint (via the CLI, without secrets). */
  resources(): Promise<Array<{ urn: string; outputs: Record<string, any>; inputs: Record<string, any>; initErrors?: string[] }>>;
  dispose(): Promise<void>;
}

/** Every regular file under `dir` (symlinks not followed, files over 20 MB skipped), concatenated. */
export function readTree(dir: string): string {
  if (!fs.existsSync(dir)) return "";
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .map((e) => {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) return readTree(p);
      if (!e.isFile() || fs.statSync(p).size > 20 * 1024 * 1024) return "";
      return fs.readFileSync(p, "latin1");
    })
    .join("\n");
}

export async function reliabilityStack(emu: Emulator, apiKey: string, config: Record<string, string> = {}): Promise<ReliabilityStack> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-reliability-"));
  // A copy of the fixture (its node_modules linked), so the stack's config file never lands in
  // the repository.
  const workDir = path.join(tmp, "project");
  copyProject(FIXTURE, workDir);
  const stateDir = path.join(tmp, "state");
  const pulumiDir = inject("pulumiDir");
  const envVars = offlineEngineEnv({ pulumiDir, tmp, passphrase: "reliability-passphrase", isolated: true });
  const name = `rel-${randomBytes(4).toString("hex")}`;
  const pulumiCommand = await PulumiCommand.get({ root: path.dirname(pulumiDir) });
  const stack = await LocalWorkspace.createOrSelectStack({ stackName: name, workDir }, { envVars, pulumiCommand });
  await stack.setConfig("tuskr:apiKey", { value: apiKey, secret: true });
  await stack.setConfig("tuskr:baseUrl", { value: emu.url });
  for (const [k, v] of Object.entries(config)) await stack.setConfig(k, { value: v });
  const transcript: string[] = [];
  const capture = async <T extends { stdout: string; stderr: string }>(run: () => Promise<T>) => {
    const t0 = Date.now();
    try {
      const result = await run();
      transcript.push(result.stdout, result.stderr);
      return { ok: true as const, output: `${result.stdout}\n${result.stderr}`, result, seconds: (Date.now() - t0) / 1000 };
    } catch (e) {
      const err = e as Error & { commandResult?: { stdout: string; stderr: string } };
      const output = `${String(err?.message ?? e)}\n${err?.commandResult?.stdout ?? ""}\n${err?.commandResult?.stderr ?? ""}`;
      transcript.push(output);
      return { ok: false as const, output, result: undefined, seconds: (Date.now() - t0) / 1000 };
    }
  };
  const cli: ReliabilityStack["cli"] = (args) =>
    new Promise((resolve) => {
      execFile(
        path.join(pulumiDir, "pulumi"),
        [...args, "--stack", name, "--non-interactive"],
        { cwd: workDir, env: { ...process.env, ...envVars }, maxBuffer: 256 * 1024 * 1024 },
        (error, stdout, stderr) => {
          transcript.push(stdout, stderr);
          resolve({ stdout, stderr, code: error ? Number((error as { code?: number }).code ?? 1) : 0 });
        },
      );
    });
  return {
    stack,
    name,
    workDir,
    stateDir,
    homeDir: envVars.PULUMI_HOME,
    transcript,
    declare: (files) => stack.setConfig("files", { value: JSON.stringify(files) }),
    async up(options = {}) {
      const r = await capture(() => stack.up({ parallel: options.parallel }));
      return { ok: r.ok, output: r.output, seconds: r.seconds };
    },
    async preview() {
      const r = await capture(() => stack.preview());
      return { ok: r.ok, output: r.output, changeSummary: r.result?.changeSummary as Record<string, number> | undefined };
    },
    async refresh() {
      const r = await capture(() => stack.refresh());
      return { ok: r.ok, output: r.output };
    },
    cli,
    storedState: () => readTree(stateDir),
    async resources() {
      const { stdout, code, stderr } = await cli(["stack", "export"]);
      if (code !== 0) throw new Error(`pulumi stack export failed: ${stderr}`);
      const deployment = JSON.parse(stdout).deployment;
      return (deployment.resources ?? []).filter((r: { type: string }) => r.type === STORED_FILE_TYPE);
    },
    async dispose() {
      try {
        await stack.destroy().catch(() => undefined);
        await stack.workspace.removeStack(name, { force: true }).catch(() => undefined);
      } finally {
        fs.rmSync(tmp, { recursive: true, force: true });
      }
    },
  };
}

/** Resource name of a StoredFile URN. */
export const resourceName = (urn: string): string => urn.split("::").pop()!;
