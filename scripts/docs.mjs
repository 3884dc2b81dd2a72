#!/usr/bin/env node
// `npm run docs`: rewrites the generated sections of docs/ (inputs, outputs, configuration,
// troubleshooting) and provider/file/documented-args.ts from the schemas, through the built
// package (run `npm run build` first). `--check` only says whether they are current (exit 1 if not).
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { GENERATED_PAGES, withGeneratedSections, documentedArgsSource, DOCUMENTED_ARGS_FILE } = await import(path.join(root, "dist/provider/docs/reference.js"));

/** Each generated file: its path, what it holds now, what the schemas make of it. */
const files = Object.keys(GENERATED_PAGES).map((page) => {
  const text = fs.readFileSync(path.join(root, page), "utf8");
  return { file: page, now: text, next: withGeneratedSections(page, text) };
});
const argsFile = path.join(root, DOCUMENTED_ARGS_FILE);
files.push({ file: DOCUMENTED_ARGS_FILE, now: fs.existsSync(argsFile) ? fs.readFileSync(argsFile, "utf8") : "", next: documentedArgsSource() });

const stale = files.filter((f) => f.next !== f.now);
if (process.argv.includes("--check")) {
  if (stale.length > 0) {
    console.error(`out of date: ${stale.map((f) => f.file).join(", ")}; run \`npm run build && npm run docs\``);
    process.exit(1);
  }
} else {
  for (const f of stale) {
    fs.writeFileSync(path.join(root, f.file), f.next);
    console.log(`${f.file}: rewritten${f.file === DOCUMENTED_ARGS_FILE ? " (run npm run build again)" : ""}`);
  }
}
