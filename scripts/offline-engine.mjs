// What every driver of the real engine in this repo needs to run it offline and self-contained
// (the e2e harness, the reliability stacks, the demo, the benchmark): the environment for the
// Automation API / CLI, a Pulumi project installed as a user's would be, and a copy of it whose
// node_modules is linked, not copied.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

/**
 * The engine's environment: the Pulumi CLI from `pulumiDir` first on PATH, a `file://` backend
 * in `<tmp>/state` (created) and a Pulumi home in `<tmp>/home`, a passphrase secrets provider,
 * no update check and no plugin download (plugins come from PATH).
 *
 * Programs are type-checked by the engine, as users' TypeScript programs are by default.
 * `isolated` is for tests and benchmarks: no TUSKR_API_KEY / TUSKR_BASE_URL from the caller's
 * environment, so only the stack config under test reaches the provider.
 *
 * `extraPath` are more directories for PATH after the CLI's (other language hosts).
 *
 * @param {{ pulumiDir: string, tmp: string, passphrase: string, isolated?: boolean, extraPath?: string[] }} options
 * @returns {Record<string, string>}
 */
export function offlineEngineEnv({ pulumiDir, tmp, passphrase, isolated = false, extraPath = [] }) {
  const stateDir = path.join(tmp, "state");
  fs.mkdirSync(stateDir, { recursive: true });
  return {
    PATH: [pulumiDir, ...extraPath, process.env.PATH].join(":"),
    PULUMI_BACKEND_URL: `file://${stateDir}`,
    PULUMI_HOME: path.join(tmp, "home"),
    PULUMI_CONFIG_PASSPHRASE: passphrase,
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    ...(isolated ? { TUSKR_API_KEY: "", TUSKR_BASE_URL: "" } : {}),
  };
}

/**
 * Copies a Pulumi project to `dest` without its node_modules, which is linked instead, so that
 * running it (stack config files, steps applied) never writes into the repository.
 *
 * @param {string} source
 * @param {string} dest
 */
export function copyProject(source, dest) {
  fs.cpSync(source, dest, { recursive: true, filter: (src) => path.basename(src) !== "node_modules" });
  fs.symlinkSync(path.join(source, "node_modules"), path.join(dest, "node_modules"), "dir");
}

/**
 * Whether `dir`'s installed pulumi-tuskr is this checkout's build: the same files under dist/,
 * and the same package.json and PulumiPlugin.yaml (how it is loaded and how the plugin starts),
 * byte for byte. A copy packed from an earlier build would be measured as if it were this one.
 */
function installedCopyIsCurrent(dir, repoRoot) {
  const installed = path.join(dir, "node_modules", "pulumi-tuskr");
  const distFiles = (root) =>
    fs
      .readdirSync(path.join(root, "dist"), { recursive: true })
      .map((f) => path.join("dist", f))
      .filter((f) => fs.statSync(path.join(root, f)).isFile())
      .sort();
  try {
    const built = distFiles(repoRoot);
    if (built.join("\n") !== distFiles(installed).join("\n")) return false;
    return ["package.json", "PulumiPlugin.yaml", ...built].every((f) =>
      fs.readFileSync(path.join(repoRoot, f)).equals(fs.readFileSync(path.join(installed, f))),
    );
  } catch {
    return false; // missing or unreadable (a dangling link, say): not known to be this build
  }
}

/**
 * A benchmark's project, installed unless `skip` is asked and its pulumi-tuskr is this build
 * already: skipping keeps the project's packages, never a copy of an earlier build.
 */
export async function installBenchProject(dir, repoRoot, { skip, log }) {
  const stale = skip && !installedCopyIsCurrent(dir, repoRoot);
  if (skip && !stale) return;
  log(
    `installing ${path.relative(repoRoot, dir)} (pulumi-tuskr packed from this checkout)${stale ? ": the installed copy is not this build, --skip-install notwithstanding" : ""}`,
  );
  await installProject(dir, repoRoot);
}

/**
 * Installs a Pulumi project's dependencies as a user's `npm install pulumi-tuskr` would: this
 * checkout packed (`--install-links`: a real copy under node_modules, not a link), and the same
 * @pulumi/pulumi as this checkout runs with (so each CI leg runs its projects on its own SDK,
 * one copy of it, whatever range the project declares).
 *
 * @param {string} dir the project
 * @param {string} repoRoot this checkout
 * @returns {Promise<void>} settled when npm has finished
 */
export function installProject(dir, repoRoot) {
  const sdk = JSON.parse(fs.readFileSync(path.join(repoRoot, "node_modules/@pulumi/pulumi/package.json"), "utf8")).version;
  // npm sees the same version as "up to date" and would keep a stale copy of the package.
  fs.rmSync(path.join(dir, "node_modules", "pulumi-tuskr"), { recursive: true, force: true });
  const args = [
    "install",
    "--install-links",
    "--no-package-lock",
    "--no-save",
    "--prefer-offline",
    "--no-audit",
    "--no-fund",
    "--loglevel=error",
    // Named here, not by the project: examples declare pulumi-tuskr as a user would (a version),
    // so that they still install once copied out of this repository.
    repoRoot,
    `@pulumi/pulumi@${sdk}`,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn("npm", args, { cwd: dir, stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", reject);
    child.on("close", (code, signal) => (code === 0 ? resolve() : reject(new Error(`npm install in ${dir} failed (${signal ?? `exit ${code}`})`))));
  });
}

/**
 * Whether a benchmark run is the run as it is, the one whose figures BENCHMARKS.md publishes:
 * no option that changes what is measured (`neutral` lists those that do not, such as where the
 * report goes). Any other run writes its report to a temp file.
 *
 * @param {Record<string, unknown>} cli the parsed options (parseArgs: false / undefined when not given)
 * @param {string[]} neutral
 */
export function isPublishedRun(cli, neutral) {
  return Object.entries(cli).every(([k, v]) => neutral.includes(k) || v === undefined || v === false);
}

/**
 * The environment that has bench/cpu-prof.cjs record each node process's CPU (and, with
 * `sample`, a V8 profile) for the engine's node processes.
 *
 * @param {string} repoRoot
 * @param {{ sample: boolean }} options
 */
export function cpuRecordingEnv(repoRoot, { sample }) {
  // Node 20 refuses --cpu-prof in NODE_OPTIONS; a preload starts the profiler instead.
  return { NODE_OPTIONS: `--require ${path.join(repoRoot, "bench", "cpu-prof.cjs")}`, ...(sample ? { BENCH_CPU_PROF_SAMPLE: "1" } : {}) };
}
