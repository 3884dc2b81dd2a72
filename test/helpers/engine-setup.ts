import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import type { TestProject } from "vitest/node";

const repoRoot = path.resolve(__dirname, "../..");

/** Projects the e2e tier runs, each installing pulumi-tuskr by name as a user would. */
export const E2E_PROJECTS = ["test/e2e/fixture", "examples/basic", "examples/gitops"];

declare module "vitest" {
  export interface ProvidedContext {
    pulumiDir: string;
  }
}

/**
 * Once per run: find or build the Pulumi CLI, and install each project's dependencies with the
 * package packed from this checkout (`--install-links`: a real copy under node_modules, one
 * @pulumi/pulumi, exactly what a user's `npm install pulumi-tuskr` gives).
 */
export default function setup(project: TestProject): void {
  const pulumiDir = execFileSync("bash", [path.join(repoRoot, "scripts/ensure-pulumi")], {
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
  }).trim();
  project.provide("pulumiDir", pulumiDir);
  for (const dir of E2E_PROJECTS) {
    const cwd = path.join(repoRoot, dir);
    const started = Date.now();
    // npm sees the same version as "up to date" and would keep a stale copy of the package.
    fs.rmSync(path.join(cwd, "node_modules", "pulumi-tuskr"), { recursive: true, force: true });
    execFileSync("npm", ["install", "--install-links", "--no-package-lock", "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd,
      stdio: ["ignore", "inherit", "inherit"],
    });
    process.stderr.write(`e2e setup: installed ${dir} in ${((Date.now() - started) / 1000).toFixed(1)}s\n`);
  }
}
