import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";

/**
 * examples/gitops's workflow as a team adopting it would rely on it: files kept alive without a
 * merge (a daily and a manual `up --refresh` per stack, then the expiry alarm), production behind
 * an environment and after staging, a comment on every preview — the reason when it fails — and a
 * fork's pull request told why it has no preview. The steps' scripts run here with `pulumi`
 * stubbed, and the real `pulumi-tuskr` CLI (dist/) behind `npx`.
 */

const repoRoot = path.resolve(__dirname, "../../..");
const workflows = path.join(repoRoot, "examples/gitops/.github/workflows");
type Step = { name?: string; run?: string; if?: string; uses?: string; id?: string };
type Job = { if?: string; needs?: string | string[]; uses?: string; with?: Record<string, unknown>; environment?: string; steps?: Step[] };
const main = parse(fs.readFileSync(path.join(workflows, "tuskr.yml"), "utf8")) as { on: Record<string, unknown>; jobs: Record<string, Job> };
const apply = parse(fs.readFileSync(path.join(workflows, "tuskr-apply.yml"), "utf8")) as { jobs: Record<string, Job> };
const step = (job: Job, name: RegExp) => job.steps?.find((s) => name.test(s.name ?? ""));

let bin: string;
let work: string;
beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-workflow-"));
  bin = path.join(work, "bin");
  fs.mkdirSync(bin);
  // `npx pulumi-tuskr …` is the package's CLI, as built.
  fs.writeFileSync(path.join(bin, "npx"), `#!/bin/sh\nshift\nexec "${process.execPath}" "${path.join(repoRoot, "dist/provider/cli/main.js")}" "$@"\n`, {
    mode: 0o755,
  });
});
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/** Runs a step's script in a fresh directory with `pulumi` stubbed by `pulumiScript`. */
function runStep(script: string, pulumiScript: string, env: Record<string, string> = {}) {
  const dir = fs.mkdtempSync(path.join(work, "step-"));
  fs.writeFileSync(path.join(bin, "pulumi"), `#!/bin/sh\n${pulumiScript}\n`, { mode: 0o755 });
  const outputs = path.join(dir, "github-output");
  const summary = path.join(dir, "step-summary");
  const result = spawnSync("bash", ["-e", "-c", script], {
    cwd: dir,
    encoding: "utf8",
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, GITHUB_OUTPUT: outputs, GITHUB_STEP_SUMMARY: summary, ...env },
  });
  const read = (f: string) => (fs.existsSync(f) ? fs.readFileSync(f, "utf8") : "");
  return { ...result, dir, output: read(outputs), summary: read(summary), file: (name: string) => read(path.join(dir, name)) };
}

describe("kept alive without a merge", () => {
  it("runs daily and on demand, and applies staging then production (behind its environment) on each", () => {
    expect(Object.keys(main.on)).toEqual(expect.arrayContaining(["schedule", "workflow_dispatch", "push", "pull_request"]));
    expect((main.on.schedule as Array<{ cron: string }>)[0].cron).toMatch(/^\S+ \S+ \* \* \*$/);
    const staging = main.jobs["apply-staging"];
    const production = main.jobs["apply-production"];
    for (const job of [staging, production]) {
      expect(job.uses).toBe("./.github/workflows/tuskr-apply.yml");
      for (const event of ["schedule", "workflow_dispatch"]) expect(job.if).toContain(`'${event}'`);
    }
    // On a merge, production follows a staging that went through.
    expect(staging.if).toContain("'push'");
    expect(production.if).toContain("needs.apply-staging.result == 'success'");
    expect(staging.with).toMatchObject({ stack: "staging" });
    expect(production.with).toMatchObject({ stack: "production", environment: "production" });
    expect(production.needs).toBe("apply-staging");
    const up = apply.jobs.up;
    expect(up.environment).toBe("${{ inputs.environment }}");
    expect(step(up, /^Apply/)?.run).toMatch(/pulumi up --yes --refresh/);
  });

  it("after the scheduled up, the expiry alarm fails the job when a file ends within the window", () => {
    const alarm = step(apply.jobs.up, /alarm/i)!;
    expect(alarm.if).toBe("inputs.alarm");
    const exported = (expiresAt: string) =>
      JSON.stringify({
        version: 3,
        deployment: {
          resources: [
            {
              urn: "urn:pulumi:s::p::pulumi-nodejs:dynamic/tuskr:StoredFile::release/app.js",
              type: "pulumi-nodejs:dynamic/tuskr:StoredFile",
              outputs: { blobId: "b1", expiresAt },
            },
          ],
        },
      });
    const soon = runStep(alarm.run!, `echo '${exported(new Date(Date.now() + 86_400_000).toISOString())}'`);
    expect(soon.status).toBe(1);
    expect(soon.summary).toMatch(/release\/app\.js.*\*\*1\*\*/);
    const later = runStep(alarm.run!, `echo '${exported(new Date(Date.now() + 20 * 86_400_000).toISOString())}'`);
    expect(later.status).toBe(0);
  });
});

describe("a pull request comment that tells the truth", () => {
  const preview = main.jobs.preview;
  const previewStep = step(preview, /^Preview and summarize/)!;

  it("a failed preview still writes the comment, with the error, and fails the job after commenting", () => {
    const run = runStep(previewStep.run!, `echo "error: StoredFile \\"app.js\\": buying 50 epoch(s) would end the storage 54 epochs ahead" >&2; exit 255`, {
      STACK: "staging",
    });
    expect(run.status).toBe(0);
    expect(run.output).toContain("failed=true");
    const comment = run.file("comment.md");
    expect(comment.startsWith("<!-- tuskr-summary:staging -->")).toBe(true);
    expect(comment).toMatch(/The preview failed/);
    expect(comment).toContain("would end the storage 54 epochs ahead");
    expect(step(preview, /^Comment on the pull request/)?.if).toMatch(/always\(\)/);
    expect(step(preview, /^Fail when the preview failed/)?.if).toBe("steps.preview.outputs.failed == 'true'");
  });

  it("a passing preview writes the summary under the stack's marker", () => {
    const run = runStep(previewStep.run!, `echo '{"steps":[{"op":"same","urn":"urn:pulumi:production::p::pulumi:pulumi:Stack::p-production"}]}'`, {
      STACK: "production",
    });
    expect(run.status).toBe(0);
    expect(run.output).toContain("failed=false");
    expect(run.file("comment.md")).toMatch(/^<!-- tuskr-summary:production -->\n#### production\n[\s\S]*No StoredFile changes/);
  });

  it("a fork's pull request gets no preview job, and a comment saying why, from a job that checks out nothing", () => {
    expect(preview.if).toContain("github.event.pull_request.head.repo.full_name == github.repository");
    const fork = main.jobs["fork-notice"];
    expect(fork.if).toContain("pull_request_target");
    expect(fork.if).toContain("github.event.pull_request.head.repo.full_name != github.repository");
    expect(fork.steps?.some((s) => s.uses?.startsWith("actions/checkout"))).toBe(false);
    expect(fork.steps?.[0].run).toMatch(/comes from a fork.*none of this repository's secrets/);
  });
});
