import { execFile, execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The npm package as users get it: `npm pack`'s tarball, installed into an empty project with
 * only its runtime dependencies (and the @pulumi/pulumi the project brings), must work there,
 * and its type declarations must resolve under node16 and bundler resolution (attw).
 * Installs come from npm's local cache first (`npm ci` filled it).
 */
const repoRoot = path.resolve(__dirname, "../../..");
const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8"));
const sdkVersion = JSON.parse(fs.readFileSync(path.join(repoRoot, "node_modules/@pulumi/pulumi/package.json"), "utf8")).version as string;
let tmp: string;
let tarball: string;
let project: string;
/**
 * npm runs asynchronously: installs take tens of seconds, and a vitest worker blocked past 60 s
 * without reaching its event loop fails the run ("Timeout calling onTaskUpdate") though every
 * test passed — seen in CI on a slower machine, where this file's synchronous calls added up to 61 s.
 */
const npm = async (args: string[], cwd: string) =>
  (await promisify(execFile)("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })).stdout;

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-pack-"));
  const packed = JSON.parse(await npm(["pack", "--json", "--pack-destination", tmp], repoRoot))[0];
  tarball = path.join(tmp, packed.filename);
  project = path.join(tmp, "project");
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "empty-project", private: true }));
  await npm(["install", "--prefer-offline", tarball, `@pulumi/pulumi@${sdkVersion}`], project);
}, 300_000);
afterAll(async () => {
  // Several installed projects: seconds to remove on a busy machine.
  await fs.promises.rm(tmp, { recursive: true, force: true });
}, 300_000);

