import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * Every TypeScript block of README.md, docs/*.md, emulator/README.md and examples/*\/README.md
 * compiles with type checking on, against the package's own type declarations (dist/, built by
 * the tier), as a user's program that copied it would. Each block is its own module.
 */
const repoRoot = path.resolve(__dirname, "../../..");
const pages = fs
  .readdirSync(path.join(repoRoot, "docs"))
  .filter((f) => f.endsWith(".md"))
  .map((f) => `docs/${f}`);
const examples = fs.readdirSync(path.join(repoRoot, "examples")).map((e) => `examples/${e}/README.md`);
const docs = ["README.md", ...pages, "emulator/README.md", ...examples].filter((f) => fs.existsSync(path.join(repoRoot, f)));

function blocks(file: string): string[] {
  const text = fs.readFileSync(path.join(repoRoot, file), "utf8");
  return [...text.matchAll(/^```(?:ts|typescript)\n([\s\S]*?)^```/gm)].map((m) => m[1]);
}

describe("TypeScript in the docs", () => {
  it("every block compiles under strict type checking against the package's declarations", () => {
    // Inside the repository, so that @pulumi/pulumi and the Node types resolve from its node_modules.
    const dir = fs.mkdtempSync(path.join(repoRoot, "node_modules", ".docs-blocks-"));
    try {
      const files: string[] = [];
      for (const doc of docs) {
        blocks(doc).forEach((code, i) => {
          const name = `${doc.replace(/[^a-z0-9]+/gi, "-")}-${i + 1}.ts`;
          fs.writeFileSync(path.join(dir, name), `${code}\nexport {};\n`);
          files.push(name);
        });
      }
      // The README's first program, and each page's examples (docs/ has at least five).
      expect(files.filter((f) => f.startsWith("README-md-")).length).toBeGreaterThanOrEqual(1);
      expect(files.filter((f) => f.startsWith("docs-")).length).toBeGreaterThanOrEqual(5);
      fs.writeFileSync(
        path.join(dir, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            noEmit: true,
            target: "ES2022",
            module: "ES2022",
            moduleResolution: "bundler",
            types: ["node"],
            skipLibCheck: true,
            baseUrl: ".",
            paths: {
              "pulumi-tuskr": [path.join(repoRoot, "dist/provider/index.d.ts")],
              "pulumi-tuskr/emulator": [path.join(repoRoot, "dist/emulator/index.d.ts")],
            },
          },
          files,
        }),
      );
      const tsc = spawnSync(process.execPath, [path.join(repoRoot, "node_modules/typescript/bin/tsc"), "-p", dir], { encoding: "utf8" });
      expect(tsc.stdout + tsc.stderr).toBe("");
      expect(tsc.status).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
