#!/usr/bin/env node
// `npm run bench`: the provider's cost next to the engine's floor, measured side by side.
//
// In one run, on this machine, against the emulator (in memory, on loopback):
//   - for each N, six steps (up from empty = adopt, preview with nothing changed, up with every
//     tag changed, up with every retentionEpochs raised, refresh, destroy) on N StoredFiles, and
//     the same six on N no-op dynamic resources (the floor: same engine, backend and inputs);
//   - a folder of N files of a given size (N = 100 and 1,000; 1 KiB and 1 MiB), kept by a
//     StoredFolder and by the same number of no-op resources: create, preview with nothing
//     changed, one file edited, destroy;
//   - the same steps with 50 ms of latency injected by the emulator, next to N × latency /
//     concurrency;
//   - the requests each step sent, from the emulator's log, next to the minimum possible;
//   - checkpoint bytes per resource and the size of the serialized provider (`__provider`);
//   - the emulator alone under load from a second process (bench/load.mjs).
// Writes BENCHMARKS.md (bench/report.mjs renders it) and BENCHMARKS.json; a run with options that
// change what is measured writes them to a temp directory instead (--out/--json: there).
//
//   node bench/run.mjs                       # the full run (N = 10, 100, 500; 3, 3, 2 repetitions)
//   node bench/run.mjs --ci                  # N = 10, 1 repetition, a folder of 10 files, to a temp
//                                            # file; exit 1 if any step's requests differ from the minimum
//   --folders 100x1024,1000x1048576          # folder scenarios, N × bytes per file ("none": none)
//   --latency 50                             # ms injected on every request for the latency run (0: none)
//   node bench/run.mjs --n 500 --reps 1 --variants storedfile --profile /tmp/prof
//                                            # CPU profiles of the program and provider processes
//                                            # (summarize: node bench/profile.mjs /tmp/prof), each
//                                            # process's whole CPU and the engine's own profile
//   --split DIR                              # each process's whole CPU only, without the profiler's
//                                            # cost (the same summary)
//   --keep-checkpoints DIR                   # a copy of the checkpoint after every step
//   --parallel P                             # pass --parallel P to every pulumi op (default: none)
import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import * as zlib from "node:zlib";
import { cpuRecordingEnv, installBenchProject, isPublishedRun, offlineEngineEnv } from "../scripts/offline-engine.mjs";
import { render, summarize } from "./report.mjs";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const projectDir = path.join(repoRoot, "bench", "project");
const log = (text) => process.stderr.write(`bench: ${text}\n`);

const { values: cli } = parseArgs({
  options: {
    ci: { type: "boolean", default: false },
    n: { type: "string" },
    reps: { type: "string" },
    variants: { type: "string" },
    out: { type: "string" },
    json: { type: "string" },
    check: { type: "boolean" },
    parallel: { type: "string" },
    profile: { type: "string" },
    split: { type: "string" },
    "keep-checkpoints": { type: "string" },
    "engine-env": { type: "string", multiple: true },
    "skip-install": { type: "boolean", default: false },
    warmup: { type: "boolean", default: false },
    "no-load": { type: "boolean", default: false },
    "no-engine": { type: "boolean", default: false },
    "no-diagnostics": { type: "boolean", default: false },
    faults: { type: "string" },
    folders: { type: "string" },
    latency: { type: "string" },
  },
});

