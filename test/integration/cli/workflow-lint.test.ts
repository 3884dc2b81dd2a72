import { execFile, spawnSync } from "node:child_process";
import * as path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

// actionlint, the GitHub Actions linter, built from its Go module on first use (scripts/ensure-actionlint).
const repoRoot = path.resolve(__dirname, "../../..");

describe("the example GitHub workflow", () => {
  it("passes actionlint (with shellcheck on its scripts where shellcheck is installed)", async () => {
    // Built asynchronously: a first build on a fresh machine can outlast the 60 s a vitest worker may spend away from its event loop.
    const built = await promisify(execFile)("bash", [path.join(repoRoot, "scripts/ensure-actionlint")], { encoding: "utf8" });
    process.stderr.write(built.stderr);
    const actionlint = built.stdout.trim();
    const lint = spawnSync(actionlint, ["-no-color", "examples/gitops/.github/workflows/tuskr.yml", "examples/gitops/.github/workflows/tuskr-apply.yml"], {
      cwd: repoRoot,
      encoding: "utf8",
    });
    expect(lint.stdout + lint.stderr).toBe("");
    expect(lint.status).toBe(0);
  }, 300_000);
});
