import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, startEmulator } from "../../../emulator";

const run = promisify(execFile);
const repoRoot = path.resolve(__dirname, "../../..");
let emu: Awaited<ReturnType<typeof startEmulator>>;
const workDirs: string[] = [];

/**
 * Exactly what pulumi.dynamic.Resource stores as `__provider`: the StoredFile module's provider
 * object serialized by plain Node from a program directory, with `pulumi-tuskr` laid out as given.
 */
async function serializedIn(layout: "installed" | "symlinked" | "unresolvable"): Promise<{ dir: string; text: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `tuskr-stub-${layout}-`));
  workDirs.push(dir);
  const modules = path.join(dir, "node_modules");
  fs.mkdirSync(path.join(modules, "@pulumi"), { recursive: true });
  if (layout === "symlinked") {
    // `npm link` or a file: dependency: the package's real path is outside any node_modules.
    fs.symlinkSync(repoRoot, path.join(modules, "pulumi-tuskr"), "dir");
  } else {
    // What `npm install pulumi-tuskr` leaves: a copy of the published files.
    fs.mkdirSync(path.join(modules, "pulumi-tuskr"));
    fs.cpSync(path.join(repoRoot, "package.json"), path.join(modules, "pulumi-tuskr", "package.json"));
    fs.cpSync(path.join(repoRoot, "dist"), path.join(modules, "pulumi-tuskr", "dist"), { recursive: true });
  }
  if (layout === "installed") {
    // @pulumi/pulumi beside it, as npm installs both, so the serializer can find the package by name.
    fs.cpSync(path.join(repoRoot, "node_modules/@pulumi/pulumi"), path.join(modules, "@pulumi/pulumi"), { recursive: true });
  }
  const serialize = `
    const pulumi = require("@pulumi/pulumi");
    const { StoredFile } = require("pulumi-tuskr");
    const provider = require("pulumi-tuskr/provider");
    pulumi.runtime
      .serializeFunction(() => provider, { allowSecrets: true })
      .then((f) => process.stdout.write(f.text));`;
  const env = { ...process.env, NODE_PATH: path.join(repoRoot, "node_modules") };
  const text = (await run(process.execPath, ["-e", serialize], { cwd: dir, env })).stdout;
  return { dir, text };
}

/** Loads the text back the way the dynamic-provider host does and runs every method. */
async function runLoadedBack(dir: string, text: string): Promise<void> {
  const blobId = (await emu.uploadFile({ content: Buffer.from(`stub test ${Math.random()}`), filename: "s.txt" })).blobId;
  emu.clearRequests();
  fs.writeFileSync(path.join(dir, "provider.txt"), text);
  // The host evaluates the text with require-from-string from the project directory.
  const script = `
    const requireFromString = require(${JSON.stringify(require.resolve("require-from-string", { paths: [path.dirname(require.resolve("@pulumi/pulumi"))] }))});
    const provider = requireFromString(require("fs").readFileSync("provider.txt", "utf8")).handler();
    (async () => {
      const config = { get: (k) => ({ "tuskr:apiKey": process.env.K, "tuskr:baseUrl": process.env.U })[k] };
      await provider.configure({ config });
      const checked = await provider.check({}, { blobId: process.env.B, tag: "one", retentionEpochs: 2 });
      const created = await provider.create(checked.inputs);
      const news = { blobId: process.env.B, tag: "two", retentionEpochs: 3 };
      const diff = await provider.diff(created.id, created.outs, news);
      const updated = await provider.update(created.id, created.outs, news);
      const read = await provider.read(created.id, updated.outs);
      await provider.delete(created.id, read.props);
      console.log(JSON.stringify({ checked, created, diff, updated, read }));
    })().catch((e) => { console.error(e.message); process.exit(1); });`;
  const { stdout } = await run(process.execPath, ["-e", script], {
    cwd: dir,
    env: { ...process.env, NODE_PATH: path.join(repoRoot, "node_modules"), K: EMULATOR_DEFAULT_API_KEY, U: emu.url, B: blobId },
  });
  // Notices (an expiring file) are printed before the result: the JSON is the last line.
  const result = JSON.parse(stdout.trim().split("\n").at(-1)!);
  expect(result.checked.failures).toEqual([]);
  expect(result.created.outs).toMatchObject({ blobId, tag: "one", retentionEpochs: 2 });
  expect(result.diff.changes).toBe(true);
  expect(result.updated.outs).toMatchObject({ tag: "two", retentionEpochs: 3 });
  expect(result.read.props).toMatchObject({ tag: "two", retentionEpochs: 3 });
  expect(
    emu
      .requests()
      .filter((r) => r.path.startsWith("/v1/files/"))
      .map((r) => r.route),
    // The create's renew learns the epoch's length (its record read after it); the update's counts in it.
  ).toEqual(["get", "patch", "renew", "get", "patch", "get", "renew", "get"]);
  // Stored for one epoch, declared 2 then 3 (from the adoption's epoch): 1 + 1 bought.
  expect(emu.files().find((f) => f.blobId === blobId)?.epochsBought).toBe(2);
}

const holdsNothingSecret = (text: string) => {
  expect(text).not.toContain(EMULATOR_DEFAULT_API_KEY);
  expect(text).not.toMatch(/https?:\/\//);
  expect(text).not.toMatch(/axios|zod|Bearer/);
};

beforeAll(async () => {
  if (!fs.existsSync(path.join(repoRoot, "dist/provider/impl.js"))) throw new Error("run `npm run build` first: the stub loads dist/ by package name");
  emu = await startEmulator({ port: 0 });
});
afterAll(async () => {
  await emu?.close();
  for (const dir of workDirs) fs.rmSync(dir, { recursive: true, force: true });
});

describe("the serialized __provider", () => {
  it("installed as a package: one require of pulumi-tuskr/provider, a few hundred bytes, and it runs", async () => {
    const { dir, text } = await serializedIn("installed");
    expect(text).toContain('require("pulumi-tuskr/provider")');
    expect(Buffer.byteLength(text)).toBeLessThan(400);
    holdsNothingSecret(text);
    await runLoadedBack(dir, text);
  });

  it("symlinked (npm link): the stub object by value, under 2 KB, loading the real code by name, and it runs", async () => {
    const { dir, text } = await serializedIn("symlinked");
    expect(text).toContain('require("pulumi-tuskr/impl")');
    expect(Buffer.byteLength(text)).toBeLessThan(2048);
    holdsNothingSecret(text);
    await runLoadedBack(dir, text);
  });

  it("when the serializer cannot resolve the package by name, the file path it writes is still exported, and it runs", async () => {
    const { dir, text } = await serializedIn("unresolvable");
    expect(text).toContain('require("pulumi-tuskr/dist/provider/stored-file-stub.js")');
    expect(Buffer.byteLength(text)).toBeLessThan(400);
    await runLoadedBack(dir, text);
  });
});