const ci = cli.ci;
const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-bench-"));
// Only the run as it is (`npm run bench`) writes BENCHMARKS.md and BENCHMARKS.json in the
// repository: a run with any option that changes what is measured (--ci, --n, --profile, …)
// writes its report to a temp directory unless told where, and says where.
const partialRun = !isPublishedRun(cli, ["skip-install", "out", "json", "keep-checkpoints", "check"]);
// Interrupted (Ctrl-C, kill): leave no stack files or temp backends behind.
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    for (const f of fs.readdirSync(projectDir)) {
      if (/^(\.bench-blobs-bench-.*\.json|Pulumi\.bench-.*\.yaml)$/.test(f)) fs.rmSync(path.join(projectDir, f), { force: true });
    }
    fs.rmSync(tmpRoot, { recursive: true, force: true });
    process.exit(130);
  });
}
const reportTmp = () => (reportTmp.dir ??= fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-bench-report-")));
const options = {
  ns: (cli.n ?? (ci ? "10" : "10,100,500")).split(",").map(Number),
  // "3" for every N, or per N: "10:3,100:3,500:2".
  // N=500 gets 2 repetitions by default: a pair of them takes ~8 minutes on 2 cores, and the
  // whole run has to stay near 30 minutes.
  reps: parseReps(cli.reps ?? (ci ? "1" : "10:3,100:3,500:2")),
  variants: (cli.variants ?? "noop,storedfile,plugin").split(","),
  out: cli.out ?? (partialRun ? path.join(reportTmp(), "BENCHMARKS.md") : path.join(repoRoot, "BENCHMARKS.md")),
  json: cli.json ?? (partialRun ? path.join(reportTmp(), "BENCHMARKS.json") : path.join(repoRoot, "BENCHMARKS.json")),
  check: cli.check ?? ci,
  parallel: cli.parallel ? Number(cli.parallel) : undefined,
  profile: cli.profile ? path.resolve(cli.profile) : undefined,
  // Each node process's whole CPU only, without the profiler's cost (bench/profile.mjs reads both).
  split: cli.split ? path.resolve(cli.split) : undefined,
  // Extra environment for every pulumi op, e.g. PULUMI_SKIP_CHECKPOINTS=true (a diagnostic).
  engineEnv: Object.fromEntries((cli["engine-env"] ?? []).map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)])),
  keepCheckpoints: cli["keep-checkpoints"] ? path.resolve(cli["keep-checkpoints"]) : undefined,
  // Off by default: installing and building just warmed the disk caches, and the variants
  // alternate which goes first.
  warmup: cli.warmup,
  load: cli["no-load"]
    ? undefined
    : ci
      ? { reps: 1, concurrency: [8], maxRequests: 1000, maxSeconds: 2 }
      : { reps: 3, concurrency: [8, 32], maxRequests: 10000, maxSeconds: 5 },
  engine: !cli["no-engine"],
  // One more pass, with the engine's intermediate checkpoint writes switched off, at these N: it
  // tells how much of each step is the file backend rewriting the whole checkpoint per resource.
  diagnostics: ci || cli["no-diagnostics"] ? [] : [10, 100, 500],
  // Folders: N files of `bytes` each, uploaded by a StoredFolder, next to the no-op floor.
  folders: parseFolders(cli.folders ?? (ci ? "10x1024" : "100x1024,1000x1024,100x1048576,1000x1048576")),
  // The latency run: every request delayed this long by the emulator, at N=100 (10 with --ci: off).
  latency: { ms: Number(cli.latency ?? (ci ? "0" : "50")), n: 100, bytes: 1024 },
};
for (const v of options.variants) if (!["noop", "storedfile", "plugin"].includes(v)) throw new Error(`unknown variant ${v}`);

function parseFolders(text) {
  if (text === "none") return [];
  return text.split(",").map((spec) => {
    const [n, bytes] = spec.split("x").map(Number);
    if (!Number.isInteger(n) || n < 1 || !Number.isInteger(bytes) || bytes < 1) throw new Error(`--folders: ${spec} is not NxBYTES`);
    return { n, bytes };
  });
}

function parseReps(text) {
  if (/^\d+$/.test(text)) return () => Number(text);
  const map = Object.fromEntries(text.split(",").map((p) => p.split(":").map(Number)));
  return (n) => map[n] ?? 1;
}

function tryGit(args) {
  try {
    return sh("git", args, { cwd: repoRoot, stdio: ["ignore", "pipe", "ignore"] });
  } catch {
    return undefined;
  }
}
const sh = (cmd, args, opts = {}) => execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], ...opts }).trim();

// ---------------------------------------------------------------------------------------------
// Install what the run needs, as on a fresh clone.
// ---------------------------------------------------------------------------------------------
const startedAt = performance.now();
const phases = {};
let phaseStart = performance.now();
const phaseDone = (name) => {
  phases[name] = Math.round(performance.now() - phaseStart);
  phaseStart = performance.now();
};

