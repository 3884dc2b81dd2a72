#!/usr/bin/env node
// npm's `prepare`: runs on `npm install` in a clone of this repository (and when npm packs it).
// Pulumi runs the provider plugin from built JavaScript (package.json `main`), so a clone that
// has never been built is built here; an existing build is left alone (`npm run build` rebuilds).
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const main = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).main;
if (!fs.existsSync(path.join(root, main))) {
  const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc");
  if (fs.existsSync(tsc)) {
    process.stderr.write(`pulumi-tuskr: ${main} is missing; building (tsc)\n`);
    execFileSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.json")], { stdio: "inherit" });
  } else {
    process.stderr.write(`pulumi-tuskr: ${main} is missing and TypeScript is not installed: run \`npm install\` then \`npm run build\`\n`);
  }
}
