import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator, type FaultConfig, type RequestLogEntry, type ScriptedFault } from "../../../emulator";
import type { StoredFileProvider } from "../../../provider/dynamic/stored-file-provider";
import { patchFile, renewFile } from "../../helpers/emulator";
import { EngineStack, type StepRecord } from "../../helpers/provider-driver";
import { recordResult, sized, summarizeLog } from "../../helpers/reliability-results";
import { configuredProvider } from "../../helpers/provider-fixture";
import { DEFAULT_RETRY_POLICY } from "../../../provider/client/retry";

/**
 * Nothing bought twice, nothing lost: the provider's create/update path, driven the way the
 * engine drives it (see ../helpers/provider-driver.ts), against an in-process emulator with faults on.
 * It needs no Pulumi CLI: the emulator over HTTP is all it drives, so it is an integration test.
 */

const SEED = 20_241_122;
/** Uploaded for this many epochs: more than the expiry-warning window, well inside the horizon. */
const UPLOAD_EPOCHS = 5;
/** The most a sequence declares in all: UPLOAD_EPOCHS + this stays under the 53-epoch horizon. */
const MAX_TOTAL = 45;
/** `pulumi up` re-runs per step before a sequence counts as given up. */
const MAX_RUNS = 10;

let emu: Emulator;
let retries = 0;
let provider: StoredFileProvider;

/**
 * A provider as the engine's would be, its client counting retries (and, for scripted runs, short
 * backoff), on a stack that knows the service's epoch: what faults cost, not what learning it costs
 * (test/integration/properties/crash-safety.test.ts covers a renew in doubt while it is learnt).
 */
/** How long the client's trip holds requests back (twice its longest retry wait): a run it held is rerun after it. */
let holdMs = 0;

async function configure(maxConcurrency: number, retry?: Record<string, number>): Promise<void> {
  holdMs = 2 * (retry?.maxDelayMs ?? DEFAULT_RETRY_POLICY.maxDelayMs) + 50;
  const settings = { "tuskr:maxConcurrency": String(maxConcurrency), "tuskr:epochSeconds": String(emu.epochSeconds) };
  provider = await configuredProvider(emu, settings, { onRetry: () => void retries++, ...(retry ? { retry } : {}) });
}

/** A sequence: the first `up` creates with r0 epochs, each later one raises retentionEpochs. */
interface Sequence {
  steps: Array<{ epochs: number; retag: boolean }>;
}

const sequenceArb: fc.Arbitrary<Sequence> = fc
  .record({
    r0: fc.integer({ min: 0, max: 8 }),
    raises: fc.array(fc.record({ by: fc.integer({ min: 1, max: 12 }), retag: fc.boolean() }), { minLength: 2, maxLength: 5 }),
  })
  .map(({ r0, raises }) => {
    const steps = [{ epochs: r0, retag: true }];
    let total = r0;
    for (const { by, retag } of raises) {
      if (total + by > MAX_TOTAL) break;
      total += by;
      steps.push({ epochs: total, retag });
    }
    return { steps };
  });

interface SequenceReport {
  steps: number;
  runs: number;
  outcomes: Record<string, number>;
  violations: string[];
  gaveUp: boolean;
  /** Why it gave up: the sequence, its step and the runs of that step. */
  gaveUpAt?: string;
}

/**
 * Runs one sequence on a fresh file; checks the epochs bought after every step that succeeded.
 * The clock does not move during a sequence, so the declared end is the upload's epoch plus the
 * declared epochs, and what it lacks of the upload's period is all there is to buy.
 */
