import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator, type FaultConfig, type RequestLogEntry } from "../../../emulator";
import { FIXTURE, openStack, resourceName, type EngineStack } from "../../helpers/engine";
import { recordResult, sized, summarizeLog } from "../../helpers/reliability-results";

/**
 * Soak: many StoredFiles through the real engine while every route fails 20% of the time
 * (5xx, resets, 429s, changes applied and then the answer dropped). `pulumi up` is repeated
 * until it succeeds, bounded in runs and time; then the service must hold exactly what is
 * declared: tags, names, metadata, and each file stored until its declared end, not one epoch more.
 *
 * `npm test` runs 20 files; `npm run reliability` runs 200.
 */

const FILES = sized(20, 200);
const MAX_RUNS = 15;
const PHASE_LIMIT_MS = sized(4, 25) * 60_000;
const SEED = 4_242;
const KEY = `tsk_live_soak_${randomBytes(12).toString("hex")}`;
const FAULTS: FaultConfig = {
  seed: SEED,
  routes: { "*": { error5xxRate: 0.06, resetRate: 0.04, rateLimitRate: 0.04, applyThenDropRate: 0.06 } },
};

/**
 * At 20% the client's own retries absorb nearly everything, so a third phase fails reads and
 * renews far more often: ups do fail, and the next ones must finish from what was recorded.
 */
const HOSTILE: FaultConfig = {
  seed: SEED + 1,
  routes: {
    get: { error5xxRate: 0.35, resetRate: 0.25 },
    patch: { applyThenDropRate: 0.25, error5xxRate: 0.15 },
    renew: { applyThenDropRate: 0.35, error5xxRate: 0.15, resetRate: 0.1 },
  },
};

let emu: Emulator;
let rs: EngineStack;
const log: RequestLogEntry[] = [];
const harvest = () => {
  log.push(...emu.requests());
  emu.clearRequests();
};

beforeAll(async () => {
  emu = await startEmulator({ port: 0, seed: SEED, apiKeys: [KEY] });
  rs = await openStack(FIXTURE, { emu, apiKey: KEY });
});
afterAll(async () => {
  emu?.setFaults({});
  await rs?.dispose();
  await emu?.close();
});

type Decl = { blobId: string; name?: string; tag: string; metadata: Record<string, unknown>; retentionEpochs: number };

/** `pulumi up` until it succeeds: at most MAX_RUNS runs and PHASE_LIMIT_MS. */
async function upUntilSuccess(): Promise<{ runs: number; failedRuns: number; seconds: number; runSeconds: number[]; firstErrors: string[] }> {
  const t0 = Date.now();
  const runSeconds: number[] = [];
  const firstErrors: string[] = [];
  for (let run = 1; run <= MAX_RUNS; run++) {
    const result = await rs.up();
    harvest();
    runSeconds.push(result.seconds);
    if (result.ok) return { runs: run, failedRuns: run - 1, seconds: (Date.now() - t0) / 1000, runSeconds, firstErrors };
    const lines = result.output.split("\n");
    const line = lines.find((l) => /StoredFile ".*failed/.test(l)) ?? lines.find((l) => /error:/.test(l));
    if (firstErrors.length < 5 && line) firstErrors.push(line.trim().slice(0, 300));
    if (Date.now() - t0 > PHASE_LIMIT_MS) break;
  }
  throw new Error(`pulumi up did not succeed within ${MAX_RUNS} runs / ${PHASE_LIMIT_MS / 60_000} min: ${firstErrors.join(" | ")}`);
}

/** The service and the stack's state against the declaration; returns what differs. */
async function differences(declared: Record<string, Decl>): Promise<string[]> {
  const out: string[] = [];
  const files = new Map(emu.files().map((f) => [f.blobId, f]));
  for (const [name, d] of Object.entries(declared)) {
    const f = files.get(d.blobId);
    if (!f) {
      out.push(`${name}: not on the service`);
      continue;
    }
    if (f.tag !== d.tag) out.push(`${name}: tag ${f.tag} != ${d.tag}`);
    if (d.name !== undefined && f.name !== d.name) out.push(`${name}: name ${f.name} != ${d.name}`);
    if (JSON.stringify(sortKeys(f.metadata)) !== JSON.stringify(sortKeys(d.metadata)))
      out.push(`${name}: metadata ${JSON.stringify(f.metadata)} != ${JSON.stringify(d.metadata)}`);
    // Stored for one epoch before it was declared: the declared end lacks N - 1, exactly what is bought.
    const lacking = Math.max(0, d.retentionEpochs - 1);
    if (f.epochsBought !== lacking) out.push(`${name}: epochsBought ${f.epochsBought} != the ${lacking} the declared ${d.retentionEpochs} lack`);
  }
  const recorded = await rs.resources();
  const byName = new Map(recorded.map((r) => [resourceName(r.urn), r]));
  for (const [name, d] of Object.entries(declared)) {
    const r = byName.get(name);
    if (!r) out.push(`${name}: not in the stack's state`);
    else if (r.outputs.retentionEpochs !== d.retentionEpochs) out.push(`${name}: state retentionEpochs ${r.outputs.retentionEpochs} != ${d.retentionEpochs}`);
  }
  if (recorded.length !== Object.keys(declared).length) out.push(`state holds ${recorded.length} StoredFiles, ${Object.keys(declared).length} declared`);
  return out;
}

const sortKeys = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(sortKeys)
    : v && typeof v === "object"
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, sortKeys((v as any)[k])]),
        )
      : v;

