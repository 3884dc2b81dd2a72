import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { randomBytes } from "node:crypto";
import { type EngineEvent, LocalWorkspace, PulumiCommand, type Stack } from "@pulumi/pulumi/automation";
import { inject } from "vitest";
import { copyProject, offlineEngineEnv } from "../../scripts/offline-engine.mjs";
import { EMULATOR_DEFAULT_API_KEY, startEmulator, type Emulator } from "../../emulator";

export const repoRoot = path.resolve(__dirname, "../..");
export const STORED_FILE_TYPE = "pulumi-nodejs:dynamic/tuskr:StoredFile";

export interface StackContext {
  stack: Stack;
  emu: Emulator;
  /** Sets the fixture's `files` config: resource name → StoredFile args. */
  declare(files: Record<string, Record<string, unknown>>): Promise<void>;
  /** Requests the emulator received on the file routes since the last `clearRequests`. */
  fileRequests(): ReturnType<Emulator["requests"]>;
  /**
   * The step each StoredFile got in a preview/up, by resource name. (The engine's `diffs` list
   * stays empty for dynamic resources, which cannot return a detailed diff; the property names
   * are in the `--diff` output instead.)
   */
  ops(events: EngineEvent[]): Record<string, string>;
  /** Every step of each StoredFile, in order (a replace is several steps). */
  steps(events: EngineEvent[]): Record<string, string[]>;
  onEvent: (e: EngineEvent) => void;
  events: EngineEvent[];
  /**
   * The stack's state as stored: every checkpoint file of the file:// backend, concatenated.
   * (The Automation API's exportStack passes --show-secrets, so it cannot answer "is the key in
   * the state?"; the backend's own files can.)
   */
  storedState(): string;
  /** The project directory the stack runs (a temp copy with `copy: true`). */
  workDir: string;
  /** Copies the files of `steps/<step>/` over the project (needs `copy: true`). */
  applyStep(step: string): void;
  /** Runs the pulumi CLI itself on this stack (same env, same project): stdout, stderr, code. */
  cli(args: string[]): Promise<{ stdout: string; stderr: string; code: number }>;
}

function readTree(dir: string): string {
  if (!fs.existsSync(dir)) return "";
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .map((e) => (e.isDirectory() ? readTree(path.join(dir, e.name)) : fs.readFileSync(path.join(dir, e.name), "utf8")))
    .join("\n");
}

// The promise, not the emulator, is memoized: concurrent first callers must share one server.
let emulator: Promise<Emulator> | undefined;
export function sharedEmulator(): Promise<Emulator> {
  emulator ??= startEmulator({ port: 0 });
  return emulator;
}
export async function stopEmulator(): Promise<void> {
  const running = emulator;
  emulator = undefined;
  await (await running)?.close();
}

/**
 * Runs `fn` against a fresh stack of `project` with its own temp `file://` backend and Pulumi
 * home, configured for the emulator; always destroys the stack and removes it in `finally`.
 */
export async function withStack(
  project: string,
  fn: (ctx: StackContext) => Promise<void>,
  options: {
    apiKey?: string;
    config?: Record<string, string>;
    stackName?: string;
    /** Run a copy of the project (its installed node_modules linked), so steps can edit files. */
    copy?: boolean;
  } = {},
): Promise<void> {
  const emu = await sharedEmulator();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-e2e-"));
  const source = path.join(repoRoot, project);
  let workDir = source;
  if (options.copy) {
    workDir = path.join(tmp, "project");
    copyProject(source, workDir);
  }
  const pulumiDir = inject("pulumiDir");
  const envVars = offlineEngineEnv({ pulumiDir, tmp, passphrase: "e2e-passphrase", isolated: true });
  const stackName = options.stackName ?? `e2e-${randomBytes(4).toString("hex")}`;
  const pulumiCommand = await PulumiCommand.get({ root: path.dirname(pulumiDir) });
  const stack = await LocalWorkspace.createOrSelectStack(
    { stackName, workDir },
    { envVars, pulumiCommand },
  );
  const events: EngineEvent[] = [];
  const ctx: StackContext = {
    stack,
    emu,
    events,
    onEvent: (e) => events.push(e),
    storedState: () => readTree(path.join(tmp, "state")),
    workDir,
    cli: (args) =>
      new Promise((resolve) => {
        execFile(
          path.join(pulumiDir, "pulumi"),
          [...args, "--stack", stackName, "--non-interactive"],
          { cwd: workDir, env: { ...process.env, ...envVars }, maxBuffer: 64 * 1024 * 1024 },
          (error, stdout, stderr) => resolve({ stdout, stderr, code: error ? Number((error as { code?: number }).code ?? 1) : 0 }),
        );
      }),
    applyStep(step) {
      const from = path.join(workDir, "steps", step);
      for (const f of fs.readdirSync(from)) fs.copyFileSync(path.join(from, f), path.join(workDir, f));
    },
    declare: (files) => stack.setConfig("files", { value: JSON.stringify(files) }),
    fileRequests: () => emu.requests().filter((r) => r.path.startsWith("/v1/files/")),
    ops(evts) {
      return Object.fromEntries(Object.entries(ctx.steps(evts)).map(([name, steps]) => [name, steps.join(",")]));
    },
    steps(evts) {
      const out: Record<string, string[]> = {};
      for (const e of evts) {
        const m = e.resourcePreEvent?.metadata;
        if (!m || m.type !== STORED_FILE_TYPE) continue;
        (out[m.urn.split("::").pop()!] ??= []).push(m.op);
      }
      return out;
    },
  };
  try {
    await stack.setConfig("tuskr:apiKey", { value: options.apiKey ?? EMULATOR_DEFAULT_API_KEY, secret: true });
    await stack.setConfig("tuskr:baseUrl", { value: emu.url });
    for (const [k, v] of Object.entries(options.config ?? {})) await stack.setConfig(k, { value: v });
    await fn(ctx);
  } finally {
    try {
      await stack.destroy();
    } finally {
      await stack.workspace.removeStack(stackName, { force: true });
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }
}

/** Uploads fresh content to the emulator and returns its blobId. */
export async function upload(label: string, extra: { tag?: string; epochs?: number } = {}): Promise<string> {
  const emu = await sharedEmulator();
  const file = await emu.uploadFile({ content: Buffer.from(`${label} ${randomBytes(8).toString("hex")}`), filename: `${label}.txt`, ...extra });
  return file.blobId;
}

export const storedOnEmulator = async (blobId: string) => (await sharedEmulator()).files().find((f) => f.blobId === blobId)!;