if (!fs.existsSync(path.join(repoRoot, "node_modules", ".bin", "tsc"))) {
  log("root node_modules missing: npm ci");
  execFileSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
}
log("npm run build");
execFileSync("npm", ["run", "--silent", "build"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
const pulumiDir = sh("bash", [path.join(repoRoot, "scripts", "ensure-pulumi")]);
await installBenchProject(projectDir, repoRoot, { skip: cli["skip-install"], log });
phaseDone("install");

// The Automation API of the very @pulumi/pulumi the program and the dynamic provider use.
const projectRequire = createRequire(path.join(projectDir, "package.json"));
const { LocalWorkspace, PulumiCommand } = projectRequire("@pulumi/pulumi/automation");
const { startEmulator, EMULATOR_DEFAULT_API_KEY } = await import(path.join(repoRoot, "dist", "emulator", "index.js"));

const pulumiEnv = { PULUMI_SKIP_UPDATE_CHECK: "true", PATH: `${pulumiDir}:${process.env.PATH}` };
const machine = {
  date: new Date().toISOString(),
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model ?? "unknown",
  memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
  os: `${os.type()} ${os.release()} ${os.arch()}`,
  node: process.version,
  pulumi: sh(path.join(pulumiDir, "pulumi"), ["version"], { env: { ...process.env, ...pulumiEnv } }),
  pulumiNodejsSdk: projectRequire("@pulumi/pulumi/package.json").version,
  defaultParallel: Number(
    /--parallel int32[^\n]*\(default (\d+)\)/.exec(sh(path.join(pulumiDir, "pulumi"), ["up", "--help"], { env: { ...process.env, ...pulumiEnv } }))?.[1],
  ),
  commit: tryGit(["rev-parse", "--short", "HEAD"]) ?? "unknown",
  dirty: (tryGit(["status", "--porcelain", "--", "provider", "emulator", "bench/project"]) ?? "") !== "",
  loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100),
};
log(`machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, node ${machine.node}, pulumi ${machine.pulumi}`);

// ---------------------------------------------------------------------------------------------
// CPU accounting. Wall time is the figure asked for, but this machine may be shared: so each step
// also records the CPU time of the pulumi process tree (its reaped descendants: engine, language
// host, program, provider), this process's own (the emulator), and how busy the whole machine
// was meanwhile — what is left is other people's load, reported as contention.
// ---------------------------------------------------------------------------------------------
const clockTick = 1000 / Number(sh("getconf", ["CLK_TCK"]) || 100);
function cpuSnapshot() {
  const self = process.cpuUsage();
  let childrenMs = NaN;
  let machineBusyMs = NaN;
  try {
    const fields = fs.readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
    childrenMs = (Number(fields[13]) + Number(fields[14])) * clockTick; // cutime + cstime
    const cpu = fs.readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
    machineBusyMs = (cpu.reduce((a, b) => a + b, 0) - cpu[3] - cpu[4]) * clockTick; // all but idle, iowait
  } catch {
    // Not Linux: wall time only.
  }
  return { selfMs: (self.user + self.system) / 1000, childrenMs, machineBusyMs, at: performance.now() };
}
function cpuDelta(a, b) {
  const pulumiCpuMs = b.childrenMs - a.childrenMs;
  const emulatorCpuMs = b.selfMs - a.selfMs;
  const otherCpuMs = Math.max(0, b.machineBusyMs - a.machineBusyMs - pulumiCpuMs - emulatorCpuMs);
  // Share of the machine others used while the step ran (0 = we had it to ourselves).
  const contention = otherCpuMs / ((b.at - a.at) * os.cpus().length);
  return {
    pulumiCpuMs: Math.round(pulumiCpuMs),
    emulatorCpuMs: Math.round(emulatorCpuMs),
    otherCpuMs: Math.round(otherCpuMs),
    contention: Math.round(contention * 100) / 100,
  };
}

/**
 * Before a step, waits (bounded) for a moment when others use little of the machine, so a step
 * less often starts inside someone else's burst. Gives up after `maxMs`, or when the run's
 * budget for waiting is spent; returns how long it waited.
 */
const quiet = { budgetMs: ci ? 0 : 120_000, maxMs: 10_000, threshold: 0.15, windowMs: 500 };
async function waitForQuiet() {
  const started = performance.now();
  while (quiet.budgetMs > 0) {
    const a = cpuSnapshot();
    await new Promise((r) => setTimeout(r, quiet.windowMs));
    const b = cpuSnapshot();
    if (!Number.isFinite(a.machineBusyMs) || cpuDelta(a, b).contention < quiet.threshold) break;
    const waited = performance.now() - started;
    if (waited >= quiet.maxMs || waited >= quiet.budgetMs) break;
  }
  const waited = performance.now() - started;
  quiet.budgetMs = Math.max(0, quiet.budgetMs - waited);
  return Math.round(waited);
}

// ---------------------------------------------------------------------------------------------
// The engine steps.
// ---------------------------------------------------------------------------------------------

/** The six steps; `min` is the fewest requests the service could possibly get for N files (kinds left out: 0). */
const STEPS = [
  // The files are stored for 10 epochs before they are declared: a declared end of 11 epochs
  // from the adoption lacks one, bought by one renew (the adoption's GET is the read before it).
  // The stack does not know the service's epoch yet (tuskr:epochSeconds unset): the first renew's
  // record is read once, to learn it (docs/purchases-and-expiry.md, point 4): one GET more.
  { key: "adopt", op: "up", config: { tag: "v1", epochs: 11 }, min: (n) => ({ get: n + 1, patch: n, renew: n }) },
  { key: "preview", op: "preview", min: () => ({ get: 0, patch: 0, renew: 0 }) },
  { key: "tags", op: "up", config: { tag: "v2" }, min: (n) => ({ get: 0, patch: n, renew: 0 }) },
  // Raised to 12: one epoch lacking; a purchase reads the file's expiry first (docs/purchases-and-expiry.md).
  { key: "epochs", op: "up", config: { epochs: 12 }, min: (n) => ({ get: n, patch: 0, renew: n }) },
  { key: "refresh", op: "refresh", min: (n) => ({ get: n, patch: 0, renew: 0 }) },
  { key: "destroy", op: "destroy", min: () => ({ get: 0, patch: 0, renew: 0 }) },
];

/**
 * A folder's steps. The folder declares a tag and one epoch, which the upload carries, and no
 * metadata: a new file is one upload and nothing else. The edit changes one file's content: a
 * new content, one upload (the old entry is left as it is: no request).
 */
const FOLDER_STEPS = [
  // Each upload's answer is read back before its blobId is recorded (one GET: the answer gate).
  { key: "fcreate", op: "up", config: { tag: "v1", epochs: 1 }, min: (n) => ({ upload: n, get: n }) },
  { key: "fpreview", op: "preview", min: () => ({}) },
  { key: "fedit", op: "up", edit: true, min: () => ({ upload: 1, get: 1 }) },
  { key: "fdestroy", op: "destroy", min: () => ({}) },
];
const REQUEST_KINDS = ["get", "patch", "renew", "upload"];
const fullMin = (min) => Object.fromEntries(REQUEST_KINDS.map((k) => [k, min[k] ?? 0]));

/** What the engine must report for each step, or the run is not measuring what it says. */
function engineProblems(step, changes, n, variant) {
  const c = changes ?? {};
  const want = {
    adopt: { create: n + 1 }, // + the Stack resource
    preview: { same: n + 1 },
    tags: { update: n },
    epochs: { update: n },
    destroy: { delete: n + 1 },
    fcreate: { create: n + 2 }, // + the Stack and the folder component
    fpreview: { same: n + 2 },
    // A StoredFolder's new content is a resource of its own (named after it): one created, the old
    // one deleted (no request); the floor's folder of no-op resources, named by path, replaces one.
    fedit: variant === "folder" ? { create: 1, delete: 1, same: n + 1 } : { replace: 1, same: n + 1 },
    fdestroy: { delete: n + 2 },
  }[step];
  if (!want) return [];
  return Object.entries(want)
    .filter(([k, v]) => c[k] !== v)
    .map(([k, v]) => `${step}: engine reported ${k}=${c[k] ?? 0}, expected ${v} (${JSON.stringify(c)})`);
}

/** What the emulator must hold after each StoredFolder step: every file once, as declared; the edited one a new file. */
function folderProblems(step, files, n) {
  const expected = { fcreate: n, fedit: n + 1 }[step];
  if (expected === undefined) return [];
  const ok = files.filter((f) => f.tag === "v1" && f.uploadEpochs === 1 && f.epochsBought === 0 && /^file-\d+\.bin$/.test(f.name ?? ""));
  return ok.length === expected && files.length === expected
    ? []
    : [`${step}: the emulator holds ${files.length} file(s), ${ok.length} as declared; expected ${expected}`];
}

/** What the emulator must hold after each StoredFile step. */
function emulatorProblems(step, files, blobIds) {
  const byId = new Map(files.map((f) => [f.blobId, f]));
  const want = { adopt: { tag: "v1", epochsBought: 1 }, tags: { tag: "v2", epochsBought: 1 }, epochs: { tag: "v2", epochsBought: 2 } }[step];
  if (!want) return [];
  const wrong = blobIds.filter((id, i) => {
    const f = byId.get(id);
    return !f || f.tag !== want.tag || f.epochsBought !== want.epochsBought || f.metadata?.index !== i || f.name !== `file-${i}.txt`;
  });
  return wrong.length ? [`${step}: ${wrong.length} file(s) on the emulator differ from the declaration`] : [];
}

function findCheckpoint(stateDir, stackName) {
  const stacks = path.join(stateDir, ".pulumi", "stacks");
  const walk = (dir) =>
    fs.existsSync(dir)
      ? fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]))
      : [];
  return walk(stacks).find((f) => path.basename(f) === `${stackName}.json`);
}

