import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

/**
 * The live tier's front door: `npm run test:live` says it was skipped, in one line, when nothing
 * names a service (and claims nothing passed); examples/gitops's workflow runs it only when a
 * repository opts in.
 */

const repoRoot = path.resolve(__dirname, "../../..");

describe("npm run test:live", () => {
  for (const [label, env] of [
    ["neither set", { TUSKR_API_KEY: "", TUSKR_BASE_URL: "" }],
    ["only the key", { TUSKR_API_KEY: "tsk_live_x", TUSKR_BASE_URL: "" }],
    ["only the base URL", { TUSKR_API_KEY: "", TUSKR_BASE_URL: "https://api.tuskr.dev" }],
  ] as const) {
    it(`${label}: one line saying it was skipped and why, exit 0, nothing run`, () => {
      const run = spawnSync(process.execPath, [path.join(repoRoot, "scripts/test-live.mjs")], { encoding: "utf8", env: { ...process.env, ...env } });
      expect(run.status).toBe(0);
      expect(run.stdout.trim().split("\n")).toEqual([expect.stringMatching(/^test:live skipped: TUSKR_API_KEY and TUSKR_BASE_URL are not both set/)]);
      expect(run.stderr).toBe("");
    });
  }
});

describe("examples/gitops's opt-in live job", () => {
  it("runs only where the repository opts in, on schedule or by hand, with the secret as the key", () => {
    const workflow = parse(fs.readFileSync(path.join(repoRoot, "examples/gitops/.github/workflows/tuskr.yml"), "utf8")) as {
      jobs: Record<string, { if?: string; env?: Record<string, string>; steps?: Array<{ run?: string }> }>;
    };
    const job = workflow.jobs["live-tier"];
    expect(job.if).toMatch(/^vars\.TUSKR_LIVE_TIER == 'on' && \(github\.event_name == 'schedule' \|\| github\.event_name == 'workflow_dispatch'\)$/);
    expect(job.env?.TUSKR_API_KEY).toBe("${{ secrets.TUSKR_LIVE_API_KEY }}");
    expect(job.steps?.some((s) => s.run === "npm run test:live")).toBe(true);
  });
});
