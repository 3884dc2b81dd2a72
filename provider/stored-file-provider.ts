import { createHash, randomUUID } from "node:crypto";
import type * as pulumi from "@pulumi/pulumi";
import { PATCH_FIELDS, isPlainObject, jsonEqual, type PatchField } from "../api";
import { type ReceivedFile, type RenewResult, TuskrClient, type TuskrClientOptions, type UploadResult } from "./client/client";
import { TuskrApiError, isTuskrApiError, redactString } from "./client/errors";
import { type ConfigSource, type ProviderSettings, clientOptionsFrom, settingsFrom, settingsProblem } from "./settings";
import { type PlanClock, type PropertyDiff, planChange, propertyDiffs, remainingEpochs, type StoredFilePlan } from "./stored-file-plan";
import { type StoredFileState, StoredFileStateSchema, secretInputs, secretTexts, validateInputs } from "./stored-file-schema";
import { type WireAsset, sourceFilename, sourceHash, wireAsset } from "./stored-file-source";

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

/** Masks every value of a secret input in a message (the inputs or state name them). */
function redactor(props: Record<string, unknown>): (text: string) => string {
  const texts = secretTexts(props);
  return (text) => (texts.length ? redactString(text, texts) : text);
}

/** The same error, its message (and reasons) masked. */
function masked<E extends Error>(error: E, redact: (text: string) => string): E {
  error.message = redact(error.message);
  const reasons = (error as { reasons?: string[] }).reasons;
  if (Array.isArray(reasons)) (error as { reasons?: string[] }).reasons = reasons.map(redact);
  return error;
}

/** How a file is named in messages: its managed name if any, else its blobId. */
const label = (state: StoredFileState, blobId: string): string =>
  state.name ? `${JSON.stringify(state.name)} (${blobId})` : JSON.stringify(blobId);

/** The resource's URN, passed as an input by `StoredFile` (a plugin provider gets it from the engine). */
const URN_KEY = "__urn";

const sha256hex = (text: string): string => createHash("sha256").update(text).digest("hex");

/**
 * The seed every purchase key of a resource derives from. From its URN and file when known, so
 * that a create interrupted after its purchase and run again later (the engine re-creates a
 * pending create) sends the same key, and a service that honours it does not sell twice.
 */
function keySeed(urn: unknown, blobId: string): string {
  return typeof urn === "string" && urn.startsWith("urn:") ? sha256hex(`create\n${urn}\n${blobId}`).slice(0, 32) : randomUUID();
}

type PurchaseKind = "retention" | "keepAlive";

/**
 * The Idempotency-Key of the purchase of one kind that starts from `boughtSoFar` epochs of that
 * kind bought through this resource. The amount is not in it: a run interrupted after the
 * service applied a purchase, then run again, sends the same key whatever the program now
 * declares, and the service replays its answer, or refuses a different amount, instead of
 * selling again.
 */
function purchaseKey(seed: string, blobId: string, kind: PurchaseKind | "upload", boughtSoFar: number): string {
  return `pulumi-tuskr-${sha256hex([seed, blobId, kind, boughtSoFar].join("\n")).slice(0, 40)}`;
}

/** A purchase this stack will not make: nothing was bought; the message says what to check and do. */
class PurchaseStopped extends TuskrApiError {}

/**
 * How many epochs a file was stored for at its upload, if it was never renewed: its period from
 * upload to expiry, rounded up to whole epochs (a service may end a period on an epoch boundary).
 */
function uploadedFor(file: Partial<ReceivedFile>, clock: Pick<PlanClock, "epochMs">): number | undefined {
  const from = Date.parse(file.createdAt ?? "");
  const to = Date.parse(file.expiresAt ?? "");
  if (!Number.isFinite(from) || !Number.isFinite(to) || to <= from) return undefined;
  return Math.ceil((to - from) / clock.epochMs - 1e-9);
}

/**
 * Carries out a plan, step by step. `state` is updated after each confirmed step, so that when
 * a later step fails the caller can record exactly what was done. Declared epochs and
 * keep-alive are bought by separate renews, each with its own key, so that what keep-alive
 * decides on a later run (with more or fewer epochs left) never changes the declared purchase.
 */
