#!/usr/bin/env node
// `npm test`'s runner: the engine tier (e2e) and the unit and integration tiers as two vitest
// processes side by side. A step of the engine tier keeps about one core of two busy (it waits on
// process starts, plugins and loopback requests), so the other tiers run in what it leaves; in one
// process they would queue behind it (vitest sizes one pool for all of a process's projects).
// The engine tier's output streams; the other tiers' is printed whole when they finish, so the two
// do not interleave. Exits non-zero if either fails. Arguments go to both (e.g. `-t <name>`).
// The engine tier runs two files at a time: each waits on process starts and loopback most of the
// time, so one alone leaves a core idle once the other tiers end (each file's stacks, homes and
// emulators are its own).
import { spawn } from "node:child_process";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const vitest = path.join(root, "node_modules", "vitest", "vitest.mjs");
const extra = process.argv.slice(2);
// A filter may match files of one process only: that one has nothing to run and is not a failure.
const common = ["run", ...(extra.length > 0 ? ["--passWithNoTests", ...extra] : [])];

function run(label, projects, streamed, options = []) {
  const started = Date.now();
  const child = spawn(process.execPath, [vitest, ...common, ...options, ...projects.flatMap((p) => ["--project", p])], {
    cwd: root,
    stdio: streamed ? "inherit" : ["ignore", "pipe", "pipe"],
  });
  const chunks = [];
  if (!streamed) {
    child.stdout.on("data", (c) => chunks.push(c));
    child.stderr.on("data", (c) => chunks.push(c));
  }
  return new Promise((resolve) => {
    child.on("error", (err) => resolve({ label, code: 1, seconds: 0, output: `${err.message}\n` }));
    child.on("close", (code, signal) =>
      resolve({
        label,
        code: code ?? 1,
        signal,
        seconds: (Date.now() - started) / 1000,
        output: Buffer.concat(chunks).toString("utf8"),
      }),
    );
  });
}

process.stderr.write("npm test: unit and integration tiers run alongside the e2e tier; their output follows when they finish\n");
const others = run("unit + integration", ["unit", "integration"], false).then((r) => {
  process.stdout.write(`\n==== unit + integration (${r.seconds.toFixed(0)} s) ====\n${r.output}==== end of unit + integration ====\n\n`);
  return r;
});
const engine = run("e2e", ["e2e"], true, ["--file-parallelism", "--max-workers=2"]);
const results = await Promise.all([others, engine]);
// A failure in the tier printed mid-stream is said again last, where a log's tail shows it (CI keeps the tail).
for (const r of results) {
  if (r.code === 0 || r.output === "") continue;
  const from = ["Failed Tests", "Unhandled Error", "Test Files"].map((mark) => r.output.indexOf(mark)).find((at) => at >= 0) ?? 0;
  const failures = r.output.slice(Math.max(0, from - 120));
  process.stdout.write(`\n==== ${r.label}: its failures, again ====\n${failures.length > 12_000 ? `…${failures.slice(-12_000)}` : failures}\n`);
}
for (const r of results) {
  process.stderr.write(`npm test: ${r.label}: ${r.code === 0 ? "passed" : `failed (exit ${r.signal ?? r.code})`} in ${r.seconds.toFixed(0)} s\n`);
}
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
