import { createHash, randomUUID } from "node:crypto";
import type * as pulumi from "@pulumi/pulumi";
import { PATCH_FIELDS, type PatchField } from "../api";
import { type ReceivedFile, TuskrClient, type TuskrClientOptions } from "./client/client";
import { TuskrApiError, isTuskrApiError } from "./client/errors";
import { type ConfigSource, type ProviderSettings, clientOptionsFrom, settingsFrom } from "./settings";
import { type PlanClock, planChange, remainingEpochs, type StoredFilePlan } from "./stored-file-plan";
import { type StoredFileState, StoredFileStateSchema, validateInputs } from "./stored-file-schema";

/**
 * The real `StoredFile` provider. Pulumi never serializes this module: the stub in
 * `stored-file-stub.ts` loads it by package name inside the provider process, so the state
 * holds a few hundred bytes of stub instead of this code, the client, or any credential.
 *
 * Every CRUD method reads the same way: parse what came in, plan, call the API, return state.
 */

const PROVIDER_KEY = "__provider";

function parseState(props: Record<string, unknown>): StoredFileState {
  const parsed = StoredFileStateSchema.safeParse(props ?? {});
  // Lenient by design: a field an older release wrote in another shape is dropped, not fatal.
  return parsed.success ? parsed.data : {};
}

/**
 * The recorded view of a file as the service reports it. Of name/tag/metadata only the managed
 * (declared) ones are recorded: a field in the state is a field the stack manages, which lets
 * `read` hand refreshed values back as inputs, so a preview after a refresh names what drifted.
 */
function observed(file: Partial<ReceivedFile>, managed: ReadonlySet<PatchField>): Partial<StoredFileState> {
  const out: Record<string, unknown> = {};
  for (const key of ["blobId", "url", "size", "createdAt", "expiresAt"] as const) {
    if (file[key] !== undefined) out[key] = file[key];
  }
  for (const key of PATCH_FIELDS) {
    if (managed.has(key) && file[key] !== undefined) out[key] = file[key];
  }
  return out;
}

/** Managed fields: those declared (an omitted field is unmanaged). */
const declaredFields = (props: Record<string, unknown>): Set<PatchField> =>
  new Set(PATCH_FIELDS.filter((f) => props[f] !== undefined && props[f] !== null));

/** Drops nulls/undefined so the state holds only fields that have a value. */
function compact(state: StoredFileState): StoredFileState {
  return Object.fromEntries(Object.entries(state).filter(([, v]) => v !== undefined && v !== null)) as StoredFileState;
}

/** The state as recorded: compact, with the epochs left as of this call's clock. */
function recorded(state: StoredFileState, clock: PlanClock): StoredFileState {
  return compact({ ...state, remainingEpochs: remainingEpochs(state.expiresAt, clock) });
}

/** How a file is named in messages: its managed name if any, else its blobId. */
const label = (state: StoredFileState, blobId: string): string =>
  state.name ? `${JSON.stringify(state.name)} (${blobId})` : JSON.stringify(blobId);

/**
 * The Idempotency-Key of one purchase: the resource's seed and the counters before and after
 * (declared and keep-alive), so a retry of the same purchase, even in a later `up`, reuses it.
 */
function renewIdempotencyKey(seed: string, blobId: string, ...counters: number[]): string {
  const digest = createHash("sha256").update([seed, blobId, ...counters].join("\n")).digest("hex");
  return `pulumi-tuskr-${digest.slice(0, 40)}`;
}

/**
 * Carries out a plan, step by step. `state` is updated after each confirmed step, so that when
 * a later step fails the caller can record exactly what was done.
 */
async function applyPlan(
  client: TuskrClient,
  blobId: string,
  state: StoredFileState,
  news: Record<string, unknown>,
  plan: StoredFilePlan,
  clock: PlanClock,
): Promise<void> {
  const managed = declaredFields(news);
  if (plan.patch) {
    const updated = await client.updateFile(blobId, plan.patch);
    if (updated && updated.blobId !== undefined) {
      Object.assign(state, observed(updated, managed));
    } else {
      // 204 or empty body (tolerated): the merge patch makes the declared fields exact.
      for (const field of ["name", "tag", "metadata"] as const) {
        if (plan.patch[field] !== undefined) (state as Record<string, unknown>)[field] = news[field];
      }
    }
  }
  if (plan.renewEpochs > 0) {
    const bought = state.retentionEpochs ?? 0;
    const target = bought + plan.retentionIncrease;
    const kept = state.keepAliveEpochs ?? 0;
    const keptTarget = kept + plan.keepAliveEpochs;
    // The older two-counter key form is kept when keep-alive is not involved, so a purchase a
    // previous release left unconfirmed is retried under the same key.
    const counters = kept === 0 && keptTarget === 0 ? [bought, target] : [bought, target, kept, keptTarget];
    const result = await client.renewFile(blobId, plan.renewEpochs, {
      idempotencyKey: renewIdempotencyKey(state.renewKeySeed ?? blobId, blobId, ...counters),
      expiresAtBefore: state.expiresAt,
      epochMs: clock.epochMs,
    });
    state.retentionEpochs = target;
    if (keptTarget > 0) state.keepAliveEpochs = keptTarget;
    if (result.file?.expiresAt) {
      Object.assign(state, observed(result.file, managed));
    } else {
      // The service did not say where the expiry is now; ask once rather than record a stale one.
      Object.assign(state, observed(await client.getFile(blobId), managed));
    }
  }
}