async function applyPlan(
  client: TuskrClient,
  blobId: string,
  state: StoredFileState,
  news: Record<string, unknown>,
  plan: StoredFilePlan,
  clock: PlanClock,
  lookedAt: boolean,
  log: (line: string) => void,
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
  // A purchase an earlier run sent and could not settle: if the expiry moved by exactly it since
  // this stack's last purchase, it was made (the read-back rule); not at all, it was not.
  const unsettled = state.unsettledPurchase;
  if (unsettled && state.idempotencyHonoured !== true && state.purchasedExpiresAt) {
    if (!lookedAt) Object.assign(state, observed(await client.getFile(blobId), managed));
    lookedAt = true;
    const moved = Math.round(((state.expiresAt ? Date.parse(state.expiresAt) : NaN) - Date.parse(state.purchasedExpiresAt)) / clock.epochMs);
    if (moved === 0) delete state.unsettledPurchase;
    if (moved === unsettled.epochs) {
      const counter = unsettled.kind === "retention" ? "retentionEpochs" : "keepAliveEpochs";
      state[counter] = (state[counter] ?? 0) + unsettled.epochs;
      state.purchasedExpiresAt = state.expiresAt;
      delete state.unsettledPurchase;
      log(`warning: StoredFile ${label(state, blobId)}: the purchase of ${unsettled.epochs} epoch(s) an earlier run could not settle was made: the expiry moved by exactly it. Counted, not bought again.`);
      // What is left to buy, from where the file now stands.
      plan = planChange({ ...state, keepAlive: state.keepAlive }, news, clock);
    }
  }
  const purchases: Array<[PurchaseKind, number]> = [
    ["retention", plan.retentionIncrease],
    ["keepAlive", plan.keepAliveEpochs],
  ];
  for (const [kind, epochs] of purchases) {
    if (epochs <= 0) continue;
    await purchase(client, blobId, state, managed, kind, epochs, clock, lookedAt, log);
    lookedAt = true;
  }
}

