import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { repoRoot } from "../../helpers/engine";
import { offlineEngineEnv } from "../../../scripts/offline-engine.mjs";

/**
 * `pulumi package gen-sdk` against the plugin as a user points Pulumi at it (its directory, as
 * installed from npm): SDKs for Python, Go, .NET and Node.js. The Go SDK is compiled, the
 * Python SDK and examples/python byte-compiled, the Node.js SDK type-checked.
 */
const run = promisify(execFile);
let tmp: string;
let env: Record<string, string>;
const plugin = path.join(repoRoot, "examples/yaml/node_modules/pulumi-tuskr");

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-sdks-"));
  env = { ...process.env, ...offlineEngineEnv({ pulumiDir: inject("pulumiDir"), tmp, passphrase: "sdk", extraPath: [inject("languageHostsDir")] }) } as Record<
    string,
    string
  >;
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** `pulumi package gen-sdk <source>`: the plugin's directory, or a schema file. */
async function genSdk(language: string, source = plugin): Promise<string> {
  const out = path.join(tmp, "sdk");
  await run(path.join(inject("pulumiDir"), "pulumi"), ["package", "gen-sdk", source, "--language", language, "--out", out], {
    env,
    cwd: tmp,
    maxBuffer: 64 << 20,
  });
  return path.join(out, language);
}

const filesUnder = (dir: string, ext: string): string[] =>
  fs
    .readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(ext))
    .map((f) => path.join(dir, f));

describe("SDKs generated from the plugin's schema", () => {
  it("Go: generated, and it compiles against the Pulumi Go SDK", async () => {
    const dir = await genSdk("go");
    const pkg = path.join(dir, "tuskr");
    const source = fs.readFileSync(path.join(pkg, "storedFile.go"), "utf8");
    expect(source).toMatch(/type StoredFile struct/);
    expect(source).toMatch(/Metadata\s+pulumi\.MapOutput/);
    // A module around the generated package, with the SDK version the CLI was built from.
    fs.writeFileSync(
      path.join(dir, "go.mod"),
      "module github.com/pulumi-tuskr/pulumi-tuskr/sdk/go\n\ngo 1.25.11\n\nrequire github.com/pulumi/pulumi/sdk/v3 v3.274.1\n",
    );
    const goEnv = { ...env, GONOSUMDB: "github.com/pulumi", GOFLAGS: "-mod=mod -buildvcs=false" };
    await run("go", ["mod", "tidy"], { cwd: dir, env: goEnv, maxBuffer: 64 << 20 });
    const built = await run("go", ["build", "./..."], { cwd: dir, env: goEnv, maxBuffer: 64 << 20 });
    expect(built.stderr).toBe("");
  });

  it("Python: generated, byte-compiles, and so does examples/python against it", async () => {
    const dir = await genSdk("python");
    const module = path.join(dir, "pulumi_tuskr");
    expect(fs.readFileSync(path.join(module, "stored_file.py"), "utf8")).toMatch(/class StoredFile\(pulumi\.CustomResource\)/);
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

  it("Node.js: generated, and it type-checks", async () => {
    const dir = await genSdk("nodejs");
    expect(fs.readFileSync(path.join(dir, "storedFile.ts"), "utf8")).toMatch(/export class StoredFile extends pulumi\.CustomResource/);
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