async function runSequence(seq: Sequence, label: string, maxRuns = MAX_RUNS): Promise<SequenceReport> {
  const file = await emu.uploadFile({ content: `${label} ${Math.random()}`, filename: `${label}.txt`, epochs: UPLOAD_EPOCHS });
  const stack = new EngineStack(provider);
  const report: SequenceReport = { steps: 0, runs: 0, outcomes: {}, violations: [], gaveUp: false };
  const bought = () => emu.files().find((f) => f.blobId === file.blobId)!.epochsBought;
  for (const [i, step] of seq.steps.entries()) {
    const declared = { blobId: file.blobId, tag: step.retag ? `tag-${i}` : (stack.get("f")?.inputs.tag ?? "tag-0"), retentionEpochs: step.epochs };
    const { runs: ups, done } = await stack.upUntilDone({ f: declared }, maxRuns, { holdMs });
    // One resource: each up is one step.
    const runs = ups.flatMap((u) => u.steps);
    report.steps++;
    report.runs += runs.length;
    for (const r of runs) report.outcomes[`${r.op}:${r.outcome}`] = (report.outcomes[`${r.op}:${r.outcome}`] ?? 0) + 1;
    const now = bought();
    const needed = Math.max(0, step.epochs - UPLOAD_EPOCHS);
    if (now > needed) report.violations.push(`${label} step ${i}: bought ${now} > the ${needed} the declared ${step.epochs} lack (${describeRuns(runs)})`);
    if (!done) {
      report.gaveUp = true;
      report.gaveUpAt = `${label} step ${i} (${seq.steps.map((s) => s.epochs).join("→")}): ${describeRuns(runs)}`;
      return report;
    }
    if (now !== needed)
      report.violations.push(`${label} step ${i}: bought ${now} != the ${needed} the declared ${step.epochs} lack, after success (${describeRuns(runs)})`);
    const state = stack.get("f")?.state;
    if (state?.retentionEpochs !== step.epochs) {
      report.violations.push(`${label} step ${i}: state says ${String(state?.retentionEpochs)}, declared ${step.epochs}`);
    }
  }
  return report;
}

const describeRuns = (runs: StepRecord[]) => runs.map((r) => `${r.op}:${r.outcome}${r.error ? ` [${r.error.slice(0, 160)}]` : ""}`).join(" → ");

/** Runs `fn` over `items`, at most `width` at a time. */
async function pool<T, R>(items: T[], width: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i], i);
      }
    }),
  );
  return out;
}

/** Collects the request log as it grows (the emulator keeps 10,000 entries). */
function logHarvester() {
  const kept: RequestLogEntry[] = [];
  return {
    harvest() {
      kept.push(...emu.requests());
      emu.clearRequests();
    },
    entries: () => kept,
  };
}

beforeAll(async () => {
  emu = await startEmulator({ port: 0, seed: SEED });
});
afterAll(async () => {
  await emu?.close();
});

const PROFILES: Array<{ name: string; faults: FaultConfig; maxRuns?: number }> = [
  {
    name: "apply-then-drop on renew",
    faults: { routes: { renew: { applyThenDropRate: 0.3 }, "*": { error5xxRate: 0.05 } } },
  },
  {
    name: "5xx and resets everywhere",
    faults: { routes: { "*": { error5xxRate: 0.12, resetRate: 0.08 }, renew: { error5xxRate: 0.1, resetRate: 0.1, applyThenDropRate: 0.1 } } },
  },
  {
    name: "429 mix",
    faults: { routes: { "*": { rateLimitRate: 0.05, error5xxRate: 0.05, resetRate: 0.05, applyThenDropRate: 0.05 } } },
  },
  {
    name: "flaky read-backs (GET fails half the time)",
    faults: {
      routes: { get: { error5xxRate: 0.3, resetRate: 0.2 }, patch: { applyThenDropRate: 0.2 }, renew: { applyThenDropRate: 0.25, error5xxRate: 0.1 } },
    },
  },
  {
    // Read-backs fail often enough that renews end RENEW_OUTCOME_UNKNOWN and ups fail for real:
    // the engine's partial-state and plain-failure paths, many times over.
    name: "hostile (GET fails 60%, renew and PATCH apply-then-drop)",
    faults: {
      routes: {
        get: { error5xxRate: 0.35, resetRate: 0.25 },
        patch: { applyThenDropRate: 0.25, error5xxRate: 0.15 },
        renew: { applyThenDropRate: 0.35, error5xxRate: 0.15, resetRate: 0.1 },
      },
    },
    maxRuns: 30,
  },
];

