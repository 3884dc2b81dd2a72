import type { StoredFileProvider } from "../../provider/dynamic/stored-file-provider";

/**
 * Drives the provider the way the Pulumi engine does, without the engine: `check` then
 * `create` (no state yet) or `diff` + `update` (state recorded), with the engine's rules for a
 * failed step:
 *
 * - an error carrying `id` and `properties` (a partial failure) records those properties as the
 *   resource's new state, and the next `up` updates the resource even if diff finds nothing
 *   (the engine does so for a resource with init errors);
 * - any other error leaves the recorded state as it was (none, for a failed create).
 *
 * Everything crossing the engine goes through JSON, as it would through gRPC.
 */
export interface EngineResource {
  id?: string;
  /** Recorded outputs (what `diff`/`update` get as olds); undefined until created. */
  state?: Record<string, unknown>;
  /** Recorded inputs (what `check` gets as olds). */
  inputs?: Record<string, unknown>;
  /** The last step failed with a partial state: the next run updates regardless of diff. */
  initErrors: boolean;
}

type StepOutcome = "ok" | "noop" | "partial" | "failed";

export interface StepRecord {
  op: "create" | "update" | "same";
  outcome: StepOutcome;
  error?: string;
}

const STUB = "stub-provider-text";
const viaWire = <T>(v: T): T => (v === undefined ? v : JSON.parse(JSON.stringify(v)));

function withoutProvider(props: Record<string, unknown>): Record<string, unknown> {
  const { __provider: _, ...rest } = props;
  return rest;
}

/** One `pulumi up` of one resource. Returns what happened; updates `resource` in place. */
async function upOnce(provider: StoredFileProvider, resource: EngineResource, declared: Record<string, unknown>): Promise<StepRecord> {
  const news = { ...declared, __provider: STUB };
  const checked = await provider.check(viaWire(resource.inputs ?? {}), viaWire(news));
  if (checked.failures && checked.failures.length > 0) {
    return { op: resource.state ? "update" : "create", outcome: "failed", error: `check: ${JSON.stringify(checked.failures)}` };
  }
  const inputs = viaWire({ ...checked.inputs, __provider: STUB }) as Record<string, unknown>;

  if (!resource.state) {
    try {
      const { id, outs } = await provider.create(inputs);
      Object.assign(resource, { id, state: viaWire(outs), inputs: withoutProvider(inputs), initErrors: false });
      return { op: "create", outcome: "ok" };
    } catch (e) {
      return recordFailure(resource, "create", e, inputs);
    }
  }

  const diff = await provider.diff(resource.id!, viaWire(resource.state), inputs);
  if (!diff.changes && !resource.initErrors) {
    resource.inputs = withoutProvider(inputs);
    return { op: "same", outcome: "noop" };
  }
  try {
    const { outs } = await provider.update(resource.id!, viaWire(resource.state), inputs);
    Object.assign(resource, { state: viaWire(outs), inputs: withoutProvider(inputs), initErrors: false });
    return { op: "update", outcome: "ok" };
  } catch (e) {
    return recordFailure(resource, "update", e, inputs);
  }
}

function recordFailure(resource: EngineResource, op: "create" | "update", e: unknown, inputs: Record<string, unknown>): StepRecord {
  const err = e as { id?: string; properties?: Record<string, unknown>; message?: string };
  const error = String(err?.message ?? e);
  if (err && typeof err.id === "string" && err.id !== "" && err.properties) {
    Object.assign(resource, {
      id: err.id,
      state: viaWire(withoutProvider(err.properties)),
      inputs: withoutProvider(inputs),
      initErrors: true,
    });
    return { op, outcome: "partial", error };
  }
  return { op, outcome: "failed", error };
}

/**
 * `pulumi up` repeated until it succeeds, at most `maxRuns` times: what a user (or CI) does
 * after a failed run, with nothing changed in between.
 */
export async function upUntilDone(
  provider: StoredFileProvider,
  resource: EngineResource,
  declared: Record<string, unknown>,
  maxRuns: number,
): Promise<{ runs: StepRecord[]; done: boolean }> {
  const runs: StepRecord[] = [];
  for (let i = 0; i < maxRuns; i++) {
    const step = await upOnce(provider, resource, declared);
    runs.push(step);
    if (step.outcome === "ok" || step.outcome === "noop") return { runs, done: true };
  }
  return { runs, done: false };
}
