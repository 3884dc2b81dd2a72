#!/usr/bin/env node
// `npm run demo`: the whole product in one command, against the emulator, no account needed.
// Starts tuskr-emulator (its defaults: key, one-day epochs, a data directory), uploads the logo of
// examples/basic out of band (the program adopts it by blobId; it uploads the other two files
// itself, from `source`), runs `pulumi up` on that example, then its two steps (an edit, a
// renew), printing each preview's diff, and the files' final state on the service.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { copyProject, installProject, offlineEngineEnv } from "./offline-engine.mjs";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const example = path.join(repoRoot, "examples", "basic");
const { startEmulator, EMULATOR_DEFAULT_API_KEY } = await import(path.join(repoRoot, "dist/emulator/index.js"));
const { LocalWorkspace, PulumiCommand } = await import("@pulumi/pulumi/automation/index.js");

const say = (text) => console.log(`\n\u001b[1m▶ ${text}\u001b[0m`);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-demo-"));

say("Pulumi CLI (found on PATH, or built from its Go modules once and cached)");
const pulumiDir = execFileSync("bash", [path.join(repoRoot, "scripts/ensure-pulumi")], { stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" }).trim();
console.log(pulumiDir);

say("Installing examples/basic's dependencies (pulumi-tuskr packed from this checkout)");
await installProject(example, repoRoot);

say("Starting the emulator");
const dataDir = path.join(tmp, "emulator-data");
const emu = await startEmulator({ port: 0, dataDir });
console.log(`tuskr emulator on ${emu.url} (data: ${dataDir}, key: ${EMULATOR_DEFAULT_API_KEY})`);

let exitCode = 0;
try {
  say("Uploading examples/basic/files/logo.svg out of band (what `curl -F file=@… $URL/v1/files` does)");
  const blobIds = {};
  for (const [key, file] of [["logo", "logo.svg"]]) {
    const form = new FormData();
    form.append("file", new Blob([fs.readFileSync(path.join(example, "files", file))]), file);
    const res = await fetch(`${emu.url}/v1/files`, { method: "POST", headers: { authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}` }, body: form });
    const body = await res.json();
    if (!res.ok) throw new Error(`upload of ${file} failed: ${JSON.stringify(body)}`);
    blobIds[key] = body.blob_id;
    console.log(`${res.status} ${file.padEnd(12)} blob_id=${body.blob_id} expires_at=${body.expires_at}`);
  }

  // A copy of the example, so applying its steps never edits the repository.
  const workDir = path.join(tmp, "basic");
  copyProject(example, workDir);
  // Offline and self-contained: a file:// backend and a Pulumi home in the temp dir.
  const pulumiEnv = offlineEngineEnv({ pulumiDir, tmp, passphrase: "demo" });
  const stack = await LocalWorkspace.createOrSelectStack(
    { stackName: "demo", workDir },
    {
      pulumiCommand: await PulumiCommand.get({ root: path.dirname(pulumiDir) }),
      envVars: pulumiEnv,
    },
  );
  await stack.setConfig("tuskr:apiKey", { value: EMULATOR_DEFAULT_API_KEY, secret: true });
  await stack.setConfig("tuskr:baseUrl", { value: emu.url });
  for (const [key, id] of Object.entries(blobIds)) await stack.setConfig(`${key}BlobId`, { value: id });

  const requestsSince = (seq) =>
    emu
      .requests()
      .filter((r) => r.seq > seq && (r.path === "/v1/files" || r.path.startsWith("/v1/files/")))
      .map((r) =>
        `${r.method} ${r.route.padEnd(6)} ${r.blobId ? `${r.blobId.slice(0, 10)}…` : "(new)      "} ${r.requestBody ? JSON.stringify(r.requestBody) : ""}`.trimEnd(),
      );
  const lastSeq = () => emu.requests().at(-1)?.seq ?? 0;
  // From `preview --diff`: each changed StoredFile by name, with its changed properties.
  const diffLines = (stdout) => {
    const out = [];
    let inFile = false;
    let op = "";
    for (const line of stdout.split(/\n(?:--outputs:--|Resources:)/)[0].split("\n")) {
      const named = /\[urn=.*tuskr:StoredFile::(.+)\]/.exec(line);
      const typeLine = /: \(([\w-]+)\)$/.exec(line); // a resource's first line ends in its step
      if (typeLine) {
        op = typeLine[1];
        inFile = false;
      } else if (named) {
        out.push(`StoredFile ${named[1]}: ${op}`);
        inFile = true;
      } else if (inFile && /^\s+[~+-] /.test(line) && !/^\s+~ files: \{/.test(line)) out.push(`  ${line.trim()}`);
    }
    return out.join("\n");
  };

  // What a pipeline posts on the pull request: `pulumi preview --json | pulumi-tuskr summary`.
  const prSummary = () => {
    const json = execFileSync("pulumi", ["preview", "--json", "--stack", "demo", "--non-interactive"], {
      cwd: workDir,
      env: { ...process.env, ...pulumiEnv },
      encoding: "utf8",
      maxBuffer: 64 << 20,
      stdio: ["ignore", "pipe", "inherit"],
    });
    return execFileSync(process.execPath, [path.join(repoRoot, "dist/provider/cli/main.js"), "summary"], { input: json, encoding: "utf8" });
  };

  const apply = async (title, step) => {
    say(title);
    if (step) for (const f of fs.readdirSync(path.join(workDir, "steps", step))) fs.copyFileSync(path.join(workDir, "steps", step, f), path.join(workDir, f));
    if (step) console.log(`pull-request summary (pulumi preview --json | pulumi-tuskr summary):\n\n${prSummary()}`);
    const preview = await stack.preview({ diff: true });
    console.log(diffLines(preview.stdout) || "(no changes)");
    console.log("preview:", JSON.stringify(preview.changeSummary));
    const seq = lastSeq();
    const up = await stack.up();
    console.log("up:", JSON.stringify(up.summary.resourceChanges));
    console.log(`requests to the service during up:\n  ${requestsSince(seq).join("\n  ") || "(none)"}`);
  };

  await apply("pulumi up: adopt the logo (GET, PATCH what differs, renew), upload the handbook and the dataset (one upload each, PATCH the metadata)");
  await apply("steps/1-edit: re-tag the handbook, edit the dataset's metadata", "1-edit");
  await apply("steps/2-renew: raise retentionEpochs (logo 5 → 12, handbook 0 → 7)", "2-renew");

  say("The files on the service now");
  for (const f of emu.files()) {
    console.log(
      `${f.name.padEnd(12)} tag=${String(f.tag).padEnd(9)} uploadEpochs=${f.uploadEpochs} epochsBought=${String(f.epochsBought).padStart(2)} expiresAt=${f.expiresAt} metadata=${JSON.stringify(f.metadata)}`,
    );
  }

  say("pulumi destroy: no request (blobs cannot be deleted through the API; files keep their period)");
  const seq = lastSeq();
  const destroyed = await stack.destroy();
  console.log("destroy:", JSON.stringify(destroyed.summary.resourceChanges), `requests: ${requestsSince(seq).length}`);
  await stack.workspace.removeStack("demo");
} catch (e) {
  console.error(`\ndemo failed: ${e?.message ?? e}`);
  exitCode = 1;
} finally {
  await emu.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(exitCode);