/** Turns an API failure into a message that names the file and says what to do. */
function describe(error: unknown, blobId: string, action: string): TuskrApiError {
  if (!isTuskrApiError(error)) {
    return new TuskrApiError({ code: "INTERNAL_ERROR", message: `StoredFile ${JSON.stringify(blobId)}: ${action} failed: ${String((error as Error)?.message ?? error)}` });
  }
  const hint =
    error.status === 404
      ? `no file with blobId ${JSON.stringify(blobId)} exists on the service (unknown blobId): upload it first and declare the blobId the upload returns`
      : error.status === 410
        ? `the file with blobId ${JSON.stringify(blobId)} has expired: an expired blob cannot be updated or renewed; upload it again`
        : error.status === 401
          ? "the service rejected the API key (401 UNAUTHORIZED): check the secret `tuskr:apiKey` (or TUSKR_API_KEY)"
          : error.status === 403
            ? "the API key is not allowed to change this file (403 FORBIDDEN)"
            : error.message;
  return new TuskrApiError({
    code: error.code,
    status: error.status,
    method: error.method,
    path: error.path,
    retryable: error.retryable,
    responseBody: error.responseBody,
    mayHaveBeenApplied: error.mayHaveBeenApplied,
    message: `StoredFile ${JSON.stringify(blobId)}: ${action} failed: ${hint}`,
  });
}

/**
 * Pulumi's partial-failure path: an error carrying `id` and `properties` makes the engine record
 * the resource with those outputs (and retry on the next `up`), so a step that succeeded before
 * the failure is never forgotten.
 */
function partialFailure(error: TuskrApiError, id: string, state: StoredFileState, providerText: unknown, clock: PlanClock): Error {
  return Object.assign(error, {
    id,
    properties: { ...recorded(state, clock), [PROVIDER_KEY]: providerText },
    reasons: [error.message],
  });
}

/** What `configure` builds, once: the settings and (on first use) the client. */
interface Configured {
  settings: ProviderSettings;
  client(): TuskrClient;
}

export class StoredFileProvider {
  private configured: Configured | undefined;

  /** @param clientOptions added to what the settings give (tests inject retry counters here). */
  constructor(private readonly clientOptions: Partial<TuskrClientOptions> = {}) {}

  /** Called by the engine with the stack config before any other method. */
  async configure(req: { config: ConfigSource } | undefined): Promise<void> {
    this.configured = this.build(req?.config);
  }

  private build(config: ConfigSource | undefined): Configured {
    const settings = settingsFrom(config);
    let client: TuskrClient | undefined;
    // Built on first use: check and diff need no key, and a missing key is reported where a
    // request would need it. One client per provider process keeps the concurrency bound.
    return { settings, client: () => (client ??= new TuskrClient({ ...clientOptionsFrom(settings), ...this.clientOptions })) };
  }

  private get context(): Configured {
    // An engine that never called configure: the environment alone.
    return (this.configured ??= this.build(undefined));
  }

  /** Each call reads the time once, here, and passes this clock down. */
  private clock(): PlanClock {
    const { epochSeconds, expiryWarningEpochs } = this.context.settings;
    return { nowMs: Date.now(), epochMs: epochSeconds * 1000, warnWithinEpochs: expiryWarningEpochs };
  }

  async check(olds: Record<string, unknown>, news: Record<string, unknown>): Promise<pulumi.dynamic.CheckResult> {
    const { inputs, failures } = validateInputs(olds, news);
    return { inputs, failures };
  }

  /**
   * What will change. Also where a preview learns what the engine cannot show for a dynamic
   * resource: expired or expiring files and a due keep-alive are printed (plugin output appears
   * in the preview), and a purchase past the service's horizon fails the preview, before any
   * request.
   */
  async diff(id: string, olds: Record<string, unknown>, news: Record<string, unknown>): Promise<pulumi.dynamic.DiffResult> {
    const state = parseState(olds);
    const plan = planChange(state, news, this.clock());
    const who = label(state, state.blobId ?? id);
    for (const notice of plan.notices) console.log(`warning: StoredFile ${who}: ${notice}`);
    if (plan.horizonProblem && !plan.replace) throw new Error(`StoredFile ${who}: ${plan.horizonProblem}`);
    return {
      changes: plan.changedFields.length > 0 || plan.renewEpochs > 0,
      replaces: plan.replace ? ["blobId"] : [],
      deleteBeforeReplace: false,
    };
  }