describe("the packed package", () => {
  it("ships dist/, the README, the CHANGELOG, the LICENSE and PulumiPlugin.yaml, and no sources or tests", () => {
    const listing = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" }).split("\n");
    for (const f of [
      "package/LICENSE",
      "package/README.md",
      "package/CHANGELOG.md",
      "package/PulumiPlugin.yaml",
      "package/dist/provider/index.js",
      "package/dist/provider/index.d.ts",
    ]) {
      expect(listing).toContain(f);
    }
    expect(listing.filter((f) => /^package\/(test|provider|emulator|api)\//.test(f) || f.endsWith(".test.ts"))).toEqual([]);
    expect(fs.readFileSync(path.join(project, "node_modules/pulumi-tuskr/LICENSE"), "utf8")).toMatch(/Apache License\s+Version 2\.0/);
  });

  it("takes @pulumi/pulumi from the project (a peer), so the project holds one copy of the SDK", () => {
    expect(pkg.dependencies["@pulumi/pulumi"]).toBeUndefined();
    expect(pkg.peerDependencies["@pulumi/pulumi"]).toBe(">=3.248.0 <4");
    const copies = execFileSync("find", [path.join(project, "node_modules"), "-path", "*/@pulumi/pulumi/package.json", "-not", "-path", "*/vendor/*"], {
      encoding: "utf8",
    })
      .split("\n")
      .filter(Boolean);
    expect(copies).toEqual([path.join(project, "node_modules/@pulumi/pulumi/package.json")]);
  });

  it("installs only its runtime dependencies", () => {
    const installed = fs.readdirSync(path.join(project, "node_modules")).filter((d) => !d.startsWith("."));
    for (const dev of Object.keys(pkg.devDependencies).filter((d) => d !== "@pulumi/pulumi" && !d.startsWith("@types/"))) {
      expect(installed, dev).not.toContain(dev.split("/")[0]);
    }
  });

  it("works there: the library, the emulator and the client talk, and both commands run", () => {
    const script = `
      const { StoredFile, TuskrClient, LIMITS } = require("pulumi-tuskr");
      const { startEmulator, EMULATOR_DEFAULT_API_KEY } = require("pulumi-tuskr/emulator");
      (async () => {
        const emu = await startEmulator({ port: 0 });
        try {
          const file = await emu.uploadFile({ content: "packed", filename: "p.txt" });
          const client = new TuskrClient({ apiKey: EMULATOR_DEFAULT_API_KEY, baseUrl: emu.url });
          const updated = await client.updateFile(file.blobId, { tag: "from-the-tarball" });
          console.log(JSON.stringify({ storedFile: typeof StoredFile, nameMax: LIMITS.nameMaxLength, tag: updated.tag }));
        } finally { await emu.close(); }
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const out = execFileSync(process.execPath, ["-e", script], { cwd: project, encoding: "utf8" });
    expect(JSON.parse(out)).toEqual({ storedFile: "function", nameMax: 256, tag: "from-the-tarball" });
    const bin = (name: string) => path.join(project, "node_modules/.bin", name);
    expect(spawnSync(bin("tuskr-emulator"), ["--help"], { encoding: "utf8" }).stdout).toMatch(/Usage: tuskr-emulator/);
    const summary = spawnSync(bin("pulumi-tuskr"), ["summary"], {
      input: JSON.stringify({ steps: [{ op: "same", urn: "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev" }] }),
      encoding: "utf8",
    });
    expect(summary.stdout).toMatch(/No StoredFile changes/);
  });

  it("its type declarations resolve under node16 and bundler resolution (attw)", () => {
    const attw = spawnSync(path.join(repoRoot, "node_modules/.bin/attw"), [tarball, "--format", "table-flipped"], { cwd: repoRoot, encoding: "utf8" });
    expect(attw.stdout).not.toMatch(/💀|❗|🐛|⚠️/);
    expect(attw.status, attw.stdout + attw.stderr).toBe(0);
  });
});

describe("installed from a git URL, as docs/installation-configuration.md says until the package is published", () => {
  it("npm install git+file://…#<commit> builds it (prepare) and it loads", async () => {
    // A repository of the checkout as it is (CI's second leg runs from a copy without .git).
    const repo = path.join(tmp, "repo");
    fs.mkdirSync(repo);
    execFileSync("bash", [
      "-c",
      `tar -C "${repoRoot}" --exclude=./node_modules --exclude=./dist --exclude=./.git --exclude='*/node_modules' -cf - . | tar -C "${repo}" -xf -`,
    ]);
    const git = (...args: string[]) =>
      execFileSync("git", ["-c", "user.name=test", "-c", "user.email=test@example.invalid", ...args], { cwd: repo, encoding: "utf8" }).trim();
    git("init", "-q");
    git("add", "-A");
    git("commit", "-q", "-m", "checkout");
    const commit = git("rev-parse", "HEAD");
    const fromGit = path.join(tmp, "from-git");
    fs.mkdirSync(fromGit);
    fs.writeFileSync(path.join(fromGit, "package.json"), JSON.stringify({ name: "from-git", private: true }));
    await npm(["install", "--prefer-offline", `git+file://${repo}#${commit}`, `@pulumi/pulumi@${sdkVersion}`], fromGit);
    const out = execFileSync(process.execPath, ["-e", 'const t = require("pulumi-tuskr"); console.log(typeof t.StoredFile, typeof t.StoredFolder)'], {
      cwd: fromGit,
      encoding: "utf8",
    });
    expect(out.trim()).toBe("function function");
    expect(fs.existsSync(path.join(fromGit, "node_modules/pulumi-tuskr/dist/provider/plugin/main.js"))).toBe(true);
  }, 600_000);
});

describe("an example copied out of the repository", () => {
  it("declares no dependency on a path that only exists inside this repository", () => {
    for (const example of fs.readdirSync(path.join(repoRoot, "examples"))) {
      const manifest = path.join(repoRoot, "examples", example, "package.json");
      if (!fs.existsSync(manifest)) continue;
      const deps = { ...JSON.parse(fs.readFileSync(manifest, "utf8")).dependencies, ...JSON.parse(fs.readFileSync(manifest, "utf8")).devDependencies };
      const outside = Object.entries(deps).filter(([, spec]) => /^(file|link):\.\./.test(String(spec)));
      expect(outside, `examples/${example}/package.json`).toEqual([]);
    }
  });

  it("examples/basic installs with the tarball (as its README says) and type-checks against it", async () => {
    const copy = path.join(tmp, "basic-copy");
    fs.cpSync(path.join(repoRoot, "examples/basic"), copy, { recursive: true, filter: (src) => path.basename(src) !== "node_modules" });
    await npm(["install", "--prefer-offline", tarball], copy);
    const tsc = spawnSync(path.join(copy, "node_modules/.bin/tsc"), ["--noEmit", "-p", copy], { encoding: "utf8" });
    expect(tsc.stdout + tsc.stderr).toBe("");
    expect(tsc.status).toBe(0);
    const dep = JSON.parse(fs.readFileSync(path.join(copy, "package.json"), "utf8")).dependencies["pulumi-tuskr"];
    expect(dep).toMatch(/pulumi-tuskr-0\.1\.0\.tgz$/);
  }, 300_000);
});