/**
 * Opens a fresh stack of N resources of one variant: uploads its files to the emulator, gives it
 * its own temp backend and PULUMI_HOME, sets its config. Returns what the steps need.
 */
async function openStack(emu, variant, n, rep, { warmup, extraEnv, folder }) {
  const tmp = fs.mkdtempSync(path.join(tmpRoot, `${variant}-${n}-`));
  const stateDir = path.join(tmp, "state");
  // The stack runs in bench/project itself, not in a copy with node_modules linked: the engine
  // records each resource's source position and stack trace as paths relative to the project,
  // and a linked node_modules would make every one of them (so the state) longer than a user's.
  const stackName = `bench-${variant}-${n}-${rep}-${Math.random().toString(36).slice(2, 8)}`;
  const workDir = projectDir;
  const blobsFile = `.bench-blobs-${stackName}.json`;
  const blobIds = [];
  for (let i = 0; i < (folder ? 0 : n); i++) {
    // 10 epochs: outside the provider's "expiring soon" window (3 epochs by default), whose
    // per-file warning at every diff would otherwise be measured too.
    const file = await emu.uploadFile({ content: `bench ${variant} ${n} ${rep} ${i}`, filename: `file-${i}.txt`, tag: "uploaded", epochs: 10 });
    blobIds.push(file.blobId);
  }
  fs.writeFileSync(path.join(workDir, blobsFile), JSON.stringify(blobIds));

  const envVars = {
    ...offlineEngineEnv({ pulumiDir, tmp, passphrase: "bench-passphrase", isolated: true }),
    ...options.engineEnv,
    ...extraEnv,
  };
  if (options.profile || options.split) Object.assign(envVars, cpuRecordingEnv(repoRoot, { sample: Boolean(options.profile) }));

  const ctx = { variant, n, rep, warmup, extraEnv, tmp, stateDir, stackName, workDir, blobsFile, blobIds, folder, destroyed: false };
  ctx.out = { variant, n, rep, steps: [], problems: [], ...(folder ? { bytes: folder.bytes, latencyMs: folder.latencyMs } : {}) };
  // Time the `pulumi <op>` process itself (what a user waits for at the CLI), apart from the
  // Automation API's own follow-up commands (stack output, stack history).
  const pulumiCommand = await PulumiCommand.get({ root: path.dirname(pulumiDir) });
  const run = pulumiCommand.run.bind(pulumiCommand);
  pulumiCommand.run = async (args, ...rest) => {
    // With --profile, the engine's own CPU profile too (`go tool pprof -top ENGINE.PID.cpu`).
    const profDir = ctx.stack?.workspace.envVars.BENCH_CPU_PROF_DIR;
    if (options.profile && profDir && ["up", "preview", "refresh", "destroy"].includes(args[0])) {
      fs.mkdirSync(profDir, { recursive: true });
      args = [...args, "--profiling", path.join(profDir, "engine")];
    }
    const before = cpuSnapshot();
    try {
      return await run(args, ...rest);
    } finally {
      const after = cpuSnapshot();
      if (["up", "preview", "refresh", "destroy"].includes(args[0])) {
        ctx.lastCliMs = after.at - before.at;
        ctx.lastCpu = cpuDelta(before, after);
      }
    }
  };
  ctx.stack = await LocalWorkspace.createOrSelectStack({ stackName, workDir }, { envVars, pulumiCommand });
  // The same config for both variants (the floor ignores tuskr:*), so the state carries the same.
  await ctx.stack.setAllConfig({
    "tuskr:apiKey": { value: EMULATOR_DEFAULT_API_KEY, secret: true },
    "tuskr:baseUrl": { value: emu.url },
    "bench:variant": { value: variant },
    "bench:blobsFile": { value: blobsFile },
    "bench:tag": { value: "v1" },
    "bench:epochs": { value: "0" },
    ...(folder ? { "bench:folder": { value: folder.dir } } : {}),
  });
  return ctx;
}

