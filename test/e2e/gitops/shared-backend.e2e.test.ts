import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parse } from "yaml";
import { EMULATOR_DEFAULT_API_KEY, type Emulator } from "../../../emulator";
import { GITOPS_PASSPHRASE, killTree, openStack, repoRoot, sharedEmulator, stopEmulator, type EngineStack } from "../../helpers/engine";
import { rewritingProxy } from "../../helpers/hostile-service";
import { freePort, type StateBackend, startPostgres, startS3 } from "../../helpers/state-backends";
import { copyProject, offlineEngineEnv } from "../../../scripts/offline-engine.mjs";

/**
 * examples/gitops as its workflow runs it, on a shared state backend started here: a PostgreSQL
 * cluster and an S3-compatible server, one each for the file. Each runner is a checkout of its
 * own (a copy of the example, its own Pulumi home) that runs tuskr-apply.yml's steps as written.
 * Runners on one stack meet at the backend's lock; the service must see each purchase and upload
 * once whatever the runners do.
 */

const example = path.join(repoRoot, "examples/gitops");
type Step = { name?: string; run?: string };
const applyJob = (parse(fs.readFileSync(path.join(example, ".github/workflows/tuskr-apply.yml"), "utf8")) as { jobs: { up: { steps: Step[] } } }).jobs.up;
const script = (name: RegExp) => applyJob.steps.find((s) => name.test(s.name ?? ""))!.run!;
const STEPS = { select: script(/^Select the stack/), apply: script(/^Apply/), alarm: script(/^Expiry alarm/) };
type StackName = "staging" | "production";
/** Epochs each stack keeps its files, as its committed Pulumi.<stack>.yaml says. */
const retention = (stack: StackName): number =>
  parse(fs.readFileSync(path.join(example, `Pulumi.${stack}.yaml`), "utf8")).config["tuskr-gitops:retentionEpochs"];
const RETENTION = { staging: retention("staging"), production: retention("production") };
const FILES = fs.readdirSync(path.join(example, "files")).sort();

/** A workflow step's environment on a runner (the job's own is the runner's: backend, passphrase). */
const stepEnv = (r: EngineStack) => ({ STACK: r.name, TUSKR_API_KEY: EMULATOR_DEFAULT_API_KEY, GITHUB_STEP_SUMMARY: path.join(r.workDir, "step-summary.md") });
/** Runs a step's script as GitHub does (`bash -e`), in the runner's checkout of examples/gitops. */
const step = (r: EngineStack, run: string) => r.run("bash", ["-e", "-c", run], { env: stepEnv(r) });
const printed = (ran: { stdout: string; stderr: string }) => ran.stdout + ran.stderr;

/** Polls `ready` every 100 ms until it holds; fails after `seconds`, or as soon as `gone` says the run it waits on ended. */
async function until(what: string, ready: () => boolean, gone: () => string | undefined = () => undefined, seconds = 240): Promise<void> {
  for (const deadline = Date.now() + seconds * 1000; !ready(); await new Promise((r) => setTimeout(r, 100))) {
    const ended = gone();
    if (ended !== undefined) throw new Error(`${what}: the run ended first:\n${ended}`);
    if (Date.now() > deadline) throw new Error(`${what}: not within ${seconds} s`);
  }
}

/** The service behind a gate: uploads wait at it until `open()`, so that a run is surely mid-`up`. */
async function gate(emu: Emulator) {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  let held = 0;
  const proxy = await rewritingProxy(emu.url, {
    async answer(method, p) {
      if (method === "POST" && p === "/v1/files") {
        held++;
        await opened;
      }
      return undefined;
    },
  });
  return { url: proxy.url, requests: proxy.requests, held: () => held, open, close: proxy.close };
}

/** Each of the example's files on the service: one entry per content, and how many epochs it is kept from its upload. */
function stored(emu: Emulator) {
  return FILES.map((name) => {
    const entries = emu.files().filter((f) => f.name === name);
    expect(entries, name).toHaveLength(1);
    const [f] = entries;
    return { name, epochs: f.endEpoch - f.startEpoch, uploadEpochs: f.uploadEpochs, epochsBought: f.epochsBought };
  });
}

const BACKENDS: Array<[StateBackend["kind"], () => Promise<StateBackend>]> = [
  ["postgres", startPostgres],
  ["s3", startS3],
];

afterAll(stopEmulator);

/** A step started in a process group of its own, to run beside others or be killed; `ended` is what it printed once it exits. */
function startStep(r: EngineStack, run: string) {
  const started = r.start("bash", ["-e", "-c", run], { env: stepEnv(r) });
  let ended: string | undefined;
  void started.exited.then(() => (ended = started.output()));
  return { ...started, ended: () => ended };
}
type StartedStep = ReturnType<typeof startStep>;

