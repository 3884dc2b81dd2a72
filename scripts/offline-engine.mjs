// What every driver of the real engine in this repo needs to run it offline and self-contained
// (the e2e harness, the reliability stacks, the demo, the benchmark): the environment for the
// Automation API / CLI, and a copy of a Pulumi project whose node_modules is linked, not copied.
import * as fs from "node:fs";
import * as path from "node:path";

/**
 * The engine's environment: the Pulumi CLI from `pulumiDir` first on PATH, a `file://` backend
 * in `<tmp>/state` (created) and a Pulumi home in `<tmp>/home`, a passphrase secrets provider,
 * no update check and no plugin download (plugins come from PATH).
 *
 * `isolated` is for tests and benchmarks: no type check inside the engine (that is
 * `npm run build`'s job) and no TUSKR_API_KEY / TUSKR_BASE_URL from the caller's environment,
 * so only the stack config under test reaches the provider.
 *
 * @param {{ pulumiDir: string, tmp: string, passphrase: string, isolated?: boolean }} options
 * @returns {Record<string, string>}
 */
export function offlineEngineEnv({ pulumiDir, tmp, passphrase, isolated = false }) {
  const stateDir = path.join(tmp, "state");
  fs.mkdirSync(stateDir, { recursive: true });
  return {
    PATH: `${pulumiDir}:${process.env.PATH}`,
    PULUMI_BACKEND_URL: `file://${stateDir}`,
    PULUMI_HOME: path.join(tmp, "home"),
    PULUMI_CONFIG_PASSPHRASE: passphrase,
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    ...(isolated ? { PULUMI_NODEJS_TRANSPILE_ONLY: "true", TUSKR_API_KEY: "", TUSKR_BASE_URL: "" } : {}),
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
