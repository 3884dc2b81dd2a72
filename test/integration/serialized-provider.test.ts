import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, startEmulator } from "../../emulator";

const run = promisify(execFile);
const repoRoot = path.resolve(__dirname, "../..");
let emu: Awaited<ReturnType<typeof startEmulator>>;
let workDir: string;
let text: string;

beforeAll(async () => {
  if (!fs.existsSync(path.join(repoRoot, "dist/provider/impl.js"))) throw new Error("run `npm run build` first: the stub loads dist/ by package name");
  emu = await startEmulator({ port: 0 });
  // A project directory as a user has it: the package installed under node_modules by name.
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-stub-"));
  fs.mkdirSync(path.join(workDir, "node_modules"));
  fs.symlinkSync(repoRoot, path.join(workDir, "node_modules", "pulumi-tuskr"), "dir");
  // Exactly what pulumi.dynamic.Resource stores as __provider, serialized by plain Node in a
  // program directory from the compiled package, as a user's program does it.
  const serialize = `
    const pulumi = require("@pulumi/pulumi");
    const { storedFileProviderStub } = require(require("path").resolve("node_modules/pulumi-tuskr/dist/provider/stored-file-stub.js"));
    pulumi.runtime
      .serializeFunction(() => storedFileProviderStub, { allowSecrets: true })
      .then((f) => process.stdout.write(f.text));`;
  text = (await run(process.execPath, ["-e", serialize], { cwd: workDir, env: { ...process.env, NODE_PATH: path.join(repoRoot, "node_modules") } })).stdout;
});
afterAll(async () => {
  await emu?.close();
  if (workDir) fs.rmSync(workDir, { recursive: true, force: true });
});

describe("the serialized __provider", () => {
  it("is a small stub that holds no key, no URL and no client code", () => {
    expect(Buffer.byteLength(text)).toBeLessThan(2048);
    expect(text).not.toContain(EMULATOR_DEFAULT_API_KEY);
    expect(text).not.toMatch(/https?:\/\//);
    expect(text).not.toMatch(/axios|zod|Bearer/);
    expect(text).toContain('require("pulumi-tuskr/impl")');
  });

  it("loaded back the way the dynamic-provider host does, runs create/update/read against the emulator", async () => {
    const blobId = (await emu.uploadFile({ content: Buffer.from("stub test"), filename: "s.txt" })).blobId;
    fs.writeFileSync(path.join(workDir, "provider.txt"), text);
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
        console.log(JSON.stringify({ checked, created, diff, updated, read }));
      })().catch((e) => { console.error(e.message); process.exit(1); });`;
    const { stdout } = await run(process.execPath, ["-e", script], {
      cwd: workDir,
      env: { ...process.env, K: EMULATOR_DEFAULT_API_KEY, U: emu.url, B: blobId },
    });
    // Notices (an expiring file) are printed before the result: the JSON is the last line.
    const result = JSON.parse(stdout.trim().split("\n").at(-1)!);
    expect(result.checked.failures).toEqual([]);
    expect(result.created.outs).toMatchObject({ blobId, tag: "one", retentionEpochs: 2 });
    expect(result.diff.changes).toBe(true);
    expect(result.updated.outs).toMatchObject({ tag: "two", retentionEpochs: 3 });
    expect(result.read.props).toMatchObject({ tag: "two", retentionEpochs: 3 });
    expect(emu.requests().filter((r) => r.path.startsWith("/v1/files/")).map((r) => r.route)).toEqual(["get", "patch", "renew", "patch", "renew", "get"]);
    expect(emu.files().find((f) => f.blobId === blobId)?.epochsBought).toBe(3);
  });
});