describe.each(BACKENDS)("examples/gitops and its workflow on a shared %s backend", (_kind, startBackend) => {
  let backend: StateBackend;
  let emu: Emulator;
  beforeAll(async () => {
    backend = await startBackend();
    emu = await sharedEmulator();
  });
  afterAll(async () => backend?.close());

  /** What a case opens, ended by `runCase` whatever happened. */
  interface Case {
    /** A runner's checkout of the example on `stack`; `joins` when another runner made the stack. */
    runner(stack: StackName, options?: { joins?: boolean; baseUrl?: string }): Promise<EngineStack>;
    /** The workflow's step started on a runner, not awaited. */
    start(r: EngineStack, run: string): StartedStep;
    gate(): ReturnType<typeof gate>;
  }

  /**
   * Runs a case on a fresh service. Then, whatever happened: gates open, steps still running
   * killed and their locks cancelled, runners disposed (each stack's maker last: it destroys the
   * stack). The case's own failure is the one reported, not a clean-up that failed because of it.
   */
  async function runCase(body: (c: Case) => Promise<void>): Promise<void> {
    await emu.reset();
    const runners: EngineStack[] = [];
    const steps: StartedStep[] = [];
    const gates: Array<Awaited<ReturnType<typeof gate>>> = [];
    const cleanUp = async () => {
      emu.setFaults({});
      for (const g of gates) g.open();
      const running = steps.filter((s) => s.ended() === undefined);
      for (const s of running) killTree(s.pid);
      await Promise.all(steps.map((s) => s.exited));
      if (running.length > 0) for (const r of runners) await r.cli(["cancel", "--yes"]);
      for (const r of [...runners].reverse()) await r.dispose();
      for (const g of gates) await g.close();
    };
    try {
      await body({
        async runner(stack, options = {}) {
          const r = await openStack("examples/gitops", { backend, stackName: stack, passphrase: GITOPS_PASSPHRASE, emu, ...options });
          runners.push(r);
          return r;
        },
        start(r, run) {
          const s = startStep(r, run);
          steps.push(s);
          return s;
        },
        async gate() {
          const g = await gate(emu);
          gates.push(g);
          return g;
        },
      });
    } catch (e) {
      await cleanUp().catch((cleanup: unknown) => process.stderr.write(`runCase: clean-up after a failure also failed: ${String(cleanup)}\n`));
      throw e;
    }
    await cleanUp();
  }

  it("every runner encrypts with the committed salt: a secret one sets, another decrypts", () =>
    runCase(async ({ runner }) => {
      const a = await runner("staging");
      const b = await runner("staging", { joins: true });
      for (const r of [a, b]) expect((await step(r, STEPS.select)).code).toBe(0);
      const stackFile = (r: EngineStack) => path.join(r.workDir, "Pulumi.staging.yaml");
      // A's secret, as A's checkout holds it, read by B.
      await a.exec("pulumi", ["config", "set", "--secret", "probe", "decrypted by the other runner", "--stack", "staging"]);
      const ciphertext = parse(fs.readFileSync(stackFile(a), "utf8")).config["tuskr-gitops:probe"];
      const bFile = parse(fs.readFileSync(stackFile(b), "utf8"));
      bFile.config["tuskr-gitops:probe"] = ciphertext;
      fs.writeFileSync(stackFile(b), JSON.stringify(bFile));
      const read = await b.cli(["config", "get", "probe"]);
      expect(read.stdout.trim(), printed(read)).toBe("decrypted by the other runner");
      // Both with the salt the repository keeps, which the stack's state records too.
      const committed = parse(fs.readFileSync(path.join(example, "Pulumi.staging.yaml"), "utf8")).encryptionsalt;
      expect(committed, "examples/gitops/Pulumi.staging.yaml: encryptionsalt").toMatch(/^v1:/);
      for (const r of [a, b]) expect(parse(fs.readFileSync(stackFile(r), "utf8")).encryptionsalt).toBe(committed);
      const state = JSON.parse((await a.cli(["stack", "export"])).stdout);
      expect(state.deployment.secrets_providers).toEqual({ type: "passphrase", state: { salt: committed } });
    }));

  it("a merge and a manual run at once: staging's second runner is refused by the lock while production applies; nothing uploaded or bought twice", () =>
    runCase(async ({ runner, start, gate }) => {
      // A gate per stack holds its uploads: every run is surely mid-`up` when the next one starts,
      // and staging's uploads reach the service first, so production's find staging's shorter end.
      const gates = { staging: await gate(), production: await gate() };
      const a = await runner("staging", { baseUrl: gates.staging.url });
      const p = await runner("production", { baseUrl: gates.production.url });
      const second = await runner("staging", { joins: true, baseUrl: gates.staging.url });
      for (const r of [a, p, second]) expect((await step(r, STEPS.select)).code).toBe(0);
      const runs = [start(a, STEPS.apply), start(p, STEPS.apply)];
      const firstEnded = () => runs.map((r) => r.ended()).find((e) => e !== undefined);
      await until("both stacks' uploads held", () => gates.staging.held() + gates.production.held() === 2 * FILES.length, firstEnded);

      const seen = gates.staging.requests.length + gates.production.requests.length;
      const refused = await step(second, STEPS.apply);
      expect(refused.code).not.toBe(0);
      expect(printed(refused)).toMatch(/the stack is currently locked by 1 lock\(s\).*`pulumi cancel`/s);
      expect(gates.staging.requests.length + gates.production.requests.length, "requests while the second runner was refused").toBe(seen);

      gates.staging.open();
      await until("staging's uploads stored", () => emu.files().length === FILES.length, firstEnded);
      gates.production.open();
      for (const run of runs) expect((await run.exited).code, run.output()).toBe(0);
      // Each entry ends at production's end, each epoch bought once: staging's upload, then
      // production's renews of the rest (one file's in two: the epoch length's probe, then the rest).
      for (const f of stored(emu))
        expect(f).toMatchObject({ epochs: RETENTION.production, uploadEpochs: RETENTION.staging, epochsBought: RETENTION.production - RETENTION.staging });

      // The refused runner's next run, once the first is done, finds everything as declared: reads only.
      emu.clearRequests();
      const again = await step(second, STEPS.apply);
      expect(again.code, printed(again)).toBe(0);
      expect(emu.requests().filter((r) => r.method !== "GET")).toEqual([]);
      const alarm = await step(second, STEPS.alarm);
      expect(alarm.stdout, printed(alarm)).toMatch(/No file ends within 1 epoch\(s\)/);
    }));

  it("a runner killed mid-up: the other is refused, runs `pulumi cancel` and `up`, and converges with nothing bought twice", () =>
    runCase(async ({ runner, start }) => {
      const a = await runner("staging");
      const b = await runner("staging", { joins: true });
      for (const r of [a, b]) expect((await step(r, STEPS.select)).code).toBe(0);
      // Both uploads applied by the service, neither answered, when the runner dies.
      emu.setFaults({ script: FILES.map(() => ({ route: "upload" as const, fault: "apply-then-hang" as const })) });
      const killed = start(a, STEPS.apply);
      await until("both uploads held", () => emu.inFlight().filter((r) => r.held).length === FILES.length, killed.ended);
      killTree(killed.pid);
      expect((await killed.exited).signal).toBe("SIGKILL");
      emu.setFaults({});

      const locked = await step(b, STEPS.apply);
      expect(locked.code).not.toBe(0);
      expect(printed(locked)).toMatch(/the stack is currently locked by 1 lock\(s\).*`pulumi cancel`/s);
      expect((await b.cli(["cancel", "--yes"])).code).toBe(0);
      const recovered = await step(b, STEPS.apply);
      expect(recovered.code, printed(recovered)).toBe(0);
      for (const f of stored(emu)) expect(f).toMatchObject({ epochs: RETENTION.staging, uploadEpochs: RETENTION.staging, epochsBought: 0 });
      // Converged: the next run reads and writes nothing.
      emu.clearRequests();
      const again = await step(b, STEPS.apply);
      expect(again.code, printed(again)).toBe(0);
      expect(emu.requests().filter((r) => r.method !== "GET")).toEqual([]);
    }));
});

