import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { TestProject } from "vitest/node";
import { installProject } from "../../scripts/offline-engine.mjs";

const repoRoot = path.resolve(__dirname, "../..");

/** Projects the e2e tier runs, each installing pulumi-tuskr by name as a user would. */
export const E2E_PROJECTS = [
  "test/e2e/fixture",
  "examples/basic",
  "examples/gitops",
  "examples/yaml",
  "test/e2e/plugin/migrate",
  "test/e2e/file/getfile-yaml",
  "test/e2e/file/getfile-ts",
  // test/e2e/plugin/sdks.e2e.test.ts runs it in place; examples/go and examples/java are set up
  // only as their READMEs say, from the tarball (test/e2e/languages/python-go-java.e2e.test.ts).
  "examples/python",
];

declare module "vitest" {
  export interface ProvidedContext {
    pulumiDir: string;
    /**
     * Where scripts/ensure-language-hosts puts Pulumi's YAML, Java and .NET language hosts (the
     * Java and .NET ones are ensured by the tests that need them). The Node.js, Python and Go hosts
     * are in pulumiDir.
     */
    languageHostsDir: string;
    /**
     * This checkout packed (`npm pack`), by its absolute path: what an example's README installs as
     * `"$TUSKR_PACKAGE"` (docs/installation-configuration.md#install).
     */
    tarball: string;
  }
}

/**
 * Once per run: find or build the Pulumi CLI and the YAML language host, install each project as
 * a user would, with this checkout packed as `pulumi-tuskr` (scripts/offline-engine.mjs,
 * installProject), and pack it for the READMEs (`tarball`). Returns the teardown.
 */
export default async function setup(project: TestProject): Promise<() => void> {
  const packed = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-tarball-"));
  // --silent: stdout is the tarball's name alone (`prepare` builds only a checkout never built).
  const name = execFileSync("npm", ["pack", "--silent", "--pack-destination", packed], { cwd: repoRoot, encoding: "utf8" }).trim();
  project.provide("tarball", path.join(packed, name));
  await setupEngine(project, E2E_PROJECTS);
  return () => fs.rmSync(packed, { recursive: true, force: true });
}

/** The Pulumi CLI and YAML host provided to the tests, and `projects` installed. */
export async function setupEngine(project: TestProject, projects: readonly string[]): Promise<void> {
  const pulumiDir = execFileSync("bash", [path.join(repoRoot, "scripts/ensure-pulumi")], {
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
  }).trim();
  project.provide("pulumiDir", pulumiDir);
  const languageHostsDir = execFileSync("bash", [path.join(repoRoot, "scripts/ensure-language-hosts"), "pulumi-language-yaml"], {
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
  }).trim();
  project.provide("languageHostsDir", languageHostsDir);
  // Two at a time: an install waits on npm's registry and its cache about as long as on the CPU.
  const queue = [...projects];
  const installer = async (): Promise<void> => {
    for (let dir = queue.shift(); dir !== undefined; dir = queue.shift()) {
      const started = Date.now();
      await installProject(path.join(repoRoot, dir), repoRoot);
      process.stderr.write(`e2e setup: installed ${dir} in ${((Date.now() - started) / 1000).toFixed(1)}s\n`);
    }
  };
  await Promise.all([installer(), installer()]);
}
