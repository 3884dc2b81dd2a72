import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { startEmulator } from "../../../emulator";
import { repoRoot, withStack } from "../../helpers/engine";
import { offlineEngineEnv } from "../../../scripts/offline-engine.mjs";
import { goName, pythonName } from "../../../provider/docs/names";

/**
 * `pulumi package gen-sdk` against the plugin as a user points Pulumi at it (its directory, as
 * installed from npm): SDKs for Python, Go, Java, .NET and Node.js, each carrying package.json's
 * version (the version its resources ask the engine for). The Python SDK and examples/python are
 * byte-compiled, the Node.js SDK type-checked. The documented commands build a wheel
 * (`npm run sdk:python`), which a fresh project installs with pip and runs, and a Go module
 * (`npm run sdk:go`, compiled).
 */
const run = promisify(execFile);
let tmp: string;
let env: Record<string, string>;
const plugin = path.join(repoRoot, "examples/yaml/node_modules/pulumi-tuskr");
const version = (JSON.parse(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { version: string }).version;

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-sdks-"));
  env = { ...process.env, ...offlineEngineEnv({ pulumiDir: inject("pulumiDir"), tmp, passphrase: "sdk", extraPath: [inject("languageHostsDir")] }) } as Record<
    string,
    string
  >;
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** `pulumi package gen-sdk <source>`: the plugin's directory, or a schema file; `flags` after the others. */
async function genSdk(language: string, source = plugin, ...flags: string[]): Promise<string> {
  const out = path.join(tmp, "sdk");
  await run(path.join(inject("pulumiDir"), "pulumi"), ["package", "gen-sdk", source, "--language", language, "--out", out, ...flags], {
    env,
    cwd: tmp,
    maxBuffer: 64 << 20,
  });
  return path.join(out, language);
}

/** The documented command, `npm run sdk:<language> -- --out <dir>`: the artifact it built (its stdout). */
async function buildSdk(language: "python" | "go"): Promise<string> {
  const out = path.join(tmp, "built");
  const built = await run("npm", ["run", "--silent", `sdk:${language}`, "--", "--out", out], {
    cwd: repoRoot,
    env: { ...env, GONOSUMDB: "github.com/pulumi" },
    maxBuffer: 64 << 20,
  });
  return built.stdout.trim();
}

const read = (...parts: string[]) => fs.readFileSync(path.join(...parts), "utf8");

const filesUnder = (dir: string, ext: string): string[] =>
  fs
    .readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(ext))
    .map((f) => path.join(dir, f));