describe("renew sequences under faults: every file ends exactly at its declared end", () => {
  it("random fault mixes, sequences run concurrently through one shared client", async () => {
    const total = sized(200, 1000);
    const started = Date.now();
    const sequences = fc.sample(sequenceArb, { numRuns: total, seed: SEED });
    const profiles: Record<string, unknown>[] = [];
    const violations: string[] = [];
    let gaveUp = 0;
    const gaveUpAt: string[] = [];
    const log = logHarvester();
    retries = 0;
    await configure(8);
    for (const [p, profile] of PROFILES.entries()) {
      const part = sequences.filter((_, i) => i % PROFILES.length === p);
      await emu.reset();
      emu.setFaults({ seed: SEED + p, ...profile.faults });
      const retriesBefore = retries;
      const partLog = logHarvester();
      const timer = setInterval(() => {
        partLog.harvest();
      }, 2_000);
      const t0 = Date.now();
      const reports = await pool(part, 16, (seq, i) => runSequence(seq, `p${p}-s${i}`, profile.maxRuns));
      clearInterval(timer);
      partLog.harvest();
      emu.setFaults({});
      log.entries().push(...partLog.entries());
      const outcomes: Record<string, number> = {};
      for (const r of reports) for (const [k, v] of Object.entries(r.outcomes)) outcomes[k] = (outcomes[k] ?? 0) + v;
      violations.push(...reports.flatMap((r) => r.violations));
      gaveUp += reports.filter((r) => r.gaveUp).length;
      gaveUpAt.push(...reports.flatMap((r) => (r.gaveUpAt ? [`${profile.name}: ${r.gaveUpAt}`] : [])));
      const summary = summarizeLog(partLog.entries());
      profiles.push({
        profile: profile.name,
        faults: profile.faults,
        sequences: part.length,
        maxRunsPerStep: profile.maxRuns ?? MAX_RUNS,
        steps: reports.reduce((n, r) => n + r.steps, 0),
        ups: reports.reduce((n, r) => n + r.runs, 0),
        declaredEpochs: part.reduce((n, s) => n + s.steps.at(-1)!.epochs, 0),
        epochsLacking: part.reduce((n, s) => n + Math.max(0, s.steps.at(-1)!.epochs - UPLOAD_EPOCHS), 0),
        epochsBought: emu.files().reduce((n, f) => n + f.epochsBought, 0),
        renewsSent: summary.byRoute.renew ?? 0,
        requests: summary.requests,
        faultsInjected: summary.faults,
        clientRetries: retries - retriesBefore,
        outcomes,
        gaveUp: reports.filter((r) => r.gaveUp).length,
        violations: reports.flatMap((r) => r.violations).length,
        seconds: (Date.now() - t0) / 1000,
      });
    }
    const all = summarizeLog(log.entries());
    recordResult("renew-sequences", {
      random: {
        seed: SEED,
        sequences: total,
        maxRunsPerStep: MAX_RUNS,
        concurrency: 16,
        maxConcurrency: 8,
        requests: all.requests,
        renewsSent: all.byRoute.renew ?? 0,
        faultsInjected: all.faults,
        clientRetries: retries,
        gaveUp,
        violations,
        profiles,
        seconds: (Date.now() - started) / 1000,
      },
    });
    expect(violations).toEqual([]);
    expect(gaveUpAt).toEqual([]);
    expect(gaveUp).toBe(0);
  }, 900_000);

  it("scripted faults per request (fast-check property, shrinkable): the same invariant", async () => {
    const numRuns = sized(100, 400);
    const faultArb = fc.constantFrom<"none" | "5xx" | "reset" | "apply-then-drop">("none", "none", "5xx", "reset", "apply-then-drop");
    const scriptArb = fc.record({
      renew: fc.array(faultArb, { maxLength: 12 }),
      get: fc.array(faultArb, { maxLength: 16 }),
      patch: fc.array(faultArb, { maxLength: 8 }),
    });
    const toScript = (s: Record<"renew" | "get" | "patch", string[]>): ScriptedFault[] =>
      (["renew", "get", "patch"] as const).flatMap((route) =>
        s[route].map((f) => (f === "none" ? { route, fault: "latency" as const, latencyMs: 0 } : { route, fault: f as ScriptedFault["fault"] })),
      );
    retries = 0;
    await configure(8, { baseDelayMs: 1, maxDelayMs: 5 });
    await emu.reset();
    const log = logHarvester();
    const outcomes: Record<string, number> = {};
    let runs = 0;
    let sequences = 0;
    await fc.assert(
      fc.asyncProperty(sequenceArb, scriptArb, async (seq, script) => {
        emu.setFaults({ script: toScript(script) });
        sequences++;
        const report = await runSequence(seq, `scripted-${sequences}`);
        emu.setFaults({});
        log.harvest();
        runs += report.runs;
        for (const [k, v] of Object.entries(report.outcomes)) outcomes[k] = (outcomes[k] ?? 0) + v;
        expect(report.violations).toEqual([]);
        expect(report.gaveUp).toBe(false);
      }),
      { numRuns, seed: SEED },
    );
    const all = summarizeLog(log.entries());
    recordResult("renew-sequences", {
      scripted: {
        seed: SEED,
        sequences,
        ups: runs,
        requests: all.requests,
        renewsSent: all.byRoute.renew ?? 0,
        faultsInjected: all.faults,
        clientRetries: retries,
        outcomes,
      },
    });
  }, 900_000);
});

