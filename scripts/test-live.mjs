#!/usr/bin/env node
// `npm run test:live`: the lifecycle (test/live/) against the service TUSKR_API_KEY and
// TUSKR_BASE_URL name, within the budget of test/live/budget.json, said first. Unset, one line
// says it was skipped and why, and it exits 0 (nothing ran, nothing is claimed to pass).
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { TUSKR_API_KEY: key, TUSKR_BASE_URL: baseUrl } = process.env;
if (!key || !baseUrl) {
  console.log(
    'test:live skipped: TUSKR_API_KEY and TUSKR_BASE_URL are not both set (they name the service to run the lifecycle against; docs/development.md, "The live tier")',
  );
  process.exit(0);
}
const budget = JSON.parse(fs.readFileSync(path.join(root, "test/live/budget.json"), "utf8"));
const epochs = budget.uploads * budget.epochsPerUpload + budget.renewEpochs;
console.log(
  `test:live against ${baseUrl}: buys at most ${budget.uploads} uploads of ${budget.bytesPerFile} bytes or fewer and ${epochs} epochs in all (${budget.about})`,
);
const vitest = path.join(root, "node_modules", "vitest", "vitest.mjs");
const child = spawn(process.execPath, [vitest, "run", "--project", "live", ...process.argv.slice(2)], { cwd: root, stdio: "inherit" });
child.on("close", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
