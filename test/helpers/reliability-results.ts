import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/**
 * Where the reliability tests leave what they measured, and how big they run.
 *
 * `npm test` runs every reliability test in its bounded ("ci") size and writes its measurements
 * to a temp directory nobody reads. `npm run reliability` (scripts/reliability.mjs) sets
 * TUSKR_RELIABILITY=full and TUSKR_RELIABILITY_OUT=<dir>, then renders RELIABILITY.md from the
 * JSON files found there: the report is never written by hand.
 */
type ReliabilityMode = "ci" | "full";

function reliabilityMode(): ReliabilityMode {
  return process.env.TUSKR_RELIABILITY === "full" ? "full" : "ci";
}

/** The bounded size in `npm test`, the large one under `npm run reliability`. */
export function sized<T>(ci: T, full: T): T {
  return reliabilityMode() === "full" ? full : ci;
}

function resultsDir(): string {
  return process.env.TUSKR_RELIABILITY_OUT || path.join(os.tmpdir(), "pulumi-tuskr-reliability");
}

/** Writes `<dir>/<name>.json` (merged into what an earlier test of the same file wrote). */
export function recordResult(name: string, data: Record<string, unknown>): void {
  const dir = resultsDir();
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.json`);
  let previous: Record<string, unknown> = {};
  try {
    previous = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    /* first write */
  }
  const merged = { ...previous, ...data, mode: reliabilityMode(), writtenAt: new Date().toISOString() };
  fs.writeFileSync(file, `${JSON.stringify(merged, null, 2)}\n`);
}

/** Counts of the emulator's request log: by route, by status, by injected fault. */
export function summarizeLog(log: ReadonlyArray<{ route: string; status: number; fault?: string }>): {
  requests: number;
  byRoute: Record<string, number>;
  byStatus: Record<string, number>;
  faults: Record<string, number>;
} {
  const byRoute: Record<string, number> = {};
  const byStatus: Record<string, number> = {};
  const faults: Record<string, number> = {};
  for (const entry of log) {
    byRoute[entry.route] = (byRoute[entry.route] ?? 0) + 1;
    byStatus[String(entry.status)] = (byStatus[String(entry.status)] ?? 0) + 1;
    if (entry.fault && entry.fault !== "latency") faults[entry.fault] = (faults[entry.fault] ?? 0) + 1;
  }
  return { requests: log.length, byRoute, byStatus, faults };
}
