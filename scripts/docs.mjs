#!/usr/bin/env node
// `npm run docs`: rewrites README.md's generated sections (inputs, configuration, troubleshooting) and provider/dynamic/documented-args.ts
// from the schemas, through the built package (run `npm run build` first). `--check` only
// says whether README.md is current (exit 1 if not).
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { withGeneratedSections, documentedArgsSource, DOCUMENTED_ARGS_FILE } = await import(path.join(root, "dist/provider/docs/reference.js"));
const readme = path.join(root, "README.md");
const text = fs.readFileSync(readme, "utf8");
const next = withGeneratedSections(text);
const argsFile = path.join(root, DOCUMENTED_ARGS_FILE);
const args = documentedArgsSource();
const argsNow = fs.existsSync(argsFile) ? fs.readFileSync(argsFile, "utf8") : "";
if (process.argv.includes("--check")) {
  if (next !== text || args !== argsNow) {
    console.error(`README.md's generated sections or ${DOCUMENTED_ARGS_FILE} are out of date: run \`npm run build && npm run docs\``);
    process.exit(1);
  }
} else {
  if (next !== text) {
    fs.writeFileSync(readme, next);
    console.log("README.md: generated sections rewritten");
  }
  if (args !== argsNow) {
    fs.writeFileSync(argsFile, args);
    console.log(`${DOCUMENTED_ARGS_FILE} rewritten (run npm run build again)`);
  }
}