  /** Adopts an existing file: read it, patch what differs, buy the declared epochs. */
  async create(inputs: Record<string, unknown>): Promise<pulumi.dynamic.CreateResult> {
    const blobId = String(inputs.blobId);
    const clock = this.clock();
    const client = this.context.client();
    let file: ReceivedFile;
    try {
      file = await client.getFile(blobId);
    } catch (e) {
      throw describe(e, blobId, "adopting the file");
    }
    const state: StoredFileState = {
      ...observed(file, declaredFields(inputs)),
      blobId,
      retentionEpochs: 0,
      renewKeySeed: randomUUID(),
      keepAlive: (inputs.keepAlive as StoredFileState["keepAlive"]) ?? undefined,
    };
    const plan = planChange({ ...state, keepAlive: undefined }, inputs, clock);
    // Refused before any write: nothing half-done to record.
    if (plan.horizonProblem) throw new Error(`StoredFile ${label(state, blobId)}: ${plan.horizonProblem}`);
    try {
      await applyPlan(client, blobId, state, inputs, plan, clock);
    } catch (e) {
      // The file exists and may already be patched: record it, so nothing done is forgotten.
      throw partialFailure(describe(e, blobId, "adopting the file"), blobId, state, inputs[PROVIDER_KEY], clock);
    }
    return { id: blobId, outs: recorded(state, clock) };
  }

  /**
   * Refresh: the service's view; an unknown or expired file is gone from the stack. The managed
   * fields come back as inputs too, so that a following preview shows what drifted
   * (`~ tag: "edited" => "declared"`): dynamic providers cannot return a detailed diff, and the
   * engine otherwise compares unchanged inputs.
   */
  async read(id: string, props: Record<string, unknown>): Promise<pulumi.dynamic.ReadResult> {
    const before = parseState(props);
    const blobId = before.blobId ?? id;
    const clock = this.clock();
    let file: ReceivedFile;
    try {
      file = await this.context.client().getFile(blobId);
    } catch (e) {
      if (isTuskrApiError(e) && e.isGone) return {};
      throw describe(e, blobId, "reading the file");
    }
    const managed = declaredFields(before);
    const state: StoredFileState = {
      ...observed(file, managed),
      blobId,
      retentionEpochs: before.retentionEpochs ?? 0,
      renewKeySeed: before.renewKeySeed,
      keepAlive: before.keepAlive,
      keepAliveEpochs: before.keepAliveEpochs,
    };
    const inputs: Record<string, unknown> = { blobId, keepAlive: before.keepAlive };
    for (const field of managed) inputs[field] = file[field] ?? undefined;
    if (state.retentionEpochs) inputs.retentionEpochs = state.retentionEpochs;
    return { id, props: recorded(state, clock), inputs: compact(inputs as StoredFileState) };
  }

  /** One PATCH with only the changed fields, then one renew for the increase; nothing if unchanged. */
  async update(id: string, olds: Record<string, unknown>, news: Record<string, unknown>): Promise<pulumi.dynamic.UpdateResult> {
    const before = parseState(olds);
    const blobId = String(news.blobId ?? before.blobId ?? id);
    const state: StoredFileState = { ...before, blobId, renewKeySeed: before.renewKeySeed ?? randomUUID() };
    // A field no longer declared is no longer managed: it leaves the state, the file keeps it.
    for (const field of PATCH_FIELDS) if (news[field] === undefined || news[field] === null) delete state[field];
    state.keepAlive = (news.keepAlive as StoredFileState["keepAlive"]) ?? undefined;
    const clock = this.clock();
    const client = this.context.client();
    // A field declared now but not managed before is not in the state: read the file once, so
    // the PATCH is planned against what the service holds (metadata keys it has must go too).
    const newlyManaged = PATCH_FIELDS.filter((f) => news[f] !== undefined && news[f] !== null && before[f] === undefined);
    if (newlyManaged.length > 0) {
      try {
        Object.assign(before, observed(await client.getFile(blobId), new Set(newlyManaged)));
      } catch (e) {
        throw describe(e, blobId, "reading the file");
      }
    }
    const plan = planChange(before, news, clock);
    if (plan.horizonProblem) throw new Error(`StoredFile ${label(state, blobId)}: ${plan.horizonProblem}`);
    const unchanged = JSON.stringify(compact(state));
    try {
      await applyPlan(client, blobId, state, news, plan, clock);
    } catch (e) {
      const error = describe(e, blobId, "updating the file");
      // Only if an earlier step went through is there anything new to record.
      if (JSON.stringify(compact(state)) !== unchanged) throw partialFailure(error, id, state, news[PROVIDER_KEY], clock);
      throw error;
    }
    return { outs: recorded(state, clock) };
  }

  /**
   * Blobs cannot be deleted through this API: the file keeps its paid period and simply stops
   * being managed by this stack. No request is sent.
   */
  async delete(_id: string, _props: Record<string, unknown>): Promise<void> {}
}

/** The provider the serialized stub loads (`pulumi-tuskr/impl`): one per provider process. */
export const storedFileProvider = new StoredFileProvider();
