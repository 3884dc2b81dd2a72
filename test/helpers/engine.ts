import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { type EngineEvent, LocalWorkspace, PulumiCommand, type Stack } from "@pulumi/pulumi/automation";
import { inject } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, startEmulator, type Emulator } from "../../emulator";
import { copyProject, offlineEngineEnv } from "../../scripts/offline-engine.mjs";
import { asRun, commandOf, copyAsCloned, readmeCommands, readmeStack, setUpCount } from "./readme";
import { STORED_FILE_TYPES, urnName } from "../../provider/engine/urns";
import type { StateBackend } from "./state-backends";

/**
 * The one harness for tests that drive the real Pulumi engine (Automation API and CLI): a copy
 * of a Pulumi project (its node_modules linked) with its own temp `file://` backend (or a shared
 * one) and Pulumi home, configured for an emulator, and a transcript of everything every run
 * printed, failed runs included. `withStack` always destroys and removes the stack in `finally`.
 */
export const repoRoot = path.resolve(__dirname, "../..");
/** StoredFiles declared from the `files` stack config: each test step is a config change. */
export const FIXTURE = "test/e2e/fixture";
export const STORED_FILE_TYPE = STORED_FILE_TYPES.dynamic;
/** The passphrase examples/gitops's committed `encryptionsalt`s were made with (its README). */
export const GITOPS_PASSPHRASE = "tuskr-gitops-example";

interface Outcome {
  ok: boolean;
  output: string;
  seconds: number;
}

/** What an `up` or a `destroy` reported besides its output. */
interface Applied extends Outcome {
  /** The engine's count of resources by step (`summary.resourceChanges`); undefined when it failed. */
  changes?: Record<string, number>;
  /** The stack's outputs after it, by name (values only); empty when it failed. */
  outputs: Record<string, unknown>;
}

/** A program's run: what it printed and how it exited. */
interface Ran {
  stdout: string;
  stderr: string;
  code: number;
}

export interface EngineStack {
  stack: Stack;
  name: string;
  emu: Emulator;
  /** The copy of the project the stack runs. */
  workDir: string;
  /** The backend directory (checkpoints, history, backups); unused with a shared backend. */
  stateDir: string;
  /** PULUMI_HOME of this stack (workspace settings, logs). */
  homeDir: string;
  /** Everything every run printed, and every error message, in order. */
  transcript: string[];
  /** Sets the fixture's `files` config: resource name → StoredFile args. */
  declare(files: Record<string, Record<string, unknown>>): Promise<void>;
  /** `pulumi up`, `preview`, `refresh`, `destroy`: a failed run resolves with ok false, it does not throw. */
  up(options?: { parallel?: number }): Promise<Applied>;
  preview(): Promise<Outcome & { changeSummary?: Record<string, number> }>;
  refresh(): Promise<Outcome>;
  destroy(): Promise<Applied>;
  /** The pulumi CLI on this stack, same environment: stdout, stderr and exit code. */
  cli(args: string[]): Promise<Ran>;
  /** The stack's environment (this process's, and the CLI's and language hosts' PATH, backend, Pulumi home). */
  env: NodeJS.ProcessEnv;
  /**
   * A set-up command (`pulumi` is this stack's CLI), run in the project (or `cwd`) with the stack's
   * environment; rejects, with what it printed, when it fails.
   */
  exec(file: string, args: string[], options?: { cwd?: string }): Promise<Ran>;
  /** `exec` without the rejection: what it printed and its exit code. */
  run(file: string, args: string[], options?: { env?: Record<string, string> }): Promise<Ran>;
  /** The pulumi CLI started in a process group of its own, to be killed while it runs. */
  startCli(args: string[]): RunningCli;
  /** A command (a workflow step's script, say) started in the project in a process group of its own. */
  start(file: string, args: string[], options?: { env?: Record<string, string> }): RunningCli;
  /**
   * The stack's state as stored: every file of the backend directory, concatenated. (The
   * Automation API's exportStack passes --show-secrets, so it cannot answer "is the key in the
   * state?"; the backend's own files can.)
   */
  storedState(): string;
  /** The StoredFile resources of the current checkpoint (via the CLI, without secrets). */
  resources(): Promise<Array<{ urn: string; outputs: Record<string, any>; inputs: Record<string, any>; initErrors?: string[] }>>;
  /** Requests the emulator received on the file routes (uploads included) since the last `clearRequests`. */
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
  /** Copies the files of `steps/<step>/` over the project. */
  applyStep(step: string): void;
  /** Destroys the stack, removes it and its temp directory. */
  dispose(): Promise<void>;
  /** The README's commands, when the stack was set up by them (`StackOptions.readme`). */
  readme?: ReadmeRun;
}