/** Runs one step on an open stack and records it. */
async function runStep(emu, ctx, step) {
  const { stack, variant, n, rep, warmup, extraEnv, out } = ctx;
  const opOpts = options.parallel ? { parallel: options.parallel } : {};
  if (step.config) {
    await stack.setAllConfig(Object.fromEntries(Object.entries(step.config).map(([k, v]) => [`bench:${k}`, { value: String(v) }])));
  }
  const profDir = options.profile ?? options.split;
  if (profDir) stack.workspace.envVars.BENCH_CPU_PROF_DIR = path.join(profDir, `${variant}-${n}-${rep}`, step.key);
  // The variants run the same folder in lockstep: the first to reach the edit makes it.
  if (step.edit && !ctx.folder.edited.value) {
    fs.appendFileSync(path.join(ctx.folder.dir, folderFile(0)), "edited\n");
    ctx.folder.edited.value = true;
  }
  const quietWaitMs = await waitForQuiet();
  emu.clearRequests();
  ctx.lastCliMs = NaN;
  ctx.lastCpu = {};
  const t0 = performance.now();
  let result;
  if (step.op === "up") result = await stack.up(opOpts);
  else if (step.op === "preview") result = await stack.preview(opOpts);
  else if (step.op === "refresh") result = await stack.refresh(opOpts);
  else result = await stack.destroy(opOpts);
  const apiMs = performance.now() - t0;
  if (step.op === "destroy") ctx.destroyed = true;

  const fileRequests = emu.requests().filter((r) => r.path.startsWith("/v1/"));
  const requests = { get: 0, patch: 0, renew: 0, upload: 0, other: 0 };
  for (const r of fileRequests) requests[r.route in requests ? r.route : "other"]++;
  const non2xx = fileRequests.filter((r) => r.status < 200 || r.status >= 300).length;
  const changes = step.op === "preview" ? result.changeSummary : result.summary?.resourceChanges;
  const checkpoint = findCheckpoint(ctx.stateDir, ctx.stackName);
  const checkpointBytes = checkpoint ? fs.statSync(checkpoint).size : 0;
  if (options.keepCheckpoints && checkpoint && !warmup) {
    fs.mkdirSync(options.keepCheckpoints, { recursive: true });
    fs.copyFileSync(checkpoint, path.join(options.keepCheckpoints, `${variant}-${n}-${rep}-${step.key}.json`));
  }
  const record = {
    step: step.key,
    cliMs: Math.round(ctx.lastCliMs),
    apiMs: Math.round(apiMs),
    ...ctx.lastCpu,
    quietWaitMs,
    requests,
    non2xx,
    min: fullMin(step.min(n)),
    checkpointBytes,
    changes,
  };
  out.steps.push(record);
  // What bench/profile.mjs subtracts the node processes from: the step's whole pulumi process tree.
  if (profDir) {
    const stepDir = stack.workspace.envVars.BENCH_CPU_PROF_DIR;
    fs.mkdirSync(stepDir, { recursive: true });
    fs.writeFileSync(path.join(stepDir, "step.json"), JSON.stringify({ cliMs: record.cliMs, pulumiCpuMs: record.pulumiCpuMs }));
  }
  out.problems.push(...engineProblems(step.key, changes, n, variant));
  if (variant === "storedfile" || variant === "plugin") out.problems.push(...emulatorProblems(step.key, emu.files(), ctx.blobIds));
  if (variant === "folder") out.problems.push(...folderProblems(step.key, emu.files(), n));

  if (step.key === "epochs" && checkpoint) {
    // After the last `up`, every output is there. What one resource's bytes are made of, on
    // average; the serialized provider as stored (the same text in inputs and in outputs); and
    // the checkpoint gzipped, as the file backend would keep it with PULUMI_SELF_MANAGED_STATE_GZIP.
    const text = fs.readFileSync(checkpoint);
    out.checkpointGzipBytes = zlib.gzipSync(text).length;
    const deployment = JSON.parse(text.toString("utf8")).checkpoint?.latest;
    const mine = (deployment?.resources ?? []).filter((r) => r.type?.startsWith("pulumi-nodejs:dynamic") || r.type === "tuskr:index:StoredFile");
    const size = (v) => (v === undefined ? 0 : Buffer.byteLength(JSON.stringify(v)));
    const without = (o) => Object.fromEntries(Object.entries(o ?? {}).filter(([k]) => k !== "__provider"));
    const avg = (f) => (mine.length ? Math.round(mine.reduce((sum, r) => sum + f(r), 0) / mine.length) : 0);
    out.providerBytes = Buffer.byteLength(mine[0]?.outputs?.__provider ?? "", "utf8");
    out.providerCopiesPerResource = ["inputs", "outputs"].filter((k) => mine[0]?.[k]?.__provider !== undefined).length;
    out.resourceBytes = avg(size);
    out.resourceBreakdown = {
      providerCopies: avg((r) => size(r.inputs?.__provider) + size(r.outputs?.__provider)),
      inputs: avg((r) => size(without(r.inputs))),
      outputs: avg((r) => size(without(r.outputs))),
      stackTrace: avg((r) => size(r.stackTrace) + size(r.sourcePosition)),
    };
    out.resourceBreakdown.engineRecord = out.resourceBytes - Object.values(out.resourceBreakdown).reduce((a, b) => a + b, 0);
    out.resourceType = mine[0]?.type;
  }
  log(
    `${warmup ? "(warm-up) " : ""}${Object.keys(extraEnv).length ? "(diagnostic) " : ""}${variant.padEnd(10)} N=${String(n).padEnd(3)} rep ${rep} ${step.key.padEnd(7)} ` +
      `${String(record.cliMs).padStart(6)} ms (cpu ${record.pulumiCpuMs}, emu ${record.emulatorCpuMs}, others ${Math.round(record.contention * 100)}%)` +
      `  get ${requests.get} patch ${requests.patch} renew ${requests.renew}${requests.upload ? ` upload ${requests.upload}` : ""}` +
      `${requests.other ? ` other ${requests.other}` : ""}${non2xx ? ` non-2xx ${non2xx}` : ""}  state ${checkpointBytes} B`,
  );
}