describe("what a failure must never lose", () => {
  /**
   * A file stored for one epoch; this stack declares 2, then someone else renews it by
   * `outOfBand` epochs, then the stack raises retentionEpochs to 6 and that renew is refused with
   * a 503 (not applied). Ups until done; returns where the file ends and what was recorded.
   */
  const renewAfterOutOfBandRenewal = async (outOfBand: number) => {
    await configure(8, { baseDelayMs: 1, maxDelayMs: 5 });
    await emu.reset();
    const first = emu.currentEpoch();
    const file = await emu.uploadFile({ content: `stale ${outOfBand} ${Math.random()}`, epochs: 1 });
    const stack = new EngineStack(provider);
    expect((await stack.upUntilDone({ f: { blobId: file.blobId, retentionEpochs: 2 } }, 1)).done).toBe(true);
    expect((await renewFile(emu, file.blobId, { epochs: outOfBand })).status).toBe(200);
    emu.setFaults({ script: [{ route: "renew", fault: "5xx" }] });
    const { done } = await stack.upUntilDone({ f: { blobId: file.blobId, retentionEpochs: 6 } }, MAX_RUNS);
    emu.setFaults({});
    expect(done).toBe(true);
    // The declared end is 6 epochs from the adoption; the other party's epochs count toward it.
    const expectedEnd = Math.max(first + 6, first + 2 + outOfBand);
    const end = emu.files()[0].endEpoch;
    return {
      test: "test/integration/properties/reliability.test.ts",
      expectedEndEpoch: expectedEnd,
      endEpoch: end,
      epochsLost: expectedEnd - end,
      recordedRetentionEpochs: stack.get("f")?.state.retentionEpochs,
    };
  };

  // The read-back must not take a renewal made elsewhere since the last up for this stack's purchase.
  it("an ambiguous renew after someone else renewed the file still reaches the declared end", async () => {
    retries = 0;
    const result = await renewAfterOutOfBandRenewal(3);
    expect(result.endEpoch).toBe(result.expectedEndEpoch);
  });

  // Someone else bought past the declared end: nothing to buy.
  it("after someone else renewed the file past the declared end, nothing is bought", async () => {
    const result = await renewAfterOutOfBandRenewal(5);
    expect(result.endEpoch).toBe(result.expectedEndEpoch);
    expect(emu.files()[0].epochsBought).toBe(1 + 5);
  });

  // While metadata is unmanaged the state holds none: the plan must start from what the service holds.
  it("declaring metadata that was unmanaged makes the stored metadata exactly the declared one in one up", async () => {
    await configure(8, { baseDelayMs: 1, maxDelayMs: 5 });
    await emu.reset();
    const file = await emu.uploadFile({ content: `meta ${Math.random()}`, epochs: UPLOAD_EPOCHS });
    const stack = new EngineStack(provider);
    expect((await stack.upUntilDone({ f: { blobId: file.blobId, tag: "t" } }, 1)).done).toBe(true);
    // Metadata set outside the stack while the stack does not manage it.
    await patchFile(emu, file.blobId, { metadata: { legacy: true } });
    const declared = { team: "web" };
    expect((await stack.upUntilDone({ f: { blobId: file.blobId, tag: "t", metadata: declared } }, 1)).done).toBe(true);
    const stored = emu.files()[0].metadata;
    expect(stored).toEqual(declared);
  });
});
