import { ERRORS, emulatorError, jsonKind } from "./errors";

/**
 * Fault injection for the /v1 routes, off unless configured. Two sources, in this order:
 *
 * 1. `script`: entries taken in order; a request uses the first entry that still has `times`
 *    left and whose route matches it (or is "*"), and uses it up by one.
 * 2. random rates per route: `latencyMs` delays every request of the route; then one number
 *    drawn from a seeded generator (mulberry32) picks at most one of reset, 5xx, 429 and
 *    apply-then-drop in proportion to their rates. The same seed and the same sequence of
 *    requests always give the same faults.
 *
 * Rates for a route are its own, field by field, else those of "*".
 */

export const FAULT_ROUTES = ["upload", "get", "patch", "renew"] as const;
export type FaultRoute = (typeof FAULT_ROUTES)[number];
export type FaultRouteSelector = FaultRoute | "*";
export const FAULT_KINDS = ["5xx", "429", "reset", "apply-then-drop", "latency", "hang", "apply-then-hang"] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
type FaultStatus = 500 | 503;

export interface RouteFaultRates {
  /** Answer 5xx without applying the request. */
  error5xxRate?: number;
  /** Status of random 5xx faults: 503 SERVICE_UNAVAILABLE (default) or 500 INTERNAL_ERROR. */
  error5xxStatus?: FaultStatus;
  /** Answer 429 RATE_LIMIT_EXCEEDED without applying the request. */
  rateLimitRate?: number;
  /** Retry-After of injected 429s, in seconds (default 1). */
  retryAfterSeconds?: number;
  /** Delay before every request of the route is handled. */
  latencyMs?: number;
  /** Destroy the connection without applying the request or answering. */
  resetRate?: number;
  /** Apply the request and persist it, then destroy the connection without answering. */
  applyThenDropRate?: number;
}

export interface ScriptedFault {
  route: FaultRouteSelector;
  /** Only requests for this file (default: any). */
  blobId?: string;
  /**
   * `hang`: hold the request, never apply it, never answer (until the client goes away).
   * `apply-then-hang`: apply and persist it, then hold the answer the same way. They stand for
   * a client killed while its request is in flight, before or after the service acted on it.
   */
  fault: FaultKind;
  /** How many matching requests get this fault (default 1). */
  times?: number;
  status?: FaultStatus;
  retryAfterSeconds?: number;
  latencyMs?: number;
}

export interface FaultConfig {
  /** Seed of the random faults; default: the emulator's seed. */
  seed?: number;
  routes?: Partial<Record<FaultRouteSelector, RouteFaultRates>>;
  script?: ScriptedFault[];
}

export interface FaultDecision {
  kind: FaultKind;
  /** Delay before handling; with a kind other than "latency" it adds to that fault. */
  latencyMs: number;
  status?: FaultStatus;
  retryAfterSeconds?: number;
}

/** mulberry32: a small seeded generator of numbers in [0, 1). */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const RATE_KEYS = ["error5xxRate", "rateLimitRate", "resetRate", "applyThenDropRate"] as const;
const RATE_FIELDS = [...RATE_KEYS, "error5xxStatus", "retryAfterSeconds", "latencyMs"] as const;
const SCRIPT_FIELDS = ["route", "blobId", "fault", "times", "status", "retryAfterSeconds", "latencyMs"] as const;
const DEFAULT_RETRY_AFTER_SECONDS = 1;
const DEFAULT_SCRIPTED_LATENCY_MS = 1000;

export class FaultInjector {
  private config: FaultConfig = {};
  private script: Array<ScriptedFault & { times: number }> = [];
  private random: () => number;

  constructor(
    private readonly defaultSeed: number,
    config: FaultConfig = {},
  ) {
    this.random = mulberry32(defaultSeed);
    this.set(config);
  }

  /** Replaces the whole configuration (validated) and restarts the random sequence. */
  set(input: unknown): void {
    const config = validateFaultConfig(input);
    this.config = config;
    this.script = (config.script ?? []).map((entry) => ({ ...entry, times: entry.times ?? 1 }));
    this.random = mulberry32(config.seed ?? this.defaultSeed);
  }

