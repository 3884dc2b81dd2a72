import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { parseDocument } from "yaml";

/**
 * Every YAML block of README.md and docs/*.md parses, and each one that declares resources gives
 * each a `tuskr:index:*` type: the YAML examples are copied into Pulumi.yaml files, where a slip
 * shows only at `pulumi up`. (The TypeScript blocks are compiled by docs-compile.)
 */
const root = path.resolve(__dirname, "../../..");
const pages = [
  "README.md",
  ...fs
    .readdirSync(path.join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];
const blocks = pages.flatMap((page) =>
  [...fs.readFileSync(path.join(root, page), "utf8").matchAll(/^```ya?ml\n([\s\S]*?)^```/gm)].map((m, i) => ({ name: `${page} #${i + 1}`, text: m[1] })),
);

describe("YAML in the docs", () => {
  it("has blocks to check", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4);
  });

  it.each(blocks)("$name parses, and its resources are tuskr's", ({ text }) => {
    const doc = parseDocument(text);
    expect(doc.errors.map((e) => e.message)).toEqual([]);
    const resources = (doc.toJS() as { resources?: Record<string, { type?: unknown }> }).resources ?? {};
    for (const [name, r] of Object.entries(resources)) expect(`${name}: ${String(r.type)}`).toMatch(/: tuskr:index:Stored(File|Folder)$/);
  });
});