async function closeStack(ctx) {
  try {
    if (ctx.stack && !ctx.destroyed) await ctx.stack.destroy();
  } catch (e) {
    log(`cleanup destroy failed: ${e?.message ?? e}`);
  } finally {
    await ctx.stack?.workspace.removeStack(ctx.stackName, { force: true }).catch(() => undefined);
    for (const f of [ctx.blobsFile, `Pulumi.${ctx.stackName}.yaml`]) fs.rmSync(path.join(ctx.workDir, f), { force: true });
    fs.rmSync(ctx.tmp, { recursive: true, force: true });
  }
}

/**
 * One repetition: a fresh stack per variant, run in lockstep — step 1 of each, then step 2 of
 * each, … — so the variants' same step is measured minutes apart at most, and a burst of load
 * on the machine is more likely to hit both. `order` says which variant goes first.
 */
async function runRepetition(emu, order, n, rep, { warmup = false, extraEnv = {}, folder } = {}) {
  await emu.reset();
  const ctxs = [];
  try {
    if (folder) writeFolder(folder, n);
    for (const variant of order) ctxs.push(await openStack(emu, variant, n, rep, { warmup, extraEnv, folder }));
    for (const step of folder ? FOLDER_STEPS : STEPS) for (const ctx of ctxs) await runStep(emu, ctx, step);
  } finally {
    for (const ctx of ctxs) await closeStack(ctx);
  }
  return ctxs.map((c) => c.out);
}

