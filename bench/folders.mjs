#!/usr/bin/env node
// `npm run bench:folders`: StoredFolder as one resource (`oneResource: true`, the same core as the
// plugin's tuskr:index:StoredFolder) at scale, in one run, next to what bounds it:
//   - for each scenario (default 10,000, 30,000 and 100,000 × 1 KiB, and 1,000 × 1 MiB): `up`
//     from empty, `preview` with nothing changed, one file edited, one file added, `destroy` —
//     every request counted (the emulator's counts, not its bounded log) against the minimum; the
//     provider's peak RSS in each step; the checkpoint's bytes after each step that writes it;
//   - the same uploads sent by a plain script (bench/plain-upload.mjs: fetch + FormData, the same
//     concurrency, the same emulator, a process of its own): what the first `up` is judged against;
//     and by the same script reading each upload back (a GET), as the provider's gate does, by
//     fetch and by Node's bare HTTP client (a floor of what those requests cost);
//   - the preview of the same program over an empty folder: the floor of an unchanged preview;
//     and how long hashing the folder takes (the part of that preview that grows with the files);
//   - today's default StoredFolder (one StoredFile per content) at 1,000 × 1 KiB, step by step,
//     next to the one resource through either front door: the TypeScript dynamic resource and the
//     provider plugin's tuskr:index:StoredFolder (what YAML, Python, Go and .NET programs use).
// Writes BENCHMARKS-folders.json and the "Folders" section of BENCHMARKS.md (bench/report.mjs); a
// run with options that change what is measured writes its JSON to a temp file instead (or --out).
//
//   node bench/folders.mjs                         # the full run
//   node bench/folders.mjs --ci                    # 20 × 1 KiB, one-resource folder only, to a temp
//                                                  # file; exit 1 if any step's requests differ from the minimum
//   --scenarios 10000x1024,1000x1048576 --compare 1000   (--compare 0: no per-content comparison)
//   --preview-reps 3                               # the unchanged preview and the empty folder's, each
//                                                  # run this many times: the median is reported, with each sample
//   --change-reps 3                                # the edit and the add, each this many times, a file of
//                                                  # its own each time (default: as --preview-reps)
//   --first-up-reps 3                              # the first `up` and the plain script, run in turn this many
//                                                  # times (each `up` on a fresh stack): the medians are reported
//   --profile DIR                                  # CPU profiles of the program and provider per step
//                                                  # (summarize: node bench/profile.mjs DIR/<step>), and
//                                                  # the engine's (DIR/<step>/engine.*: go tool pprof)
//   --files-per-part F                             # the folder declared with parts = ceil(N / F), at
//                                                  # most 64 (default: what docs/stored-folder.md advises)
import { execFile, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs, promisify } from "node:util";
import { cpuRecordingEnv, installBenchProject, isPublishedRun, offlineEngineEnv } from "../scripts/offline-engine.mjs";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const projectDir = path.join(repoRoot, "bench", "project");
const log = (text) => process.stderr.write(`bench:folders: ${text}\n`);
const { values: cli } = parseArgs({
  options: {
    ci: { type: "boolean", default: false },
    scenarios: { type: "string" },
    compare: { type: "string" },
    out: { type: "string" },
    profile: { type: "string" },
    "preview-reps": { type: "string" },
    "change-reps": { type: "string" },
    "first-up-reps": { type: "string" },
    "files-per-part": { type: "string" },
    "skip-install": { type: "boolean", default: false },
  },
});
const ci = cli.ci;
const scenarios = (cli.scenarios ?? (ci ? "20x1024" : "10000x1024,30000x1024,100000x1024,1000x1048576")).split(",").map((s) => {
  const [n, bytes] = s.split("x").map(Number);
  if (!Number.isInteger(n) || n < 1 || !Number.isInteger(bytes) || bytes < 1) throw new Error(`--scenarios: ${s} is not NxBYTES`);
  return { n, bytes };
});
const compareN = Number(cli.compare ?? (ci ? 0 : 1000));
const filesPerPartSaid = cli["files-per-part"] === undefined ? undefined : Number(cli["files-per-part"]);
if (filesPerPartSaid !== undefined && !(Number.isInteger(filesPerPartSaid) && filesPerPartSaid >= 1)) {
  throw new Error(`--files-per-part: ${cli["files-per-part"]} is not a whole number of files`);
}
/** Previews are short and the machine's noise is not: each of the two compared is run this many times, and the median taken. */
const previewReps = Number(cli["preview-reps"] ?? (ci ? 1 : 3));
if (!Number.isInteger(previewReps) || previewReps < 1) throw new Error(`--preview-reps: ${cli["preview-reps"]} is not a count`);
/** An edit or an add is as noisy as a preview, and its ratio is taken against the preview's median: each is the median of this many, a file of its own each time. */
const changeReps = Number(cli["change-reps"] ?? previewReps);
if (!Number.isInteger(changeReps) || changeReps < 1) throw new Error(`--change-reps: ${cli["change-reps"]} is not a count`);
/**
 * The first `up` against the plain script, as noisy as any step on a shared machine: the two run in
 * turn this many times, each `up` on a stack of its own, so each pair meets the same machine.
 */