async function purchase(
  client: TuskrClient,
  blobId: string,
  state: StoredFileState,
  managed: ReadonlySet<PatchField>,
  kind: PurchaseKind,
  epochs: number,
  clock: PlanClock,
  lookedAt: boolean,
  log: (line: string) => void,
): Promise<void> {
  const who = label(state, blobId);
  const honoured = state.idempotencyHonoured === true;
  // A service not known to honour Idempotency-Key cannot protect a purchase an interrupted run
  // may have made: look first, and stop if the expiry moved past what this stack bought.
  if (!honoured && state.purchasedExpiresAt) {
    if (!lookedAt) Object.assign(state, observed(await client.getFile(blobId), managed));
    const now = state.expiresAt;
    const moved = (now ? Date.parse(now) : NaN) - Date.parse(state.purchasedExpiresAt);
    if (moved >= clock.epochMs / 2) {
      const movedBy = Math.round(moved / clock.epochMs);
      const from = state.purchasedExpiresAt;
      const recordedEpochs = state.retentionEpochs ?? 0;
      // Recorded, with the partial state: the move is seen, and the next up's declaration says whose it was.
      state.purchasedExpiresAt = now;
      state.unconfirmedEpochs = movedBy;
      throw new PurchaseStopped({
        code: "RENEW_OUTCOME_UNKNOWN",
        message:
          `StoredFile ${who}: not buying ${epochs} epoch(s): the file's expiry moved ${movedBy} epoch(s) past what this stack ` +
          `bought (from ${from} to ${now}), and the service has not confirmed that it honours Idempotency-Key, so this stack ` +
          "cannot tell whether an interrupted run of its own bought them. Nothing was bought. Check the file's purchases on the " +
          `service. If those ${movedBy} epoch(s) were this stack's, declare retentionEpochs: ${recordedEpochs + movedBy} for the next ` +
          "`pulumi up`: they are then counted, not bought again (raise it afterwards to buy more). With any other value, the " +
          `next \`pulumi up\` buys the difference from ${recordedEpochs} as usual.`,
        retryable: false,
      });
    }
  }
  const counter = kind === "retention" ? "retentionEpochs" : "keepAliveEpochs";
  const bought = state[counter] ?? 0;
  let result: RenewResult;
  try {
    result = await client.renewFile(blobId, epochs, {
      idempotencyKey: purchaseKey(state.renewKeySeed ?? blobId, blobId, kind, bought),
      expiresAtBefore: state.expiresAt,
      epochMs: clock.epochMs,
      keyHonoured: honoured,
    });
  } catch (e) {
    // Sent, and perhaps made: recorded (with the partial state) so the next run can settle it.
    if (isTuskrApiError(e) && e.code === "RENEW_OUTCOME_UNKNOWN") state.unsettledPurchase = { kind, epochs };
    if (isTuskrApiError(e) && e.code === "IDEMPOTENCY_KEY_REUSED") {
      throw new PurchaseStopped({
        code: e.code,
        status: e.status,
        message:
          `StoredFile ${who}: not buying ${epochs} epoch(s): an earlier run of this stack, interrupted, already made this purchase ` +
          `(${kind === "retention" ? `retentionEpochs from ${bought}` : `keep-alive after ${bought} epoch(s)`}) for another number of ` +
          `epochs, and the service refused the same Idempotency-Key for a different amount (${e.message}). Nothing more was bought. ` +
          (kind === "retention"
            ? "Declare retentionEpochs as that run did (the value before your last change), run `pulumi up` so that purchase is confirmed, then declare the new value."
            : "Run `pulumi refresh` and `pulumi up` again."),
        retryable: false,
      });
    }
    throw e;
  }
  state[counter] = bought + epochs;
  delete state.unsettledPurchase;
  if (result.keyHonoured) state.idempotencyHonoured = true;
  // A replay of this run's own resend is the key doing its job; on a first send it is an earlier run's purchase.
  if (result.confirmedBy === "replay" && !result.resent) {
    log(
      `warning: StoredFile ${who}: the service already had this purchase of ${epochs} epoch(s) (its Idempotency-Key was used before): ` +
        "taken as bought by an earlier, interrupted run of this stack, and not bought again. If this resource was destroyed and declared " +
        "again with the same file and values, that earlier purchase was its previous life's: raise retentionEpochs to buy more.",
    );
  } else if (!result.keyHonoured && result.confirmedBy === "response") {
    log(
      `warning: StoredFile ${who}: bought ${epochs} epoch(s), but the service did not confirm the Idempotency-Key, so this purchase ` +
        "cannot be told apart from an earlier attempt's: if an earlier run of this stack was interrupted while buying epochs for this " +
        "file, check on the service that it did not sell them twice.",
    );
  }
  // Where the expiry is after this purchase: the answer, unless it is a replay (as of its first
  // request) or says nothing; then ask once rather than record a stale expiry.
  const after = result.confirmedBy !== "replay" && result.file?.expiresAt ? result.file : await client.getFile(blobId);
  Object.assign(state, observed(after, managed));
  state.purchasedExpiresAt = result.file?.expiresAt ?? after.expiresAt ?? undefined;
}

