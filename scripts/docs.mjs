#!/usr/bin/env node
// `npm run docs`: rewrites README.md's generated sections (the inputs and configuration tables)
// from the schemas, through the built package (run `npm run build` first). `--check` only
// says whether README.md is current (exit 1 if not).
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { withGeneratedSections } = await import(path.join(root, "dist/provider/docs.js"));
const readme = path.join(root, "README.md");
const text = fs.readFileSync(readme, "utf8");
const next = withGeneratedSections(text);
if (process.argv.includes("--check")) {
  if (next !== text) {
    console.error("README.md's generated sections are out of date: run `npm run build && npm run docs`");
    process.exit(1);
  }
} else if (next !== text) {
  fs.writeFileSync(readme, next);
  console.log("README.md: generated sections rewritten");
}