const firstUpReps = Number(cli["first-up-reps"] ?? (ci ? 1 : 3));
if (!Number.isInteger(firstUpReps) || firstUpReps < 1) throw new Error(`--first-up-reps: ${cli["first-up-reps"]} is not a count`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

const sh = (cmd, args, opts = {}) => execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], ...opts }).trim();
log("npm run build");
execFileSync("npm", ["run", "--silent", "build"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
const pulumiDir = sh("bash", [path.join(repoRoot, "scripts", "ensure-pulumi")]);
await installBenchProject(projectDir, repoRoot, { skip: cli["skip-install"], log });
const requireFromProject = createRequire(path.join(projectDir, "package.json"));
const { LocalWorkspace, PulumiCommand } = requireFromProject("@pulumi/pulumi/automation");
const { startEmulator, EMULATOR_DEFAULT_API_KEY } = await import(path.join(repoRoot, "dist", "emulator", "index.js"));
const { byContent, folderFiles } = createRequire(import.meta.url)(path.join(repoRoot, "dist", "provider", "folder", "walk.js"));
const { FILES_PER_PART, MAX_PARTS } = createRequire(import.meta.url)(path.join(repoRoot, "dist", "provider", "folder", "parts.js"));
/** The provider client's default bound on requests in flight: the plain script uses the same. */
const { DEFAULT_MAX_CONCURRENCY: CONCURRENCY } = createRequire(import.meta.url)(path.join(repoRoot, "dist", "provider", "client", "client.js"));
/** The parts a folder of n files is declared with: as docs/stored-folder.md advises, unless --files-per-part says. */
const partsFor = (n) => Math.min(MAX_PARTS, Math.max(1, Math.ceil(n / (filesPerPartSaid ?? FILES_PER_PART))));
const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-bench-folders-"));

/**
 * The peak RSS (VmHWM) of every provider process of the bench's project alive while `run` runs
 * (dynamic provider or the plugin's run-plugin), polled: others' on a shared machine are not ours.
 */
async function withProviderPeak(run) {
  let peakKiB = 0;
  const poll = () => {
    for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
      try {
        const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
        if (!cmd.includes(projectDir) || (!cmd.includes("dynamic-provider") && !cmd.includes("run-plugin"))) continue;
        const hwm = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
        if (hwm) peakKiB = Math.max(peakKiB, Number(hwm[1]));
      } catch {
        // gone meanwhile
      }
    }
  };
  const timer = setInterval(poll, 100);
  try {
    const result = await run();
    return { result, peakMiB: peakKiB / 1024 };
  } finally {
    clearInterval(timer);
  }
}

const fileName = (i) => `file-${String(i).padStart(5, "0")}.bin`;
function writeFolder(dir, n, bytes) {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  for (let i = 0; i < n; i++) fs.writeFileSync(path.join(dir, fileName(i)), Buffer.alloc(bytes, `bench folder ${n}x${bytes} file ${i}\n`));
}

const KINDS = ["get", "patch", "renew", "upload"];
/**
 * What the emulator answered since its counts were cleared, every request (its log keeps the latest
 * 10,000): a 2xx of a known route, or other; exact when that is `min` and nothing else.
 */
function answered(emu, min = {}) {
  const requests = Object.fromEntries(KINDS.map((k) => [k, 0]));
  let other = 0;
  for (const [route, byStatus] of Object.entries(emu.requestCounts())) {
    for (const [status, count] of Object.entries(byStatus)) {
      if (route in requests && Number(status) >= 200 && Number(status) < 300) requests[route] += count;
      else other += count;
    }
  }
  return { requests, other, exact: other === 0 && KINDS.every((k) => requests[k] === (min[k] ?? 0)) };
}

/**
 * The same files uploaded by a plain script (bench/plain-upload.mjs), CONCURRENCY at a time, in a
 * process of its own as the provider is, timed as the `pulumi` process is: start to exit.
 * `--read-back`: each upload followed by a GET, as the provider's gate does; `--bare`: by Node's
 * own HTTP client, each answer checked by its status (a floor of what the requests cost here). The
 * emulator starts empty and must then hold what the script says it sent.
 */
async function plainUpload(emu, dir, flags = []) {
  await emu.reset();
  const n = fs.readdirSync(dir).length;
  const script = path.join(repoRoot, "bench", "plain-upload.mjs");
  const args = [script, emu.url, EMULATOR_DEFAULT_API_KEY, dir, String(CONCURRENCY), ...flags];
  const t0 = performance.now();
  // Not execFileSync: the emulator answering it runs in this process.
  const { stdout } = await promisify(execFile)(process.execPath, args, { encoding: "utf8" });
  const ms = performance.now() - t0;
  const reads = flags.includes("--read-back") ? n : 0;
  const { exact } = answered(emu, { upload: n, get: reads });
  if (stdout.trim() !== `${n} ${reads}` || !exact) {
    throw new Error(
      `plain script ${flags.join(" ")}: said ${JSON.stringify(stdout.trim())} and the emulator counted ${JSON.stringify(emu.requestCounts())}, not ${n} uploads and ${reads} GETs`,
    );
  }
  await emu.reset();
  return ms;
}

/**
 * The same preview run as `pulumi preview` on the command line (what a pipeline runs), `reps`
 * times: the Automation API call adds its event log (every event, debug messages included,
 * written as JSON and read back), which grows with the state; both are reported.
 */
function cliPreviewSamples(stack, reps) {
  const samplesMs = [];
  for (let rep = 0; rep < reps; rep++) {
    const t0 = performance.now();
    execFileSync(path.join(pulumiDir, "pulumi"), ["preview", "--stack", stack.name, "--non-interactive"], {
      cwd: projectDir,
      env: { ...process.env, ...stack.workspace.envVars },
      stdio: "ignore",
    });
    samplesMs.push(Math.round(performance.now() - t0));
  }
  return samplesMs;
}

async function openStack(emu, variant, dir, parts = 1) {
  const tmp = fs.mkdtempSync(path.join(tmpRoot, `${variant}-`));
  const stackName = `folders-${variant}-${Math.random().toString(36).slice(2, 8)}`;
  const envVars = offlineEngineEnv({ pulumiDir, tmp, passphrase: "bench-passphrase", isolated: true });
  if (cli.profile) Object.assign(envVars, cpuRecordingEnv(repoRoot, { sample: true }));
  // Times the `pulumi <op>` process itself (what a user waits for at the CLI), apart from the
  // Automation API's follow-up commands (`stack output`, `stack history`), as bench/run.mjs does.
  const pulumiCommand = await PulumiCommand.get({ root: path.dirname(pulumiDir) });
  const run = pulumiCommand.run.bind(pulumiCommand);
  const timed = { lastOpMs: NaN };
  /** The stack, once opened (the commands that open it run before). */
  const opened = {};
  pulumiCommand.run = async (args, ...rest) => {
    const t0 = performance.now();
    // The engine's own CPU profile, next to the program's and the provider's (`pulumi --profiling`).
    const profileDir = opened.stack?.workspace.envVars.BENCH_CPU_PROF_DIR;
    if (cli.profile && profileDir && ["up", "preview", "destroy"].includes(args[0])) {
      // The CLI opens its profile as it starts: the step's directory must be there already.
      fs.mkdirSync(profileDir, { recursive: true });
      args = [...args, "--profiling", path.join(profileDir, "engine")];
    }
    try {
      return await run(args, ...rest);
    } finally {
      if (["up", "preview", "destroy"].includes(args[0])) timed.lastOpMs = Math.round(performance.now() - t0);
    }
  };
  const stack = await LocalWorkspace.createOrSelectStack({ stackName, workDir: projectDir }, { envVars, pulumiCommand });
  opened.stack = stack;
  await stack.setAllConfig({
    "tuskr:apiKey": { value: EMULATOR_DEFAULT_API_KEY, secret: true },
    "tuskr:baseUrl": { value: emu.url },
    "bench:variant": { value: variant },
    "bench:blobsFile": { value: "-" },
    "bench:tag": { value: "v1" },
    "bench:epochs": { value: "1" },
    "bench:folder": { value: dir },
    "bench:parts": { value: String(parts) },
  });
  return {
    stack,
    timed,
    /** The bytes of the stack's checkpoint as the file backend keeps it (what each write rewrites). */
    checkpointBytes: () => {
      const found = fs.readdirSync(path.join(tmp, "state"), { recursive: true }).find((f) => path.basename(String(f)) === `${stackName}.json`);
      return found === undefined ? undefined : fs.statSync(path.join(tmp, "state", String(found))).size;
    },
    close: async () => {
      await stack.workspace.removeStack(stackName, { force: true }).catch(() => undefined);
      fs.rmSync(path.join(projectDir, `Pulumi.${stackName}.yaml`), { force: true });
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
}

const STEPS = [
  { key: "create", label: "`up` from empty (every file uploaded)", op: "up", min: (n) => ({ upload: n, get: n }) }, // each upload read back
  { key: "preview", label: "`preview`, nothing changed", op: "preview", min: () => ({}), reps: () => previewReps },
  {
    key: "edit",
    label: "`up`, one file edited",
    op: "up",
    min: () => ({ upload: 1, get: 1 }),
    reps: () => changeReps,
    before: (dir, rep) => fs.appendFileSync(path.join(dir, fileName(rep)), "edited\n"),
  },
  {
    key: "add",
    label: "`up`, one file added",
    op: "up",
    min: () => ({ upload: 1, get: 1 }),
    reps: () => changeReps,
    // Each a content of its own: a second path to stored bytes would be no upload, a rename of the entry.
    before: (dir, rep) => fs.writeFileSync(path.join(dir, rep === 0 ? "added.bin" : `added-${rep}.bin`), rep === 0 ? "added\n" : `added ${rep}\n`),
  },
  { key: "destroy", label: "`destroy`", op: "destroy", min: () => ({}) },
];

async function runSteps(emu, variant, dir, n, parts = 1) {
  const { stack, timed, checkpointBytes, close } = await openStack(emu, variant, dir, parts);
  const steps = [];
  try {
    for (const step of STEPS) {
      if (cli.profile) stack.workspace.envVars.BENCH_CPU_PROF_DIR = path.join(cli.profile, `${variant}-${n}`, step.key);
      emu.clearRequests();
      // A repeated step's requests are counted over every run: the minimum is one run's times the runs.
      const samplesMs = [];
      const opSamplesMs = [];
      let peakMiB = 0;
      const reps = step.reps?.() ?? 1;
      for (let rep = 0; rep < reps; rep++) {
        step.before?.(dir, rep);
        timed.lastOpMs = NaN;
        const t0 = performance.now();
        const run = await withProviderPeak(() => (step.op === "up" ? stack.up() : step.op === "preview" ? stack.preview() : stack.destroy()));
        samplesMs.push(Math.round(performance.now() - t0));
        opSamplesMs.push(timed.lastOpMs);
        peakMiB = Math.max(peakMiB, run.peakMiB);
      }
      const ms = median(samplesMs);
      const opMs = median(opSamplesMs);
      // And from the command line (none of it profiled: the profiles are of the API's runs).
      const cliSamplesMs = step.op === "preview" && !ci && !cli.profile ? cliPreviewSamples(stack, previewReps) : [];
      const min = Object.fromEntries(Object.entries(step.min(n)).map(([k, count]) => [k, count * reps]));
      const { requests, other, exact } = answered(emu, min);
      steps.push({
        step: step.key,
        ms,
        ...(samplesMs.length > 1 ? { samplesMs } : {}),
        opMs,
        ...(opSamplesMs.length > 1 ? { opSamplesMs } : {}),
        ...(cliSamplesMs.length > 0 ? { cliMs: median(cliSamplesMs), cliSamplesMs } : {}),
        requests,
        other,
        min,
        exact,
        providerPeakMiB: Math.round(peakMiB),
        ...(step.op === "up" ? { checkpointBytes: checkpointBytes() } : {}),
      });
      log(
        `${variant} N=${n} ${step.key.padEnd(8)} ${ms} ms${samplesMs.length > 1 ? ` (median of ${samplesMs.join(", ")})` : ""}, pulumi ${step.op} ${opMs} ms${cliSamplesMs.length > 0 ? `, CLI ${cliSamplesMs.join(", ")}` : ""}  ${KINDS.map((k) => `${k} ${requests[k]}`).join(" ")}${other ? ` other ${other}` : ""}  provider peak ${Math.round(peakMiB)} MiB${exact ? "" : "  NOT AT MINIMUM"}`,
      );
    }
  } finally {
    await close();
  }
  return steps;
}

/**
 * One more first `up` of the folder on a stack of its own, destroyed after: the `pulumi up`
 * process's time, and a problem if its requests were not exactly one upload and one GET a file.
 */
async function firstUpSample(emu, dir, n, parts) {
  await emu.reset();
  const { stack, timed, close } = await openStack(emu, "onefolder", dir, parts);
  try {
    timed.lastOpMs = NaN;
    const t0 = performance.now();
    const { peakMiB } = await withProviderPeak(() => stack.up());
    const wallMs = Math.round(performance.now() - t0);
    const ms = timed.lastOpMs;
    const { requests, other, exact } = answered(emu, { upload: n, get: n });
    await stack.destroy();
    return {
      ms,
      wallMs,
      peakMiB,
      problem: exact && Number.isFinite(ms) ? undefined : `first up sample: requests ${JSON.stringify(requests)} (other ${other}), time ${ms}`,
    };
  } finally {
    await close();
    await emu.reset();
  }
}

async function emptyPreviewMs(emu, parts) {
  const dir = path.join(tmpRoot, "empty");
  fs.mkdirSync(dir, { recursive: true });
  const { stack, checkpointBytes, close } = await openStack(emu, "onefolder", dir, parts);
  try {
    await stack.up();
    const bytes = checkpointBytes();
    const samplesMs = [];
    for (let rep = 0; rep < previewReps; rep++) {
      const t0 = performance.now();
      await stack.preview();
      samplesMs.push(Math.round(performance.now() - t0));
    }
    const cliSamplesMs = !ci && !cli.profile ? cliPreviewSamples(stack, previewReps) : [];
    return { ms: median(samplesMs), samplesMs, checkpointBytes: bytes, ...(cliSamplesMs.length > 0 ? { cliMs: median(cliSamplesMs), cliSamplesMs } : {}) };
  } finally {
    await stack.destroy().catch(() => undefined);
    await close();
  }
}

/**
 * How each step's provider peak RSS grows with the files, over the 1 KiB scenarios (two sizes at
 * least): the least-squares line's slope per file (KiB) and its value at no file (MiB).
 */
function memoryGrowth(all) {
  const sized = all.filter((sc) => sc.bytes === 1024);
  if (new Set(sized.map((sc) => sc.n)).size < 2) return undefined;
  const growth = {};
  for (const key of STEPS.map((s) => s.key)) {
    const points = sized.map((sc) => [sc.n, sc.steps.find((s) => s.step === key)?.providerPeakMiB]).filter(([, y]) => Number.isFinite(y));
    if (points.length < 2) continue;
    const mean = (f) => points.reduce((a, p) => a + f(p), 0) / points.length;
    const mx = mean(([x]) => x);
    const my = mean(([, y]) => y);
    const slope = mean(([x, y]) => (x - mx) * (y - my)) / mean(([x]) => (x - mx) ** 2);
    growth[key] = { kibPerFile: Number((slope * 1024).toFixed(2)), miBAtNone: Math.round(my - slope * mx) };
  }
  return growth;
}

const started = performance.now();
const emu = await startEmulator({ port: 0 });
const results = {
  commit: sh("git", ["rev-parse", "--short", "HEAD"], { cwd: repoRoot }),
  date: new Date().toISOString(),
  node: process.version,
  concurrency: CONCURRENCY,
  scenarios: [],
  compare: undefined,
};
const problems = [];
/** A step off the request minimum, whose pulumi process went untimed, or whose provider was not seen, is a problem of the run. */
const checkStep = (label, s) => {
  if (!s.exact) problems.push(`${label} ${s.step}: requests ${JSON.stringify(s.requests)} (other ${s.other}), minimum ${JSON.stringify(s.min)}`);
  if (!Number.isFinite(s.opMs)) problems.push(`${label} ${s.step}: the pulumi process was not timed`);
  if (!(s.providerPeakMiB > 0)) problems.push(`${label} ${s.step}: no provider process of the bench's project was seen`);
};
try {
  // The floor of each scenario's preview: the same program (as many parts) over an empty folder.
  const empties = new Map();
  const emptyOf = async (parts) => {
    if (!empties.has(parts)) {
      const empty = await emptyPreviewMs(emu, parts);
      log(
        `preview over an empty folder in ${parts} part(s): ${empty.ms} ms${previewReps > 1 ? ` (median of ${empty.samplesMs.join(", ")})` : ""}${empty.cliSamplesMs ? `, CLI ${empty.cliSamplesMs.join(", ")}` : ""}`,
      );
      empties.set(parts, empty);
    }
    return empties.get(parts);
  };
  for (const { n, bytes } of scenarios) {
    const parts = partsFor(n);
    const empty = await emptyOf(parts);
    const emptyMs = empty.ms;
    const dir = path.join(tmpRoot, `folder-${n}x${bytes}`);
    writeFolder(dir, n, bytes);
    const plainReadBackMs = ci ? undefined : Math.round(await plainUpload(emu, dir, ["--read-back"]));
    if (plainReadBackMs !== undefined) log(`plain script, each upload read back: ${n} uploads in ${plainReadBackMs} ms`);
    const bareReadBackMs = ci ? undefined : Math.round(await plainUpload(emu, dir, ["--read-back", "--bare"]));
    if (bareReadBackMs !== undefined) log(`bare Node client, each upload read back: ${n} uploads in ${bareReadBackMs} ms`);
    // The plain script and the first `up` in turn: the earlier pairs here, the last one the steps' create.
    const plainSamplesMs = [];
    const firstUpSamplesMs = [];
    const firstUpWallMs = [];
    let firstUpPeakMiB = 0;
    for (let rep = 0; !ci && rep < firstUpReps; rep++) {
      plainSamplesMs.push(Math.round(await plainUpload(emu, dir)));
      if (rep === firstUpReps - 1) break;
      const sample = await firstUpSample(emu, dir, n, parts);
      if (sample.problem) problems.push(`${n}x${bytes} ${sample.problem}`);
      // An untimed sample is a problem already, not a time: the median is of the timed ones.
      if (Number.isFinite(sample.ms)) firstUpSamplesMs.push(sample.ms);
      firstUpWallMs.push(sample.wallMs);
      firstUpPeakMiB = Math.max(firstUpPeakMiB, sample.peakMiB);
      log(`plain script: ${n} uploads in ${plainSamplesMs.at(-1)} ms; first up on a stack of its own: ${sample.ms} ms`);
    }
    const plainMs = ci ? undefined : median(plainSamplesMs);
    if (plainMs !== undefined)
      log(
        `plain script: ${n} uploads in ${plainSamplesMs.at(-1)} ms${plainSamplesMs.length > 1 ? ` (median ${plainMs} of ${plainSamplesMs.join(", ")})` : ""}`,
      );
    await emu.reset();
    const t0 = performance.now();
    byContent(dir, folderFiles("bench", dir));
    const hashMs = Math.round(performance.now() - t0);
    const steps = await runSteps(emu, "onefolder", dir, n, parts);
    // The create step's time is the median of every first `up`, its own last.
    const create = steps.find((s) => s.step === "create");
    if (create && firstUpSamplesMs.length > 0) {
      create.opSamplesMs = [...firstUpSamplesMs, create.opMs];
      create.opMs = median(create.opSamplesMs);
      create.samplesMs = [...firstUpWallMs, create.ms];
      create.ms = median(create.samplesMs);
      create.providerPeakMiB = Math.max(create.providerPeakMiB, Math.round(firstUpPeakMiB));
      log(`${n} files: first up ${create.opMs} ms (median of ${create.opSamplesMs.join(", ")})`);
    }
    for (const s of steps) checkStep(`${n}x${bytes}`, s);
    const created = steps.find((s) => s.step === "create")?.checkpointBytes;
    results.scenarios.push({
      n,
      bytes,
      parts,
      plainMs,
      ...(plainSamplesMs.length > 1 ? { plainSamplesMs } : {}),
      plainReadBackMs,
      bareReadBackMs,
      emptyPreviewMs: emptyMs,
      // What each file adds to the checkpoint: the first up's, less the empty folder's, per file.
      ...(created !== undefined && empty.checkpointBytes !== undefined ? { checkpointBytesPerFile: Math.round((created - empty.checkpointBytes) / n) } : {}),
      ...(previewReps > 1 ? { emptyPreviewSamplesMs: empty.samplesMs } : {}),
      ...(empty.cliSamplesMs ? { emptyPreviewCliMs: empty.cliMs, emptyPreviewCliSamplesMs: empty.cliSamplesMs } : {}),
      hashMs,
      steps,
    });
    fs.rmSync(dir, { recursive: true, force: true });
  }
  if (compareN > 0) {
    const dir = path.join(tmpRoot, `compare-${compareN}`);
    const runs = {};
    for (const variant of ["onefolder", "pluginfolder", "folder"]) {
      writeFolder(dir, compareN, 1024);
      await emu.reset();
      runs[variant] = await runSteps(emu, variant, dir, compareN);
      for (const s of runs[variant]) checkStep(`compare ${variant}`, s);
    }
    results.compare = { n: compareN, bytes: 1024, ...runs };
  }
} finally {
  await emu.close();
  fs.rmSync(tmpRoot, { recursive: true, force: true });
}
results.memoryGrowth = memoryGrowth(results.scenarios);
results.problems = problems;
results.minutes = Number(((performance.now() - started) / 60000).toFixed(1));

// Only the run as it is (`npm run bench:folders`) writes BENCHMARKS-folders.json and
// BENCHMARKS.md in the repository; a run with any option that changes what is measured writes
// its JSON to a temp file (or --out), and says where.
const partialRun = !isPublishedRun(cli, ["skip-install", "out"]);
if (partialRun || cli.out) {
  const out = cli.out ?? path.join(os.tmpdir(), ci ? "tuskr-bench-folders-ci.json" : `tuskr-bench-folders-${process.pid}.json`);
  fs.writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
  log(`wrote ${out}`);
} else {
  fs.writeFileSync(path.join(repoRoot, "BENCHMARKS-folders.json"), `${JSON.stringify(results, null, 2)}\n`);
  const { renderFile } = await import("./report.mjs");
  fs.writeFileSync(path.join(repoRoot, "BENCHMARKS.md"), renderFile(repoRoot));
  log("wrote BENCHMARKS-folders.json and BENCHMARKS.md");
}
if (problems.length) {
  for (const p of problems) log(`problem: ${p}`);
  process.exit(1);
}