/** An example's README run as written (test/helpers/readme.ts): the set-up is run; `next` runs the others. */
interface ReadmeRun {
  /** Runs the README's next command, which must be `command` (the line without its comment), in bash in the project, with what earlier lines exported. */
  next(command: string): Promise<Ran>;
  /** Its commands not run yet. */
  rest(): string[];
}

export interface StackOptions {
  /** Default: one emulator shared by the test file (`sharedEmulator`). */
  emu?: Emulator;
  /** Where the provider sends requests, when not straight to the emulator (e.g. a proxy). */
  baseUrl?: string;
  apiKey?: string;
  config?: Record<string, string>;
  stackName?: string;
  /** A shared backend (`postgres://`, `s3://`) instead of the stack's own `file://` one. */
  backend?: Pick<StateBackend, "url" | "env">;
  /** PULUMI_CONFIG_PASSPHRASE. Default "test-passphrase". */
  passphrase?: string;
  /**
   * Another runner of a stack that already is in `backend` (`stackName`): its own copy of the
   * project and Pulumi home. Its `dispose` leaves the stack to the runner that made it.
   */
  joins?: boolean;
  /**
   * Set up as the project's README says (test/helpers/readme.ts), from a copy outside the
   * repository: its commands before its first preview or up, as written, with `placeholders`
   * filled (`tsk_...` and `https://api.tuskr.dev` are the key and URL already); the stack is the
   * one they make, and `readme.next` runs the rest. `config` and `stackName` do not apply.
   */
  readme?: { placeholders?: Record<string, string> };
}