  /** The configuration with the script as it stands: used-up entries gone, `times` what is left. */
  view(): FaultConfig {
    const view: FaultConfig = { seed: this.config.seed ?? this.defaultSeed };
    if (this.config.routes !== undefined) view.routes = structuredClone(this.config.routes);
    view.script = this.script.filter((entry) => entry.times > 0).map((entry) => ({ ...entry }));
    return view;
  }

  decide(route: FaultRoute, blobId?: string): FaultDecision | undefined {
    const scripted = this.script.find(
      (entry) => entry.times > 0 && (entry.route === route || entry.route === "*") && (entry.blobId === undefined || entry.blobId === blobId),
    );
    if (scripted !== undefined) {
      scripted.times -= 1;
      return {
        kind: scripted.fault,
        latencyMs: scripted.fault === "latency" ? (scripted.latencyMs ?? DEFAULT_SCRIPTED_LATENCY_MS) : 0,
        status: scripted.fault === "5xx" ? (scripted.status ?? 503) : undefined,
        retryAfterSeconds: scripted.fault === "429" ? (scripted.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS) : undefined,
      };
    }

    const rates = this.ratesFor(route);
    const latencyMs = rates.latencyMs ?? 0;
    const total = RATE_KEYS.reduce((sum, key) => sum + (rates[key] ?? 0), 0);
    if (total > 0) {
      const draw = this.random();
      let edge = 0;
      const hit = (rate: number | undefined): boolean => {
        edge += rate ?? 0;
        return draw < edge;
      };
      if (hit(rates.resetRate)) return { kind: "reset", latencyMs };
      if (hit(rates.error5xxRate)) return { kind: "5xx", latencyMs, status: rates.error5xxStatus ?? 503 };
      if (hit(rates.rateLimitRate)) {
        return { kind: "429", latencyMs, retryAfterSeconds: rates.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS };
      }
      if (hit(rates.applyThenDropRate)) return { kind: "apply-then-drop", latencyMs };
    }
    return latencyMs > 0 ? { kind: "latency", latencyMs } : undefined;
  }

  private ratesFor(route: FaultRoute): RouteFaultRates {
    return { ...this.config.routes?.["*"], ...this.config.routes?.[route] };
  }
}

