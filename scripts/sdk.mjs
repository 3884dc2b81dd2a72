#!/usr/bin/env node
// Builds the tuskr SDK for one language from this checkout, versioned as package.json is:
//
//   npm run sdk:python   a wheel, sdks/python/dist/pulumi_tuskr-<version>-py3-none-any.whl
//   npm run sdk:go       a Go module, sdks/go (go.mod, go.sum; compiled)
//
// `node scripts/sdk.mjs <python|go> [--out DIR]`; DIR defaults to sdks/. Only the artifact's path
// goes to stdout; progress goes to stderr. Needs a build (`npm run build`: the schema comes from
// dist/), the Pulumi CLI with the language's host on PATH (`pulumi package gen-sdk` generates the
// code), and python3 with pip, or Go. The SDK is generated from the schema the plugin serves, so
// it is the one `pulumi package gen-sdk ./node_modules/pulumi-tuskr` gives a user.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const say = (message) => process.stderr.write(`sdk: ${message}\n`);
const fail = (message) => {
  say(message);
  process.exit(1);
};

const { positionals, values } = parseArgs({ allowPositionals: true, options: { out: { type: "string", default: path.join(root, "sdks") } } });
const [language] = positionals;
if (positionals.length !== 1 || !["python", "go"].includes(language)) fail("usage: node scripts/sdk.mjs <python|go> [--out DIR]");
const out = path.resolve(values.out);

/** Runs a command, its output on stderr; fails naming it. */
function run(file, args, cwd) {
  try {
    execFileSync(file, args, { cwd, stdio: ["ignore", process.stderr, process.stderr] });
  } catch (e) {
    fail(`${file} ${args.join(" ")} failed${e.code === "ENOENT" ? `: no ${file} on PATH` : ""}`);
  }
}

const built = path.join(root, "dist/provider/plugin/schema.js");
if (!fs.existsSync(built)) fail(`${path.relative(root, built)} is missing: run \`npm run build\` first`);
const schema = createRequire(import.meta.url)(built).packageSchema();
fs.mkdirSync(out, { recursive: true });
const schemaFile = path.join(out, "schema.json");
fs.writeFileSync(schemaFile, `${JSON.stringify(schema, null, 2)}\n`);

// A fresh directory: files a rename left behind would ship otherwise.
const dir = path.join(out, language);
fs.rmSync(dir, { recursive: true, force: true });
say(`generating the ${language} SDK of tuskr ${schema.version} into ${dir}`);
run("pulumi", ["package", "gen-sdk", schemaFile, "--language", language, "--out", out], out);

if (language === "python") {
  const wheels = path.join(dir, "dist");
  run(process.env.PYTHON ?? "python3", ["-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "--quiet", "--wheel-dir", wheels, dir], dir);
  const wheel = fs.readdirSync(wheels).find((f) => f.startsWith(`pulumi_tuskr-${schema.version}-`) && f.endsWith(".whl"));
  if (!wheel) fail(`no pulumi_tuskr-${schema.version} wheel in ${wheels}`);
  process.stdout.write(`${path.join(wheels, wheel)}\n`);
} else {
  // go.mod comes from the generator (the schema's supportPack), which asks for an older Pulumi Go
  // SDK than the one this repository builds and tests with (scripts/ensure-pulumi's pin, also
  // examples/go's): that one, so the module is what was tested. tidy writes go.sum.
  const pin = /^PINNED_VERSION=(\S+)$/m.exec(fs.readFileSync(path.join(root, "scripts/ensure-pulumi"), "utf8"))?.[1];
  if (!pin) fail("scripts/ensure-pulumi has no PINNED_VERSION");
  run("go", ["mod", "edit", `-require=github.com/pulumi/pulumi/sdk/v3@v${pin}`], dir);
  say("go mod tidy, then go build: the first build compiles Pulumi's Go SDK (2–3 minutes on 2 cores; cached after)");
  run("go", ["mod", "tidy"], dir);
  run("go", ["build", "./..."], dir);
  process.stdout.write(`${dir}\n`);
}