const folderFile = (i) => `file-${String(i).padStart(4, "0")}.bin`;

/** (Re)writes a folder of N files of `bytes` each, every one a different content. */
function writeFolder(folder, n) {
  fs.rmSync(folder.dir, { recursive: true, force: true });
  fs.mkdirSync(folder.dir, { recursive: true });
  for (let i = 0; i < n; i++)
    fs.writeFileSync(path.join(folder.dir, folderFile(i)), Buffer.alloc(folder.bytes, `bench folder ${n}x${folder.bytes} file ${i}\n`));
  folder.edited = { value: false };
}

// ---------------------------------------------------------------------------------------------
// The emulator alone.
// ---------------------------------------------------------------------------------------------

function runLoad(spec) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(repoRoot, "bench", "load.mjs"), JSON.stringify(spec)], { stdio: ["ignore", "pipe", "inherit"] });
    let text = "";
    child.stdout.on("data", (d) => (text += d));
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(text)) : reject(new Error(`load generator exited with ${code}`))));
  });
}

async function loadTest(load) {
  const results = [];
  const emu = await startEmulator({ port: 0 });
  try {
    for (let rep = 0; rep < load.reps; rep++) {
      for (const concurrency of load.concurrency) {
        for (const route of ["get", "patch", "renew"]) {
          await emu.reset();
          // Renews: at most 50 one-epoch renews per file keeps every file under the 53-epoch horizon.
          const files = route === "renew" ? Math.ceil(load.maxRequests / 50) : 100;
          const blobIds = [];
          for (let i = 0; i < files; i++) blobIds.push((await emu.uploadFile({ content: `load ${rep} ${i}`, filename: `l${i}.txt` })).blobId);
          const r = await runLoad({
            url: emu.url,
            apiKey: EMULATOR_DEFAULT_API_KEY,
            route,
            blobIds,
            concurrency,
            maxRequests: load.maxRequests,
            maxSeconds: load.maxSeconds,
          });
          r.emulatorLogged = emu.requests().filter((x) => x.route === route && x.status >= 200 && x.status < 300).length;
          r.rep = rep;
          results.push(r);
          log(
            `load ${route.padEnd(5)} c=${concurrency} rep ${rep}: ${Math.round(r.rps)} req/s, p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, ${r.ok}/${r.requests} ok (${r.stoppedBy})`,
          );
        }
      }
    }
  } finally {
    await emu.close();
  }
  return results;
}

// ---------------------------------------------------------------------------------------------