/** Turns an API failure into a message that names the file and says what to do. */
function describe(error: unknown, blobId: string, action: string): TuskrApiError {
  if (error instanceof PurchaseStopped) return error;
  if (!isTuskrApiError(error)) {
    return new TuskrApiError({ code: "INTERNAL_ERROR", message: `StoredFile ${JSON.stringify(blobId)}: ${action} failed: ${String((error as Error)?.message ?? error)}` });
  }
  const hint =
    error.status === 404
      ? `no file with blobId ${JSON.stringify(blobId)} exists on the service (unknown blobId): upload it first and declare the blobId the upload returns`
      : error.status === 410
        ? `the file with blobId ${JSON.stringify(blobId)} has expired: an expired blob cannot be updated or renewed; upload it again`
        : error.status === 402
          ? `the service refused to sell epochs: the prepaid balance is short (402 ${error.code}). Nothing was bought and nothing is recorded as bought; top up the account, then run \`pulumi up\` again`
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

/** Whether the program declares retentionEpochs (recorded, so a refresh hands back exactly the declared inputs). */
const declaresRetention = (inputs: Record<string, unknown>): boolean => inputs.retentionEpochs !== undefined && inputs.retentionEpochs !== null;

/** The secret inputs' names, for the state (none: undefined, so nothing is recorded). */
function secretList(inputs: Record<string, unknown>): string[] | undefined {
  const names = [...secretInputs(inputs)];
  return names.length > 0 ? names : undefined;
}

/** A value as a message shows it: JSON, cut short. */
function shown(value: unknown): string {
  const text = value === undefined ? "(none)" : JSON.stringify(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** Why a plan must not be applied (the preview fails with it, and the apply sends nothing), or undefined. */
function planRefusal(plan: StoredFilePlan): string | undefined {
  return plan.expiredProblem ?? plan.horizonProblem;
}

/** What `configure` builds, once: the settings and (on first use) the client. */
interface Configured {
  settings: ProviderSettings;
  client(): TuskrClient;
}

/** Where the provider's warnings go, with the resource they are about when known. */
export type ProviderLog = (line: string, urn?: string) => void;

/** The resource's URN, where the inputs or state carry it. */
const urnOf = (props: Record<string, unknown> | undefined): string | undefined => (typeof props?.[URN_KEY] === "string" ? (props[URN_KEY] as string) : undefined);

/** A diff, with the property-level changes a provider plugin can show (a dynamic provider's host drops them). */
export interface StoredFileDiff extends pulumi.dynamic.DiffResult {
  detailedDiff: Record<string, PropertyDiff>;
}

export class StoredFileProvider {
  private configured: Configured | undefined;

  /**
   * @param clientOptions added to what the settings give (tests inject retry counters here).
   * @param log where warnings go: stdout for the dynamic provider (the engine shows it), the
   *   engine's log for the provider plugin.
   */
  constructor(
    private readonly clientOptions: Partial<TuskrClientOptions> = {},
    private readonly log: ProviderLog = (line) => console.log(line),
  ) {}

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
    // Bad configuration fails the preview, before any request.
    const problem = settingsProblem(this.context.settings);
    if (problem) throw new Error(problem);
    const { inputs, failures } = validateInputs(olds, news);
    return { inputs, failures };
  }

  /**
   * What will change. Also where a preview learns what the engine cannot show for a dynamic
   * resource: expired or expiring files and a due keep-alive are printed (plugin output appears
   * in the preview), and a change that the apply would refuse (past the service's horizon, or to
   * an expired file) fails the preview, before any request.
   */
  async diff(id: string, olds: Record<string, unknown>, news: Record<string, unknown>): Promise<StoredFileDiff> {
    const redact = redactor(news);
    const state = parseState(olds);
    const plan = planChange(state, news, this.clock());
    const who = label(state, state.blobId ?? id);
    for (const notice of plan.notices) this.log(redact(`warning: StoredFile ${who}: ${notice}`), urnOf(news));
    const refusal = plan.replace ? undefined : planRefusal(plan);
    if (refusal) throw new Error(redact(`StoredFile ${who}: ${refusal}`));
    return {
      changes: plan.changedFields.length > 0 || plan.renewEpochs > 0,
      replaces: plan.replaceFields,
      deleteBeforeReplace: false,
      detailedDiff: propertyDiffs(state, news, plan),
    };
  }

  /**
   * Adopts an existing file (`blobId`: read it) or uploads one (`source`: the upload carries its
   * name, tag and initial epochs), then patches what differs and buys the declared epochs.
   */
  async create(inputs: Record<string, unknown>): Promise<pulumi.dynamic.CreateResult> {
    const redact = redactor(inputs);
    const log = (line: string) => this.log(redact(line), urnOf(inputs));
    const clock = this.clock();
    const client = this.context.client();
    const asset = wireAsset(inputs.source);
    let start: { blobId: string; file: Partial<ReceivedFile>; state: Partial<StoredFileState> };
    try {
      start = asset ? await this.upload(client, asset, inputs, clock, log) : await this.adopt(client, String(inputs.blobId), inputs[URN_KEY]);
    } catch (e) {
      throw masked(describe(e, asset ? `(upload of ${sourceFilename(asset, inputs.name)})` : String(inputs.blobId), asset ? "uploading the file" : "adopting the file"), redact);
    }
    const { blobId } = start;
    const state: StoredFileState = {
      ...observed(start.file, declaredFields(inputs)),
      blobId,
      retentionEpochs: 0,
      retentionDeclared: declaresRetention(inputs),
      keepAlive: (inputs.keepAlive as StoredFileState["keepAlive"]) ?? undefined,
      purchasedExpiresAt: start.file.expiresAt ?? undefined,
      secretInputs: secretList(inputs),
      ...start.state,
    };
    const plan = planChange({ ...state, keepAlive: undefined }, inputs, clock);
    // Refused before any write (an upload aside): nothing half-done to record.
    const refusal = planRefusal(plan);
    if (refusal) throw new Error(redact(`StoredFile ${label(state, blobId)}: ${refusal}`));
    try {
      await applyPlan(client, blobId, state, inputs, plan, clock, true, log);
    } catch (e) {
      // The file exists and may already be patched: record it, so nothing done is forgotten.
      throw masked(partialFailure(describe(e, blobId, asset ? "uploading the file" : "adopting the file"), blobId, state, inputs[PROVIDER_KEY], clock), redact);
    }
    return { id: blobId, outs: recorded(state, clock) };
  }

  private async adopt(client: TuskrClient, blobId: string, urn: unknown) {
    const file = await client.getFile(blobId);
    return { blobId, file, state: { renewKeySeed: keySeed(urn, blobId) } };
  }

  /**
   * Uploads `source`: one request carrying what the upload form can (the name as the filename,
   * the tag, the declared epochs when there are any), under an Idempotency-Key derived from the
   * resource's URN and the content, so an interrupted upload run again is the same upload.
   */
  private async upload(client: TuskrClient, asset: WireAsset, inputs: Record<string, unknown>, clock: PlanClock, log: (line: string) => void) {
    const hash = await sourceHash(asset);
    const seed = keySeed(inputs[URN_KEY], `sha256:${hash}`);
    const filename = sourceFilename(asset, inputs.name);
    const tag = typeof inputs.tag === "string" ? inputs.tag : undefined;
    const declared = typeof inputs.retentionEpochs === "number" ? inputs.retentionEpochs : 0;
    // The upload buys at least one epoch: the declared ones if any (then no renew is needed), else the service's default.
    const epochs = declared >= 1 ? declared : undefined;
    let result: UploadResult;
    try {
      result = await client.uploadFile({ path: asset.path, text: asset.text, filename }, { tag, epochs }, { idempotencyKey: purchaseKey(seed, `sha256:${hash}`, "upload", 0) });
    } catch (e) {
      if (isTuskrApiError(e) && e.code === "IDEMPOTENCY_KEY_REUSED") {
        throw new PurchaseStopped({
          code: e.code,
          status: e.status,
          message:
            `StoredFile ${label({ name: filename }, "(upload)")}: not uploading: an earlier run of this stack, interrupted, already uploaded this content ` +
            `with another number of epochs, and the service refused the same Idempotency-Key for a different upload (${e.message}). Nothing was bought. ` +
            "Declare retentionEpochs as that run did (the value before your last change), run `pulumi up` so that upload is confirmed, then declare the new value.",
          retryable: false,
        });
      }
      throw e;
    }
    const { blobId } = result.file;
    const common = { renewKeySeed: seed, sourceHash: hash, source: inputs.source, idempotencyHonoured: result.keyHonoured || undefined };
    const who = label({ name: filename }, blobId);
    if (!result.created) {
      // The same content was already stored: nothing bought by this request, nothing set.
      const file = await client.getFile(blobId);
      if (result.keyHonoured || epochs === undefined) return { blobId, file, state: common };
      // The key not confirmed, an earlier run of this stack killed mid-upload cannot be told from
      // someone else's upload by the key. A file stored for exactly the declared epochs since its
      // upload is taken as that run's (counted, not bought again); anything else is adopted, and
      // the declared epochs are bought on top of what it has.
      if (uploadedFor(file, clock) === epochs) {
        log(
          `warning: StoredFile ${who}: the service already stored this content, uploaded at ${file.createdAt} for exactly the declared ${epochs} epoch(s), and did not confirm the Idempotency-Key: taken as this stack's own upload from an earlier, interrupted run, and not bought again. If someone else uploaded it, raise retentionEpochs to buy more.`,
        );
        return { blobId, file, state: { ...common, retentionEpochs: epochs } };
      }
      log(
        `warning: StoredFile ${who}: the service already stored this content (uploaded at ${file.createdAt}, expiring at ${file.expiresAt}) and did not confirm the Idempotency-Key: adopted as it stands; the ${epochs} declared epoch(s) are bought on top of its period.`,
      );
      return { blobId, file, state: common };
    }
    if (result.confirmedBy === "replay" && !result.resent) {
      log(`warning: StoredFile ${who}: the service already had this upload (its Idempotency-Key was used before): taken as made by an earlier, interrupted run of this stack, and not made again.`);
    } else if (!result.keyHonoured) {
      log(`warning: StoredFile ${who}: uploaded, but the service did not confirm the Idempotency-Key: if an earlier run of this stack was interrupted while uploading this content, check on the service that it did not store it twice.`);
    }
    // A new file holds what the upload carried, and nothing else yet.
    const file = { ...result.file, name: filename, tag: tag ?? null, metadata: {} };
    return { blobId, file, state: { ...common, retentionEpochs: epochs ?? 0 } };
  }

  /**
   * Refresh: the service's view; an unknown or expired file is gone from the stack. A managed
   * field changed outside the stack is said in the output (field, old → new), and comes back as
   * an input too, so that a following preview shows what drifted (`~ tag: "edited" =>
   * "declared"`): dynamic providers cannot return a detailed diff, and the engine otherwise
   * compares unchanged inputs.
   */
  async read(id: string, props: Record<string, unknown>): Promise<pulumi.dynamic.ReadResult> {
    const redact = redactor(props);
    const before = parseState(props);
    // No state at all: an import (`pulumi import`, provider plugin only). Adopt the file as it is,
    // managing the fields it has, so the generated program declares exactly them and changes nothing.
    if (before.blobId === undefined && declaredFields(before).size === 0) return this.imported(id, urnOf(props));
    const blobId = before.blobId ?? id;
    const clock = this.clock();
    let file: ReceivedFile;
    try {
      file = await this.context.client().getFile(blobId);
    } catch (e) {
      if (isTuskrApiError(e) && e.isGone) return {};
      throw masked(describe(e, blobId, "reading the file"), redact);
    }
    const managed = declaredFields(before);
    const secret = secretInputs(before);
    for (const field of managed) {
      const was = before[field];
      const now = file[field] ?? undefined;
      if (jsonEqual(was, now)) continue;
      const change = secret.has(field) ? "(a secret input: values not shown)" : `${shown(was)} → ${shown(now)}`;
      this.log(
        redact(`warning: StoredFile ${label(before, blobId)}: ${field} was changed outside this stack: ${change}; the next \`pulumi up\` sets it back to the declared value`),
        urnOf(props),
      );
    }
    const state: StoredFileState = {
      ...observed(file, managed),
      blobId,
      retentionEpochs: before.retentionEpochs ?? 0,
      renewKeySeed: before.renewKeySeed,
      keepAlive: before.keepAlive,
      keepAliveEpochs: before.keepAliveEpochs,
      idempotencyHonoured: before.idempotencyHonoured,
      purchasedExpiresAt: before.purchasedExpiresAt,
      unconfirmedEpochs: before.unconfirmedEpochs,
      unsettledPurchase: before.unsettledPurchase,
      secretInputs: before.secretInputs,
      retentionDeclared: before.retentionDeclared,
      sourceHash: before.sourceHash,
      // No `source` among the outputs: the engine gives read an asset with its contents elided
      // (hash only), which the program could not load back. The inputs may keep it (below).
    };
    // As declared: the content for an uploaded file (the engine's elided asset: its hash), the blobId for an adopted one.
    const inputs: Record<string, unknown> = before.sourceHash ? { source: before.source } : { blobId };
    inputs.keepAlive = before.keepAlive;
    for (const field of managed) inputs[field] = file[field] ?? undefined;
    // As declared: a refresh must not make a declared `retentionEpochs: 0` look new, nor an
    // omitted one look declared. (States of earlier releases do not say: any non-zero count.)
    if (before.retentionDeclared ?? Boolean(state.retentionEpochs)) inputs.retentionEpochs = state.retentionEpochs;
    return { id, props: recorded(state, clock), inputs: compact(inputs as StoredFileState) };
  }

  /**
   * `pulumi import tuskr:index:StoredFile <name> <blobId>`: one GET, no write. The inputs are the
   * file's name, tag and metadata as they are (the ones it has), and no retentionEpochs (nothing
   * bought through the stack yet): the program the CLI prints declares them, and changes nothing.
   */
  private async imported(blobId: string, urn: string | undefined): Promise<pulumi.dynamic.ReadResult> {
    let file: ReceivedFile;
    try {
      file = await this.context.client().getFile(blobId);
    } catch (e) {
      throw describe(e, blobId, "importing the file");
    }
    const has = (field: PatchField) => {
      const v = file[field];
      return v !== undefined && v !== null && !(field === "metadata" && isPlainObject(v) && Object.keys(v).length === 0);
    };
    const managed = new Set(PATCH_FIELDS.filter(has));
    const state: StoredFileState = {
      ...observed(file, managed),
      blobId,
      retentionEpochs: 0,
      retentionDeclared: false,
      renewKeySeed: keySeed(urn, blobId),
      purchasedExpiresAt: file.expiresAt ?? undefined,
    };
    const inputs: Record<string, unknown> = { blobId };
    for (const field of managed) inputs[field] = file[field];
    return { id: blobId, props: recorded(state, this.clock()), inputs };
  }

  /** One PATCH with only the changed fields, then one renew for the increase; nothing if unchanged. */
  async update(id: string, olds: Record<string, unknown>, news: Record<string, unknown>): Promise<pulumi.dynamic.UpdateResult> {
    const redact = redactor(news);
    const before = parseState(olds);
    const blobId = String(news.blobId ?? before.blobId ?? id);
    const state: StoredFileState = {
      ...before,
      blobId,
      renewKeySeed: before.renewKeySeed ?? randomUUID(),
      secretInputs: secretList(news),
      retentionDeclared: declaresRetention(news),
      // The declared asset: the old one arrives with its contents elided (hash only), which the
      // program could not load back from the outputs.
      source: news.source,
    };
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
        const fresh = await client.getFile(blobId);
        Object.assign(before, observed(fresh, new Set(newlyManaged)));
        Object.assign(state, observed(fresh, new Set()));
      } catch (e) {
        throw masked(describe(e, blobId, "reading the file"), redact);
      }
    }
    const plan = planChange(before, news, clock);
    const refusal = planRefusal(plan);
    if (refusal) throw new Error(redact(`StoredFile ${label(state, blobId)}: ${refusal}`));
    const unchanged = JSON.stringify(compact(state));
    // The program answered a stop for unattributed epochs: exactly them declared counts them.
    if (plan.countedEpochs > 0) state.retentionEpochs = (state.retentionEpochs ?? 0) + plan.countedEpochs;
    delete state.unconfirmedEpochs;
    try {
      await applyPlan(client, blobId, state, news, plan, clock, newlyManaged.length > 0, (line) => this.log(redact(line), urnOf(news)));
    } catch (e) {
      const error = describe(e, blobId, "updating the file");
      // Only if an earlier step went through is there anything new to record.
      if (JSON.stringify(compact(state)) !== unchanged) throw masked(partialFailure(error, id, state, news[PROVIDER_KEY], clock), redact);
      throw masked(error, redact);
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
