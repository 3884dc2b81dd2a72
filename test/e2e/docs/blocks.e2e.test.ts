import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { offlineEngineEnv } from "../../../scripts/offline-engine.mjs";
import { repoRoot } from "../../helpers/engine";
import { cachedVenv } from "../../helpers/python-venv";

/**
 * The Python, Go and Java blocks of README.md and docs/*.md, type-checked as a program copied from
 * them is: each against the SDK `pulumi package gen-sdk` generates from the plugin as npm installs
 * it, set up as the example of its language is. Python: mypy, in a virtualenv with pulumi and the
 * SDK (examples/python). Go: `go build`, in a module that replaces the SDK's with it
 * (examples/go's go.mod and go.sum). Java: Maven compiling the SDK with them (examples/java's
 * pom.xml). Each block is a program of its own. The TypeScript blocks are compiled by
 * test/integration/docs/compile.test.ts, the YAML blocks checked against the package schema by
 * test/unit/docs/yaml.test.ts.
 */
const run = promisify(execFile);
const plugin = path.join(repoRoot, "examples/yaml/node_modules/pulumi-tuskr");
let tmp: string;
let env: NodeJS.ProcessEnv;

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-doc-blocks-"));
  env = { ...process.env, ...offlineEngineEnv({ pulumiDir: inject("pulumiDir"), tmp, passphrase: "blocks", extraPath: [inject("languageHostsDir")] }) };
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const pages = [
  "README.md",
  ...fs
    .readdirSync(path.join(repoRoot, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** Each block of `fence` in the pages: where it is (page and number, a file name's part) and its code. */
function blocks(fence: string): Array<{ name: string; code: string }> {
  return pages.flatMap((page) =>
    [...fs.readFileSync(path.join(repoRoot, page), "utf8").matchAll(new RegExp(`^\`\`\`${fence}\\n([\\s\\S]*?)^\`\`\``, "gm"))].map((m, i) => ({
      name: `${page.replace(/\.md$/, "").replace(/[^a-z0-9]+/gi, "_")}_${i + 1}`,
      code: m[1],
    })),
  );
}

/** The resource and function pages each show their example in the language: at least these blocks. */
const PAGES_WITH_EXAMPLES = ["docs/stored-file.md", "docs/stored-folder.md", "docs/get-file.md"];

/** `pulumi package gen-sdk` of the plugin into `<dir>/sdks`, as the examples' READMEs run it. */
async function genSdk(dir: string, language: string, ...flags: string[]): Promise<string> {
  await run(path.join(inject("pulumiDir"), "pulumi"), ["package", "gen-sdk", plugin, "--language", language, "--out", path.join(dir, "sdks"), ...flags], {
    env,
    cwd: tmp,
    maxBuffer: 64 << 20,
  });
  return path.join(dir, "sdks", language);
}

/** What a command printed and its exit code, failure or not. */
async function outcome(file: string, args: string[], cwd: string, extra: Record<string, string> = {}): Promise<{ code: number; output: string }> {
  try {
    const r = await run(file, args, { cwd, env: { ...env, ...extra }, maxBuffer: 64 << 20 });
    return { code: 0, output: r.stdout + r.stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: Number(err.code ?? 1), output: `${err.stdout ?? ""}${err.stderr ?? ""}` };
  }
}

describe("the docs' blocks in each language, type-checked against the SDK generated from the plugin", () => {
  it("has a block of each language on each resource and function page", () => {
    for (const fence of ["ts", "python", "go", "yaml", "java"]) {
      for (const page of PAGES_WITH_EXAMPLES) {
        expect(fs.readFileSync(path.join(repoRoot, page), "utf8"), `${page}: ${fence}`).toMatch(new RegExp(`^\`\`\`${fence}\\n`, "m"));
      }
    }
  });

  it("Python: mypy, as the language host runs it (examples/python)", async () => {
    const dir = path.join(tmp, "python");
    const venv = await cachedVenv(path.join(repoRoot, "examples/python/requirements.txt"), await genSdk(dir, "python"));
    const files = blocks("python").map(({ name, code }) => {
      fs.writeFileSync(path.join(dir, `${name}.py`), code);
      return `${name}.py`;
    });
    expect(files.length).toBeGreaterThanOrEqual(PAGES_WITH_EXAMPLES.length);
    const mypy = await outcome(path.join(venv, "bin/python"), ["-m", "mypy", "--cache-dir", path.join(tmp, "mypy-cache"), ...files], dir);
    expect(mypy.output).toMatch(new RegExp(`^Success: no issues found in ${files.length} source files`, "m"));
    expect(mypy.code).toBe(0);
  });

  it("Go: go build, each block a program of the module that replaces the SDK's (examples/go)", async () => {
    const dir = path.join(tmp, "go");
    fs.mkdirSync(dir, { recursive: true });
    await genSdk(dir, "go");
    for (const f of ["go.mod", "go.sum"]) fs.copyFileSync(path.join(repoRoot, "examples/go", f), path.join(dir, f));
    const found = blocks("go");
    expect(found.length).toBeGreaterThanOrEqual(PAGES_WITH_EXAMPLES.length);
    for (const { name, code } of found) {
      fs.mkdirSync(path.join(dir, name));
      fs.writeFileSync(path.join(dir, name, "main.go"), code);
    }
    // The packages of the blocks only (the SDK is compiled as they import it), with the flags the Go host builds with.
    const build = await outcome("go", ["build", "-buildvcs=false", "-trimpath", ...found.map(({ name }) => `./${name}`)], dir, { GOFLAGS: "-mod=mod" });
    expect(build.output).toBe("");
    expect(build.code).toBe(0);
  });

  it("Java: Maven compiles them with the SDK (examples/java's pom.xml), each block in a package of its own", async () => {
    const dir = path.join(tmp, "java");
    fs.mkdirSync(dir, { recursive: true });
    // Pulumi's Java host generates it (built once and cached; CI builds it with the CLI).
    await run("bash", [path.join(repoRoot, "scripts/ensure-language-hosts"), "pulumi-language-java"], { maxBuffer: 64 << 20 });
    await genSdk(dir, "java", "--local");
    fs.copyFileSync(path.join(repoRoot, "examples/java/pom.xml"), path.join(dir, "pom.xml"));
    const found = blocks("java");
    expect(found.length).toBeGreaterThanOrEqual(PAGES_WITH_EXAMPLES.length);
    for (const { name, code } of found) {
      const pkg = path.join(dir, "src/main/java/docs", name);
      fs.mkdirSync(pkg, { recursive: true });
      // A block is a program's one class, without a package: each gets one, so their classes may share a name.
      fs.writeFileSync(path.join(pkg, "App.java"), `package docs.${name};\n\n${code}`);
    }
    const mvn = await outcome("mvn", ["-B", "-q", "-Dstyle.color=never", "compile"], dir);
    // Quiet but for the colour resets Debian's Maven prints anyway.
    expect(mvn.output.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g"), "")).toBe("");
    expect(mvn.code).toBe(0);
  });
});