/** docs/gitops.md's `sh` block that contains `marker`. */
function docsBlock(marker: string): string {
  const blocks = [...fs.readFileSync(path.join(repoRoot, "docs/gitops.md"), "utf8").matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
  const found = blocks.filter((b) => b.includes(marker));
  expect(found, `docs/gitops.md: one sh block with ${marker}`).toHaveLength(1);
  return found[0];
}

describe("docs/gitops.md, copied", () => {
  // Each backend's try-it block (its fixed port swapped for a free one), then the block that makes
  // the salts one's own, in a checkout of the example; the servers the blocks start are stopped
  // on exit (the trap), whatever happened.
  it.each([
    [
      "postgres",
      "initdb",
      "5433",
      'if [ -n "$dir" ]; then runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D "$dir/data" -m immediate stop; rm -rf "$dir"; fi',
    ],
    ["s3", "moto.server", "5000", ""],
  ])("the %s backend's block, then the salt's block, run as written", async (_kind, marker, port, stop) => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-docs-"));
    try {
      const workDir = path.join(tmp, "gitops");
      copyProject(example, workDir);
      const free = await freePort();
      const script = [
        `trap 'kill $(jobs -p) 2> /dev/null || true; ${stop}' EXIT`,
        docsBlock(marker).split(port).join(String(free)),
        docsBlock("sed -i '/^encryptionsalt:/d'"),
        "pulumi config set --secret tuskr:apiKey tsk_test_docs --stack production",
        'echo "decrypted: $(pulumi config get tuskr:apiKey --stack production)"',
      ].join("\n");
      const env = { ...process.env, ...offlineEngineEnv({ pulumiDir: inject("pulumiDir"), tmp, passphrase: "unused", isolated: true }) };
      const ran = await new Promise<{ code: number; out: string }>((resolve) =>
        execFile("bash", ["-e", "-c", script], { cwd: workDir, env, timeout: 120_000 }, (error, stdout, stderr) =>
          resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
        ),
      );
      expect(ran.code, ran.out).toBe(0);
      expect(ran.out).toContain("decrypted: tsk_test_docs");
      for (const stack of ["staging", "production"]) {
        const salt = (name: string) => parse(fs.readFileSync(path.join(name, `Pulumi.${stack}.yaml`), "utf8")).encryptionsalt;
        expect(salt(workDir)).toMatch(/^v1:/);
        expect(salt(workDir)).not.toBe(salt(example));
      }
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
});