const runs = [];
const folderRuns = [];
const latencyRuns = [];
const diagnostics = [];
const problems = [];
let loadResults = [];
try {
  if (options.engine) {
    // --faults (emulator fault config, JSON) exists to prove the --check gate: a retried request
    // is one more than the minimum, e.g. --faults '{"script":[{"route":"patch","fault":"5xx"}]}'.
    const emu = await startEmulator({ port: 0, faults: cli.faults ? JSON.parse(cli.faults) : undefined });
    try {
      if (options.warmup) {
        log("warm-up: one unrecorded repetition at N=10 (disk caches, first compiles)");
        await runRepetition(emu, options.variants, 10, -1, { warmup: true });
        phaseDone("warmup");
      }
      for (const n of options.ns) {
        for (let rep = 0; rep < options.reps(n); rep++) {
          // Alternate which variant goes first, so drift in the machine lands on both alike.
          const order = rep % 2 === 0 ? options.variants : [...options.variants].reverse();
          for (const r of await runRepetition(emu, order, n, rep)) {
            runs.push(r);
            problems.push(...r.problems.map((p) => `${r.variant} N=${n} rep ${rep}: ${p}`));
          }
        }
        phaseDone(`engine N=${n}`);
      }
      for (const n of options.diagnostics.filter((d) => d <= Math.max(...options.ns))) {
        for (const r of await runRepetition(
          emu,
          options.variants.filter((v) => v !== "plugin"),
          n,
          0,
          { extraEnv: { PULUMI_SKIP_CHECKPOINTS: "true" } },
        )) {
          diagnostics.push(r);
          problems.push(...r.problems.map((p) => `diagnostic ${r.variant} N=${n}: ${p}`));
        }
      }
      if (diagnostics.length) phaseDone("diagnostic (PULUMI_SKIP_CHECKPOINTS)");
      for (const { n, bytes } of options.folders) {
        const folder = { dir: path.join(tmpRoot, `folder-${n}x${bytes}`), bytes };
        for (const r of await runRepetition(emu, ["folder", "noopfolder"], n, 0, { folder })) {
          folderRuns.push(r);
          problems.push(...r.problems.map((p) => `${r.variant} N=${n}×${bytes} B: ${p}`));
        }
        fs.rmSync(folder.dir, { recursive: true, force: true });
        phaseDone(`folder N=${n}×${bytes} B`);
      }
    } finally {
      await emu.close();
    }
    if (options.latency.ms > 0) {
      // A second emulator that delays every /v1 request: how much of each step is waiting on the service.
      const { ms, n, bytes } = options.latency;
      const slow = await startEmulator({ port: 0, faults: { routes: { "*": { latencyMs: ms } } } });
      try {
        for (const r of await runRepetition(slow, ["storedfile", "noop"], n, 0)) latencyRuns.push({ ...r, latencyMs: ms });
        const folder = { dir: path.join(tmpRoot, `folder-latency-${n}x${bytes}`), bytes, latencyMs: ms };
        for (const r of await runRepetition(slow, ["folder", "noopfolder"], n, 0, { folder })) latencyRuns.push({ ...r, latencyMs: ms });
        for (const r of latencyRuns) problems.push(...r.problems.map((p) => `latency ${ms} ms ${r.variant} N=${n}: ${p}`));
      } finally {
        await slow.close();
      }
      phaseDone(`latency ${ms} ms`);
    }
  }
  if (options.load) {
    loadResults = await loadTest(options.load);
    phaseDone("emulator load");
  }
} finally {
  fs.rmSync(tmpRoot, { recursive: true, force: true, maxRetries: 2 });
}

const results = {
  generatedBy: ci ? "npm run bench:ci" : "npm run bench",
  machine,
  settings: {
    ns: options.ns,
    reps: Object.fromEntries(options.ns.map((n) => [n, options.reps(n)])),
    variants: options.variants,
    parallel: options.parallel ?? `default (${machine.defaultParallel} on this machine)`,
    engineEnv: options.engineEnv,
    typeChecked: true,
    warmup: options.warmup,
    load: options.load,
    folders: options.folders,
    latency: options.latency,
    clientConcurrency: 8,
    profiled: Boolean(options.profile || options.split),
    quietGate: { threshold: quiet.threshold, maxMsPerStep: quiet.maxMs, budgetMs: ci ? 0 : 120_000 },
  },
  wallSeconds: Math.round((performance.now() - startedAt) / 100) / 10,
  phasesMs: phases,
  problems,
  runs,
  folderRuns,
  latencyRuns,
  diagnostics: { skipCheckpoints: diagnostics },
  load: loadResults,
};
results.summary = summarize(results);

for (const f of [options.out, options.json]) fs.mkdirSync(path.dirname(f), { recursive: true });
fs.writeFileSync(options.json, `${JSON.stringify(results, null, 2)}\n`);
const findings = path.join(repoRoot, "bench", "FINDINGS.md");
fs.writeFileSync(options.out, render(results, { findings: !ci && fs.existsSync(findings) ? fs.readFileSync(findings, "utf8") : undefined }));
log(`wrote ${options.out} and ${options.json} (${results.wallSeconds} s)`);

const requestMisses = results.summary.requestMisses;
for (const p of problems) log(`PROBLEM ${p}`);
for (const m of requestMisses) log(`REQUESTS ≠ MINIMUM: ${m}`);
if (problems.length > 0) process.exit(1);
if (options.check && requestMisses.length > 0) process.exit(1);