interface RunningCli {
  pid: number;
  /** What it printed so far. */
  output(): string;
  /** Settles when it exits (code, or the signal that ended it). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The pids of every live descendant of `pid`, from /proc (Linux). */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The parent pid is the 2nd field after the command, which may contain spaces: read after ")".
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      (children.get(ppid) ?? children.set(ppid, []).get(ppid)!).push(Number(entry));
    } catch {
      /* exited meanwhile */
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

/**
 * SIGKILL, as a cancelled CI job or an out-of-memory runner does: the CLI's process group and
 * every descendant (the CLI starts its language host and plugins in process groups of their own).
 */
export function killTree(pid: number): number {
  const all = [pid, ...descendants(pid)];
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    /* already gone */
  }
  for (const p of all) {
    try {
      process.kill(p, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
  return all.length;
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

// The promise, not the emulator, is memoized: concurrent first callers must share one server.
let shared: Promise<Emulator> | undefined;
export function sharedEmulator(): Promise<Emulator> {
  shared ??= startEmulator({ port: 0 });
  return shared;
}
export async function stopEmulator(): Promise<void> {
  const running = shared;
  shared = undefined;
  await (await running)?.close();
}

/** Opens a fresh stack of `project` (a path relative to the repository). Call `dispose()` when done. */
export async function openStack(project: string, options: StackOptions = {}): Promise<EngineStack> {
  const emu = options.emu ?? (await sharedEmulator());
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-engine-"));
  // A copy, so that stack config files and applied steps never land in the repository.
  const workDir = path.join(tmp, "project");
  // Set up as its README says: a copy as cloned, its packages installed by the README's commands.
  if (options.readme) copyAsCloned(path.join(repoRoot, project), workDir);
  else copyProject(path.join(repoRoot, project), workDir);
  const pulumiDir = inject("pulumiDir");
  const apiKey = options.apiKey ?? EMULATOR_DEFAULT_API_KEY;
  const baseUrl = options.baseUrl ?? emu.url;
  const envVars: Record<string, string> = {
    ...offlineEngineEnv({ pulumiDir, tmp, passphrase: options.passphrase ?? "test-passphrase", isolated: true, extraPath: [inject("languageHostsDir")] }),
    ...(options.backend ? { PULUMI_BACKEND_URL: options.backend.url, ...options.backend.env } : {}),
  };
  if (options.readme) {
    // The backend is the one the README logs in to, not one the environment names.
    delete envVars.PULUMI_BACKEND_URL;
    Object.assign(envVars, {
      // What the READMEs take from the environment: the packed package, the key and URL of a pipeline (examples/gitops).
      TUSKR_PACKAGE: inject("tarball"),
      TUSKR_API_KEY: apiKey,
      TUSKR_BASE_URL: baseUrl,
      // The user's "yes" at `pulumi up`'s prompt (a test has no terminal).
      PULUMI_SKIP_CONFIRMATIONS: "true",
      // npm's cache first (`npm ci` filled it), without its audit and funding notes.
      npm_config_prefer_offline: "true",
      npm_config_audit: "false",
      npm_config_fund: "false",
    });
  }
  const env = { ...process.env, ...envVars };
  const transcript: string[] = [];
  const capture = async <T extends { stdout: string; stderr: string }>(run: () => Promise<T>) => {
    const t0 = Date.now();
    try {
      const result = await run();
      transcript.push(result.stdout, result.stderr);
      return { ok: true, output: `${result.stdout}\n${result.stderr}`, result, seconds: (Date.now() - t0) / 1000 };
    } catch (e) {
      const err = e as Error & { commandResult?: { stdout: string; stderr: string } };
      const output = `${String(err?.message ?? e)}\n${err?.commandResult?.stdout ?? ""}\n${err?.commandResult?.stderr ?? ""}`;
      transcript.push(output);
      return { ok: false, output, result: undefined, seconds: (Date.now() - t0) / 1000 };
    }
  };
  /** Runs `file` with the stack's environment: what it printed and its exit code. */
  const ran = (file: string, args: string[], cwd = workDir, extraEnv: Record<string, string> = {}): Promise<Ran> =>
    new Promise((resolve) => {
      const options = { cwd, env: { ...env, ...extraEnv }, maxBuffer: 256 * 1024 * 1024 };
      execFile(file === "pulumi" ? path.join(pulumiDir, "pulumi") : file, args, options, (error, stdout, stderr) => {
        transcript.push(stdout, stderr);
        resolve({ stdout, stderr, code: error ? Number((error as { code?: number }).code ?? 1) : 0 });
      });
    });
  const cli: EngineStack["cli"] = (args) =>
    ran(
      "pulumi",
      // The stack flags go before a `--` (after it everything is an argument: a blobId may start with "-").
      args.includes("--")
        ? [...args.slice(0, args.indexOf("--")), "--stack", name, "--non-interactive", ...args.slice(args.indexOf("--"))]
        : [...args, "--stack", name, "--non-interactive"],
    );
  const exec: EngineStack["exec"] = async (file, args, options = {}) => {
    const result = await ran(file, args, options.cwd);
    if (result.code !== 0) throw new Error(`${file} ${args.join(" ")} failed (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
    return result;
  };

  const commands = options.readme ? readmeCommands(repoRoot, project) : [];
  let ranCommands = 0;
  const stateDir = path.join(tmp, "state");
  const placeholders = { "tsk_...": apiKey, "https://api.tuskr.dev": baseUrl, ...options.readme?.placeholders };
  // The README's exports carry over to its next lines, as in the user's shell.
  const exported = path.join(tmp, "readme.env");
  fs.writeFileSync(exported, "");
  const readme: ReadmeRun = {
    async next(command) {
      const line = commands[ranCommands];
      if (line === undefined || commandOf(line) !== command)
        throw new Error(`the README's next command is ${JSON.stringify(line)}, not ${JSON.stringify(command)}`);
      ranCommands++;
      return ran("bash", ["-c", `. "$0"\n${asRun(line, placeholders, stateDir)}\nstatus=$?\nexport -p > "$0"\nexit $status`, exported]);
    },
    rest: () => commands.slice(ranCommands),
  };
  for (const line of commands.slice(0, setUpCount(commands))) {
    const r = await readme.next(commandOf(line));
    if (r.code === 0) continue;
    // No stack to dispose of yet: what the README made so far is in the temp directory.
    fs.rmSync(tmp, { recursive: true, force: true });
    throw new Error(`README of ${project}: \`${line}\` failed (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
  const name = options.readme ? readmeStack(commands) : (options.stackName ?? `t-${randomBytes(4).toString("hex")}`);
  const pulumiCommand = await PulumiCommand.get({ root: path.dirname(pulumiDir) });
  const stack = options.readme
    ? await LocalWorkspace.selectStack({ stackName: name, workDir }, { envVars, pulumiCommand })
    : await LocalWorkspace.createOrSelectStack({ stackName: name, workDir }, { envVars, pulumiCommand });
  if (!options.readme) {
    await stack.setConfig("tuskr:apiKey", { value: apiKey, secret: true });
    await stack.setConfig("tuskr:baseUrl", { value: baseUrl });
    for (const [k, v] of Object.entries(options.config ?? {})) await stack.setConfig(k, { value: v });
  }
  const applied = (result: { summary: { resourceChanges?: Record<string, number> }; outputs?: Record<string, { value: unknown }> } | undefined) => ({
    changes: result?.summary.resourceChanges,
    outputs: Object.fromEntries(Object.entries(result?.outputs ?? {}).map(([k, v]) => [k, v.value])),
  });
  const start: EngineStack["start"] = (file, args, options = {}) => {
    let output = "";
    const child = spawn(file, args, {
      cwd: workDir,
      env: { ...env, ...options.env },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.on("data", (b: Buffer) => (output += b.toString("utf8")));
    child.stderr.on("data", (b: Buffer) => (output += b.toString("utf8")));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on("exit", (code, signal) => {
        transcript.push(output);
        resolve({ code, signal });
      }),
    );
    return { pid: child.pid!, output: () => output, exited };
  };
  const startCli: EngineStack["startCli"] = (args) => start(path.join(pulumiDir, "pulumi"), [...args, "--stack", name, "--non-interactive"]);
  const events: EngineEvent[] = [];
  const ctx: EngineStack = {
    stack,
    name,
    emu,
    workDir,
    stateDir,
    readme: options.readme ? readme : undefined,
    homeDir: envVars.PULUMI_HOME,
    transcript,
    events,
    onEvent: (e) => events.push(e),
    declare: (files) => stack.setConfig("files", { value: JSON.stringify(files) }),
    async up(options = {}) {
      const { ok, output, seconds, result } = await capture(() => stack.up({ parallel: options.parallel }));
      return { ok, output, seconds, ...applied(result) };
    },
    async preview() {
      const { ok, output, seconds, result } = await capture(() => stack.preview());
      return { ok, output, seconds, changeSummary: result?.changeSummary as Record<string, number> | undefined };
    },
    async refresh() {
      const { ok, output, seconds } = await capture(() => stack.refresh());
      return { ok, output, seconds };
    },
    async destroy() {
      const { ok, output, seconds, result } = await capture(() => stack.destroy());
      return { ok, output, seconds, ...applied(result) };
    },
    cli,
    env,
    exec,
    run: (file, args, options = {}) => ran(file, args, workDir, options.env),
    startCli,
    start,
    storedState: () => readTree(path.join(tmp, "state")),
    async resources() {
      const { stdout, code, stderr } = await cli(["stack", "export"]);
      if (code !== 0) throw new Error(`pulumi stack export failed: ${stderr}`);
      const deployment = JSON.parse(stdout).deployment;
      return (deployment.resources ?? []).filter((r: { type: string }) => r.type === STORED_FILE_TYPE);
    },
    fileRequests: () => emu.requests().filter((r) => r.path === "/v1/files" || r.path.startsWith("/v1/files/")),
    ops(evts) {
      return Object.fromEntries(Object.entries(ctx.steps(evts)).map(([n, steps]) => [n, steps.join(",")]));
    },
    steps(evts) {
      const out: Record<string, string[]> = {};
      for (const e of evts) {
        const m = e.resourcePreEvent?.metadata;
        if (!m || m.type !== STORED_FILE_TYPE) continue;
        const name = resourceName(m.urn);
        out[name] = [...(out[name] ?? []), m.op];
      }
      return out;
    },
    applyStep(step) {
      const from = path.join(workDir, "steps", step);
      for (const f of fs.readdirSync(from)) fs.copyFileSync(path.join(from, f), path.join(workDir, f));
    },
    async dispose() {
      if (options.joins) return fs.rmSync(tmp, { recursive: true, force: true });
      try {
        await stack.destroy();
      } finally {
        await stack.workspace.removeStack(name, { force: true }).catch(() => undefined);
        fs.rmSync(tmp, { recursive: true, force: true });
      }
    },
  };
  return ctx;
}

/** Runs `fn` against a fresh stack of `project`; always destroys and removes it in `finally`. */
export async function withStack(project: string, fn: (ctx: EngineStack) => Promise<void>, options: StackOptions = {}): Promise<void> {
  const ctx = await openStack(project, options);
  try {
    await fn(ctx);
  } catch (e) {
    // The test's own failure is the one to report, not a clean-up that failed because of it.
    await ctx.dispose().catch((cleanup: unknown) => process.stderr.write(`withStack: clean-up after a failure also failed: ${String(cleanup)}\n`));
    throw e;
  }
  await ctx.dispose();
}

/**
 * What a story's step runs on its stack: an Automation API command, the CLI with these arguments,
 * or the README's next command (`StackOptions.readme`), named without its comment.
 */
type StepCommand = "preview" | "up" | "destroy" | { cli: string[] } | { readme: string };

/** What a step's command did: its exit code and output, and what the engine reported. */
export interface StepResult {
  code: number;
  /** stdout, then stderr. */
  output: string;
  /** A CLI command's stdout alone: what it printed for the user to copy (`pulumi import`'s code). */
  stdout?: string;
  /** The engine's count of resources by step (an `up`'s and a `destroy`'s `resourceChanges`, a preview's `changeSummary`). */
  changes?: Record<string, number>;
  /** The stack's outputs after an `up`, by name. */
  outputs: Record<string, unknown>;
}

/** One step of a story told through the engine: a change, a command, and what must hold after it. */
export interface EngineStep {
  /** What the step is: named when it fails. */
  name: string;
  /** A change before the command: a user's edit of the program, say. */
  before?: () => void | Promise<void>;
  command: StepCommand;
  /** What must hold; the emulator's requests are the command's alone (cleared after `before`). */
  expect: (result: StepResult) => void | Promise<void>;
  /** Done once `expect` held: an edit undone. */
  after?: () => void | Promise<void>;
}

async function runCommand(s: EngineStack, command: StepCommand): Promise<StepResult> {
  if (typeof command === "object" && "readme" in command) {
    if (!s.readme) throw new Error("the stack was not set up by its README");
    const { stdout, stderr, code } = await s.readme.next(command.readme);
    if (code !== 0 || !/^pulumi (up|destroy)\b/.test(command.readme)) return { code, output: stdout + stderr, stdout, outputs: {} };
    // What the CLI's up or destroy did, as the stack's history and outputs keep it.
    const [last] = JSON.parse((await s.cli(["stack", "history", "--json", "--page-size", "1"])).stdout) as Array<{ resourceChanges?: Record<string, number> }>;
    const outputs = JSON.parse((await s.cli(["stack", "output", "--json", "--show-secrets"])).stdout) as Record<string, unknown>;
    return { code, output: stdout + stderr, stdout, changes: last?.resourceChanges, outputs };
  }
  if (typeof command === "object") {
    const { stdout, stderr, code } = await s.cli(command.cli);
    return { code, output: stdout + stderr, stdout, outputs: {} };
  }
  // The Automation API's commands: one that fails fails its step, as the API throws.
  const result =
    command === "preview"
      ? await s.preview().then((r) => ({ ...r, changes: r.changeSummary, outputs: {} }))
      : command === "up"
        ? await s.up()
        : await s.destroy();
  if (!result.ok) throw new Error(`pulumi ${command} failed:\n${result.output}`);
  return { code: 0, output: result.output, changes: result.changes, outputs: result.outputs };
}

/** Runs the README's next command on `s` (`StackOptions.readme`): what it printed and, for an up or a destroy, what the engine did. */
export const readmeCommand = (s: EngineStack, command: string): Promise<StepResult> => runCommand(s, { readme: command });

/** Runs a story's steps in order on `s`; a failure names its step. */
export async function runSteps(s: EngineStack, steps: readonly EngineStep[]): Promise<void> {
  for (const step of steps) {
    try {
      await step.before?.();
      s.emu.clearRequests();
      await step.expect(await runCommand(s, step.command));
      await step.after?.();
    } catch (e) {
      if (e instanceof Error) e.message = `step "${step.name}": ${e.message}`;
      throw e;
    }
  }
}

/** The code `pulumi import` printed (its stdout) after its "Please copy the following code…" paragraph. */
export function importedCode(stdout: string): string {
  const at = stdout.indexOf("Please copy the following code");
  const start = at < 0 ? -1 : stdout.indexOf("\n\n", at);
  if (start < 0) throw new Error(`pulumi import printed no code:\n${stdout}`);
  return stdout.slice(start + 2);
}

/** Uploads fresh content to the shared emulator and returns its blobId. */
export async function upload(label: string, extra: { tag?: string; epochs?: number } = {}): Promise<string> {
  const emu = await sharedEmulator();
  const file = await emu.uploadFile({ content: Buffer.from(`${label} ${randomBytes(8).toString("hex")}`), filename: `${label}.txt`, ...extra });
  return file.blobId;
}

/** The bytes the emulator serves for a blob (its CDN route). */
export async function blobBytes(emu: Emulator, blobId: string): Promise<Buffer> {
  const res = await fetch(`${emu.url}/cdn/${blobId}`, { headers: { Authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}` } });
  if (res.status !== 200) throw new Error(`GET /cdn/${blobId}: ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

export const storedOnEmulator = async (blobId: string) => (await sharedEmulator()).files().find((f) => f.blobId === blobId)!;

/** Resource name of a URN. */
export const resourceName = (urn: string): string => urnName(urn);

/** Whether the stack's recorded state of the file `blobId` holds the epoch's length the stack learnt. */
export async function stateKnowsEpoch(s: EngineStack, blobId: string): Promise<boolean> {
  const { stdout } = await s.cli(["stack", "export"]);
  const resources = JSON.parse(stdout).deployment.resources as Array<{ outputs?: Record<string, unknown> }>;
  return typeof resources.find((r) => r.outputs?.blobId === blobId)?.outputs?.__epochMsSeen === "number";
}

/**
 * The renews' epochs an `up` sends for a file lacking `lack` epochs. A state written in parallel
 * with the purchase that learnt the epoch may not hold it; if that file's update then runs before
 * another file's state is read, the up learns it again: 1 epoch read back, then the rest (a
 * request more, never an epoch more). Otherwise one renew of the whole lack.
 */
export function renewsForLack(lack: number, knewEpoch: boolean, sent: number): number[] {
  return knewEpoch || sent === 1 ? [lack] : [1, lack - 1];
}