describe(`soak: ${FILES} StoredFiles, 20% faults on every route, up until it succeeds`, () => {
  it("creates, then updates: the service ends exactly as declared, nothing bought twice, no key anywhere", async () => {
    const started = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < FILES; i++)
      ids.push((await emu.uploadFile({ content: `soak ${i} ${randomBytes(8).toString("hex")}`, filename: `f${i}.txt`, epochs: 1 })).blobId);

    const phases: Record<string, unknown>[] = [];
    const runPhase = async (phase: string, declared: Record<string, Decl>, faults: FaultConfig = FAULTS) => {
      await rs.declare(declared);
      emu.setFaults(faults);
      const from = log.length;
      const result = await upUntilSuccess();
      emu.setFaults({});
      const summary = summarizeLog(log.slice(from));
      const diff = await differences(declared);
      // Nothing left to do: the state equals the declaration (preview sends no request).
      const preview = await rs.preview();
      phases.push({
        phase,
        files: FILES,
        faults,
        ...result,
        requests: summary.requests,
        byRoute: summary.byRoute,
        faultsInjected: summary.faults,
        declaredEpochs: Object.values(declared).reduce((n, d) => n + d.retentionEpochs, 0),
        epochsLacking: Object.values(declared).reduce((n, d) => n + Math.max(0, d.retentionEpochs - 1), 0),
        epochsBought: emu.files().reduce((n, f) => n + f.epochsBought, 0),
        differences: diff,
        previewAfter: preview.changeSummary,
      });
      recordResult("soak", { files: FILES, seed: SEED, maxRuns: MAX_RUNS, faults: FAULTS, phases });
      expect(diff).toEqual([]);
      expect(preview.ok).toBe(true);
      expect(preview.changeSummary).toEqual({ same: FILES + 1 });
    };

    const first: Record<string, Decl> = {};
    ids.forEach((blobId, i) => {
      first[`f${i}`] = {
        blobId,
        ...(i % 3 === 0 ? { name: `file-${i}.txt` } : {}),
        tag: `soak-${i % 7}`,
        metadata: { index: i, group: `g${i % 4}`, drop: true, nested: { a: 1, b: [i] } },
        retentionEpochs: i % 6,
      };
    });
    await runPhase("create", first);

    const second: Record<string, Decl> = {};
    ids.forEach((blobId, i) => {
      const before = first[`f${i}`];
      const { drop: _drop, ...kept } = before.metadata;
      second[`f${i}`] = {
        ...before,
        tag: i % 2 === 0 ? `soak-${i % 7}-v2` : before.tag,
        metadata: i % 3 === 0 ? { ...kept, nested: { a: 2 }, added: `v2-${i}` } : before.metadata,
        retentionEpochs: before.retentionEpochs + (i % 8),
      };
    });
    await runPhase("update", second);

    const third: Record<string, Decl> = {};
    ids.forEach((blobId, i) => {
      const before = second[`f${i}`];
      third[`f${i}`] = { ...before, tag: `${before.tag}-v3`, retentionEpochs: before.retentionEpochs + 1 + (i % 5) };
    });
    await runPhase("hostile update (GET 60%, renew 60%, PATCH 40% faults)", third, HOSTILE);

    // The key, unique to this test, is nowhere: not in what any run printed (failed ones too),
    // not in the backend's files, not in `pulumi stack export` without --show-secrets.
    const exported = await rs.cli(["stack", "export"]);
    const places: Record<string, string> = {
      "stdout/stderr of every up and preview": rs.transcript.join("\n"),
      "backend files (checkpoints, history, backups)": rs.storedState(),
      "pulumi stack export": exported.stdout,
      "emulator request log": JSON.stringify(log),
    };
    const leaks = Object.entries(places)
      .filter(([, text]) => text.includes(KEY))
      .map(([where]) => where);
    recordResult("soak", { keyFoundIn: leaks, placesSearched: Object.keys(places), seconds: (Date.now() - started) / 1000 });
    expect(exported.code).toBe(0);
    expect(leaks).toEqual([]);
  });
});