describe("SDKs generated from the plugin's schema", () => {
  it("the plugin's schema carries package.json's version", async () => {
    const schema = JSON.parse(
      (await run(path.join(inject("pulumiDir"), "pulumi"), ["package", "get-schema", plugin], { env, cwd: tmp, maxBuffer: 64 << 20 })).stdout,
    );
    expect(schema.version).toBe(version);
  });

  it("Go: generated with package.json's version, its go.mod written", async () => {
    const dir = await genSdk("go");
    const pkg = path.join(dir, "tuskr");
    const source = read(pkg, "storedFile.go");
    expect(source).toMatch(/type StoredFile struct/);
    expect(source).toMatch(/Metadata\s+pulumi\.MapOutput/);
    // The version its resources ask the engine for (the provider `default_<version>`).
    expect(read(pkg, "internal/pulumiUtilities.go")).toContain(`semver.MustParse("${version}")`);
    expect(JSON.parse(read(pkg, "pulumi-plugin.json"))).toMatchObject({ name: "tuskr", version });
    expect(read(dir, "go.mod")).toMatch(/^module github\.com\/pulumi-tuskr\/pulumi-tuskr\/sdk\/go$/m);
  });

  it("Go: `npm run sdk:go` builds the module (go.mod, go.sum), compiled against the Pulumi Go SDK", async () => {
    const dir = await buildSdk("go");
    expect(read(dir, "go.mod")).toMatch(/^module github\.com\/pulumi-tuskr\/pulumi-tuskr\/sdk\/go$/m);
    expect(read(dir, "go.mod")).toMatch(/github\.com\/pulumi\/pulumi\/sdk\/v3 v3\.274\.1/);
    expect(read(dir, "go.sum")).toMatch(/^github\.com\/pulumi\/pulumi\/sdk\/v3 v3\.274\.1 h1:/m);
    expect(read(dir, "tuskr/internal/pulumiUtilities.go")).toContain(`semver.MustParse("${version}")`);
    // Compiled by the script; built again here, from its go.mod and go.sum alone.
    const built = await run("go", ["build", "./..."], { cwd: dir, env: { ...env, GOFLAGS: "-mod=readonly -buildvcs=false" }, maxBuffer: 64 << 20 });
    expect(built.stderr).toBe("");
  });

  it("Python: generated with package.json's version, byte-compiles, and so does examples/python against it", async () => {
    const dir = await genSdk("python");
    const module = path.join(dir, "pulumi_tuskr");
    expect(fs.readFileSync(path.join(module, "stored_file.py"), "utf8")).toMatch(/class StoredFile\(pulumi\.CustomResource\)/);
    // pip's version, and the one its resources ask the engine for.
    expect(/^\s*version = "([^"]*)"$/m.exec(read(dir, "pyproject.toml"))?.[1]).toBe(version);
    expect(/def get_version\(\):\s+return "([^"]*)"/.exec(read(module, "_utilities.py"))?.[1]).toBe(version);
    expect(JSON.parse(read(module, "pulumi-plugin.json"))).toMatchObject({ name: "tuskr", version });
    const sources = [...filesUnder(dir, ".py"), path.join(repoRoot, "examples/python/__main__.py")];
    const compiled = await run("python3", ["-m", "py_compile", ...sources], { env });
    expect(compiled.stderr).toBe("");
    // The example uses the names the SDK defines.
    const example = fs.readFileSync(path.join(repoRoot, "examples/python/__main__.py"), "utf8");
    expect(example).toMatch(/tuskr\.StoredFile\(/);
    const init = fs.readFileSync(path.join(module, "stored_file.py"), "utf8");
    for (const arg of ["blob_id", "source", "retention_epochs", "keep_alive", "metadata"]) {
      expect(init).toContain(`${arg}: pulumi.Input[Optional[`);
      if (example.includes(`${arg}=`)) expect(init).toContain(arg);
    }
  });

  it("Python: `npm run sdk:python` builds a wheel of package.json's version, which a project pip-installs and runs; a 0.0.0 stack upgrades in place", async () => {
    const wheel = await buildSdk("python");
    expect(path.basename(wheel)).toBe(`pulumi_tuskr-${version}-py3-none-any.whl`);
    // The SDK an earlier release's users generated: the same schema without supportPack, which
    // gen-sdk versions 0.0.0 (its resources ask for the provider `default_0_0_0`).
    const schema = JSON.parse(read(tmp, "built", "schema.json"));
    delete schema.meta.supportPack;
    delete schema.language.python.pyproject;
    fs.writeFileSync(path.join(tmp, "previous-schema.json"), JSON.stringify(schema));
    const previous = await genSdk("python", path.join(tmp, "previous-schema.json"));
    const emu = await startEmulator({ port: 0 });
    const logo = (await emu.uploadFile({ content: `wheel ${Math.random()}`, filename: "logo.svg" })).blobId;
    // examples/python in a virtualenv of its own: the earlier SDK, then the wheel.
    await withStack(
      "examples/python",
      async (s) => {
        const providers = async () =>
          (JSON.parse((await s.cli(["stack", "export"])).stdout).deployment.resources as Array<{ type: string; urn: string }>)
            .filter((r) => r.type === "pulumi:providers:tuskr")
            .map((r) => r.urn.split("::").pop());
        const pip = (...args: string[]) => s.exec("venv/bin/pip", [...args, "--quiet", "--disable-pip-version-check"]);
        await s.exec("python3", ["-m", "venv", "venv"]);
        await pip("install", "-r", "requirements.txt", previous);
        const first = await s.up();
        expect(first.changes, first.output).toEqual({ create: 4 });
        expect(await providers()).toEqual(["default_0_0_0"]);

        await pip("install", wheel);
        expect((await s.exec("venv/bin/pip", ["show", "pulumi_tuskr"])).stdout).toContain(`\nVersion: ${version}\n`);
        emu.clearRequests();
        const upgraded = await s.up();
        // The files stay as they are, under the provider of this version: nothing written.
        expect(upgraded.changes, upgraded.output).toEqual({ same: 4 });
        expect(emu.requests().filter((r) => r.route !== "get")).toEqual([]);
        expect(await providers()).toEqual([`default_${version.replaceAll(".", "_")}`]);
      },
      { emu, config: { logoBlobId: logo } },
    ).finally(() => emu.close());
  });

  it("each property's Python and Go name in docs/ (provider/docs/names.ts) is the one the generated SDKs give it", async () => {
    const schema = JSON.parse(
      (await run(path.join(inject("pulumiDir"), "pulumi"), ["package", "get-schema", plugin], { env, cwd: tmp, maxBuffer: 64 << 20 })).stdout,
    ) as {
      resources: Record<string, { inputProperties: object; properties: object }>;
      types: Record<string, { properties: object }>;
      functions: Record<string, { inputs: { properties: object }; outputs: { properties: object } }>;
    };
    const names = new Set([
      ...Object.values(schema.resources).flatMap((r) => [...Object.keys(r.inputProperties), ...Object.keys(r.properties)]),
      ...Object.values(schema.types).flatMap((t) => Object.keys(t.properties)),
      ...Object.values(schema.functions).flatMap((f) => [...Object.keys(f.inputs.properties), ...Object.keys(f.outputs.properties)]),
    ]);
    // Python: each getter names the schema's property it reads (`@pulumi.getter(name="blobId")`) unless the two are spelled alike.
    const python = new Map<string, string>();
    for (const f of filesUnder(await genSdk("python"), ".py")) {
      for (const m of read(f).matchAll(/@pulumi\.getter(?:\(name="(\w+)"\))?\n\s+def (\w+)\(self\)/g)) python.set(m[1] ?? m[2], m[2]);
    }
    // Go: each struct field carries its schema name in its tag (`BlobId pulumi.StringInput \`pulumi:"blobId"\``).
    const go = new Map<string, string>();
    for (const f of filesUnder(await genSdk("go"), ".go")) {
      for (const m of read(f).matchAll(/^\t(\w+) +[^\n`]*`pulumi:"(\w+)"/gm)) go.set(m[2], m[1]);
    }
    for (const name of names) {
      expect([name, pythonName(name)]).toEqual([name, python.get(name)]);
      expect([name, goName(name)]).toEqual([name, go.get(name)]);
    }
    expect(names.size).toBeGreaterThan(20);
  });

  it("Java: generated with package.json's version", async () => {
    // Pulumi's Java host generates it (built once and cached; CI builds it with the CLI).
    await run("bash", [path.join(repoRoot, "scripts/ensure-language-hosts"), "pulumi-language-java"], { maxBuffer: 64 << 20 });
    // As a Gradle project, whose build writes version.txt from this version.
    expect(read(await genSdk("java"), "build.gradle")).toMatch(new RegExp(`\\? "${version.replaceAll(".", "\\.")}"`));
    // With --local (examples/java: Maven compiles it), version.txt itself.
    const local = await genSdk("java", plugin, "--local");
    expect(read(local, "src/main/resources/com/pulumi/tuskr/version.txt").trim()).toBe(version);
  });

  it(".NET: generated", async () => {
    // The .NET generator downloads the package's logo (logoUrl, else Pulumi's from GitHub) and
    // this machine has no network: the plugin's schema, as `pulumi package get-schema` gives it,
    // with the logo served on loopback.
    const schema = JSON.parse(
      (await run(path.join(inject("pulumiDir"), "pulumi"), ["package", "get-schema", plugin], { env, cwd: tmp, maxBuffer: 64 << 20 })).stdout,
    );
    expect(schema).toMatchObject({ name: "tuskr", resources: { "tuskr:index:StoredFile": expect.anything() } });
    const server = http.createServer((_, res) => res.end(Buffer.from("89504e470d0a1a0a", "hex")));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const schemaFile = path.join(tmp, "schema.json");
    fs.writeFileSync(schemaFile, JSON.stringify({ ...schema, logoUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/logo.png` }));
    // The .NET host only generates this SDK: ensured here, not for the whole tier (built once and
    // cached; CI builds it alongside the tier, and this waits for that build).
    await run("bash", [path.join(repoRoot, "scripts/ensure-language-hosts"), "pulumi-language-dotnet"], { maxBuffer: 64 << 20 });
    const dir = await genSdk("dotnet", schemaFile).finally(() => server.close());
    expect(fs.readFileSync(path.join(dir, "StoredFile.cs"), "utf8")).toMatch(/public partial class StoredFile : global::Pulumi\.CustomResource/);
  });

  it("Node.js: generated with package.json's version, and it type-checks", async () => {
    const dir = await genSdk("nodejs");
    expect(fs.readFileSync(path.join(dir, "storedFile.ts"), "utf8")).toMatch(/export class StoredFile extends pulumi\.CustomResource/);
    expect(JSON.parse(read(dir, "package.json")).version).toBe(version);
    // Type-check with this checkout's TypeScript, against the @pulumi/pulumi the generated code
    // needs: the code generator of CLI 3.274.1 calls pulumi.runtime.existsResource (in `exists`),
    // which @pulumi/pulumi has since 3.269.0 (on Node ≥ 22), newer than this checkout's oldest
    // supported 3.248.0. (npm only warns that this Node is older than that package asks: tsc runs none of it.)
    await run(
      "npm",
      ["install", "--no-save", "--no-package-lock", "--no-audit", "--no-fund", "--loglevel=error", "@pulumi/pulumi@>=3.269.0 <4", "@types/node@20"],
      {
        cwd: dir,
        env,
        maxBuffer: 64 << 20,
      },
    );
    const tsc = path.join(repoRoot, "node_modules/typescript/bin/tsc");
    const checked = await run(process.execPath, [tsc, "-p", path.join(dir, "tsconfig.json"), "--noEmit"], { cwd: dir, env }).catch(
      (e: { stdout: string }) => e,
    );
    expect(checked.stdout).toBe("");
  });
});