/** Checks a fault configuration from an options object or a request body; 422 names the problem. */
export function validateFaultConfig(input: unknown): FaultConfig {
  const fail = (detail: string): never => {
    throw emulatorError(ERRORS.invalidFaultConfig, detail);
  };
  const object = (value: unknown, where: string): Record<string, unknown> => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) fail(`${where} must be an object, got ${jsonKind(value)}`);
    return value as Record<string, unknown>;
  };
  const onlyKeys = (value: Record<string, unknown>, allowed: readonly string[], where: string) => {
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key)) fail(`unknown field ${JSON.stringify(key)} in ${where}; allowed: ${allowed.join(", ")}`);
    }
  };
  const number = (value: unknown, where: string, min: number, max: number, integer = false): number => {
    if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
      fail(`${where} must be ${integer ? "an integer" : "a number"} from ${min} to ${max}, got ${JSON.stringify(value)}`);
    }
    return value as number;
  };
  const status = (value: unknown, where: string): FaultStatus => {
    if (value !== 500 && value !== 503) fail(`${where} must be 500 or 503, got ${JSON.stringify(value)}`);
    return value as FaultStatus;
  };
  const selector = (value: unknown, where: string): FaultRouteSelector => {
    if (value !== "*" && !(FAULT_ROUTES as readonly unknown[]).includes(value)) {
      fail(`${where} must be one of ${[...FAULT_ROUTES, "*"].join(", ")}, got ${JSON.stringify(value)}`);
    }
    return value as FaultRouteSelector;
  };

  const root = object(input ?? {}, "the fault configuration");
  onlyKeys(root, ["seed", "routes", "script"], "the fault configuration");
  const config: FaultConfig = {};
  if (root.seed !== undefined) config.seed = number(root.seed, "seed", 0, 2 ** 32 - 1, true);

  if (root.routes !== undefined) {
    const routes = object(root.routes, "routes");
    config.routes = {};
    for (const [key, value] of Object.entries(routes)) {
      const route = selector(key, "a key of routes");
      const where = `routes[${JSON.stringify(route)}]`;
      const raw = object(value, where);
      onlyKeys(raw, RATE_FIELDS, where);
      const rates: RouteFaultRates = {};
      for (const rateKey of RATE_KEYS) {
        if (raw[rateKey] !== undefined) rates[rateKey] = number(raw[rateKey], `${where}.${rateKey}`, 0, 1);
      }
      if (raw.error5xxStatus !== undefined) rates.error5xxStatus = status(raw.error5xxStatus, `${where}.error5xxStatus`);
      if (raw.retryAfterSeconds !== undefined) rates.retryAfterSeconds = number(raw.retryAfterSeconds, `${where}.retryAfterSeconds`, 0, 86_400, true);
      if (raw.latencyMs !== undefined) rates.latencyMs = number(raw.latencyMs, `${where}.latencyMs`, 0, 600_000);
      const sum = RATE_KEYS.reduce((total, rateKey) => total + (rates[rateKey] ?? 0), 0);
      if (sum > 1) fail(`${where}: the rates add up to ${sum}, more than 1`);
      config.routes[route] = rates;
    }
  }

  if (root.script !== undefined) {
    if (!Array.isArray(root.script)) fail(`script must be an array, got ${jsonKind(root.script)}`);
    config.script = (root.script as unknown[]).map((value, i) => {
      const where = `script[${i}]`;
      const raw = object(value, where);
      onlyKeys(raw, SCRIPT_FIELDS, where);
      if (!(FAULT_KINDS as readonly unknown[]).includes(raw.fault)) {
        fail(`${where}.fault must be one of ${FAULT_KINDS.join(", ")}, got ${JSON.stringify(raw.fault)}`);
      }
      const entry: ScriptedFault = { route: selector(raw.route, `${where}.route`), fault: raw.fault as FaultKind };
      if (raw.blobId !== undefined) {
        if (typeof raw.blobId !== "string" || raw.blobId === "") fail(`${where}.blobId must be a non-empty string, got ${JSON.stringify(raw.blobId)}`);
        entry.blobId = raw.blobId as string;
      }
      if (raw.times !== undefined) entry.times = number(raw.times, `${where}.times`, 1, 1_000_000, true);
      if (raw.status !== undefined) entry.status = status(raw.status, `${where}.status`);
      if (raw.retryAfterSeconds !== undefined) entry.retryAfterSeconds = number(raw.retryAfterSeconds, `${where}.retryAfterSeconds`, 0, 86_400, true);
      if (raw.latencyMs !== undefined) entry.latencyMs = number(raw.latencyMs, `${where}.latencyMs`, 0, 600_000);
      return entry;
    });
  }
  return config;
}

/**
 * Adds one CLI `--fault` flag, `<route|*>:<field>=<value>` (for example
 * `renew:applyThenDropRate=0.2`), to a configuration. Throws a plain Error on a bad flag.
 */
export function addFaultFlag(config: FaultConfig, flag: string): FaultConfig {
  const match = /^([^:]+):([A-Za-z0-9]+)=(.+)$/.exec(flag);
  if (match === null) throw new Error(`--fault ${JSON.stringify(flag)}: expected <route|*>:<field>=<value>, e.g. renew:applyThenDropRate=0.2`);
  const [, route, field, value] = match;
  const number = Number(value);
  if (!Number.isFinite(number)) throw new Error(`--fault ${JSON.stringify(flag)}: ${value} is not a number`);
  const next: FaultConfig = structuredClone(config);
  next.routes = next.routes ?? {};
  const rates = (next.routes as Record<string, Record<string, number>>)[route] ?? {};
  rates[field] = number;
  (next.routes as Record<string, Record<string, number>>)[route] = rates;
  try {
    return validateFaultConfig(next);
  } catch (error) {
    throw new Error(`--fault ${JSON.stringify(flag)}: ${(error as Error).message}`);
  }
}
