import { type ProviderLog, mapText, noticeLine, warning } from "../engine/notice";
import { resourceUrnOf, urnName } from "../engine/urns";
import { PATCH_FIELDS, type PatchField, isPlainObject } from "../../api";
import { type ReceivedFile, TuskrClient, type TuskrClientOptions } from "../client/client";
import { TuskrApiError, isTuskrApiError } from "../client/errors";
import { type GetFileResult, readFile } from "./get-file";
import { adopt, checkRecord, confirmedStart, observe, retentionStartOf, settleUnconfirmed, type Start } from "./purchases";
import { applyPlan, type RenewFacts } from "./renew";
import { type EpochFinding, ServiceFacts, findingText } from "../service/facts";
import { type ConfigSource, type ProviderSettings, clientOptionsFrom, settingsFrom, settingsProblem } from "../config/settings";
import { describe, label, masked, redactor, subject } from "./messages";
import { type PlanClock, type PropertyDiff, planChange, planHolds, planner, propertyDiffs, type StoredFilePlan, uploadFormEpochs } from "./plan";
import { horizonClock, retentionStartEpochs } from "./epoch";
import type { DeclaredInputs, StoredFileState } from "./schema";
import { type CheckFailure, type CheckedInputs, changeFailures } from "./validate";
import { ContentClaims } from "./claims";
import { drifted, keptDriftSeen, otherServiceProblem, refreshedInputs, refreshedState } from "./refresh";
import { sourceFilename, wireAsset } from "./source";
import { compact, declaredFields, observed, recorded, withUnreported } from "./state";
import { uploadSource } from "./upload";

/**
 * StoredFile's one implementation, shared by the dynamic and plugin front doors: typed requests in,
 * typed state out. Purchases, a source's upload, messages and state shaping live in their own
 * modules.
 */

/** A resource operation's request, as a front door hands it over. */
export interface StoredFileRequest {
  /** The declared inputs, as `check` returned them. */
  inputs: DeclaredInputs;
  /** The resource's URN, when the front door knows it: purchase keys derive from it. */
  urn?: string;
  /** The inputs the program declared secret (names only): their values never reach a message. */
  secretInputs: readonly string[];
  /**
   * Upload only the content the preview saw: content that changed since is not uploaded (a
   * folder's entries, where it could turn into another entry's bytes and be bought twice).
   */
  onlyPreviewedContent?: boolean;
}

/** What a refresh (or an import, with no state) found: nothing when the file is gone. */
export interface StoredFileRead {
  id?: string;
  state?: StoredFileState;
  inputs?: DeclaredInputs;
}

/** A diff, with the property-level changes a provider plugin can show (a dynamic provider's host drops them). */
export interface StoredFileDiff {
  changes: boolean;
  replaces: string[];
  deleteBeforeReplace: boolean;
  detailedDiff: Record<string, PropertyDiff>;
}

/** Where the provider's warnings go, with the resource they are about when known. */

/**
 * A step that failed after an earlier one went through: the engine records `properties` as the
 * resource's state (and retries on the next `up`), so nothing done is forgotten. Front doors add
 * what they record beside the state.
 */
type PartialFailure = TuskrApiError & { id: string; properties: StoredFileState; reasons: string[] };

function partialFailure(error: TuskrApiError, id: string, properties: StoredFileState): PartialFailure {
  return Object.assign(error, { id, properties, reasons: [error.message] });
}

/** Why a plan must not be applied (the preview fails with it, and the apply sends nothing), or undefined. */
function planRefusal(plan: StoredFilePlan): string | undefined {
  return plan.expiredProblem ?? plan.horizonProblem;
}

/** Whether the program declares retentionEpochs (recorded, so a refresh hands back exactly the declared inputs). */
const declaresRetention = (inputs: DeclaredInputs): boolean => inputs.retentionEpochs !== undefined && inputs.retentionEpochs !== null;

/** The secret inputs' names, for the state (none: undefined, so nothing is recorded). */
const secretList = (names: readonly string[]): string[] | undefined => (names.length > 0 ? [...names] : undefined);

/**
 * Whether the secret input names differ from those recorded (order aside). A value made secret
 * unchanged must still reach the state's names, or a later refresh would show it and fingerprint it.
 */
export function secretsMoved(recorded: readonly string[] | null | undefined, names: readonly string[]): boolean {
  const was = new Set(recorded ?? []);
  const now = new Set(names);
  return was.size !== now.size || [...now].some((name) => !was.has(name));
}

/**
 * Metadata declared `{}` over stored keys clears them all. YAML and Go programs' `{a: null}`
 * arrives as that (Go drops null map entries), so the preview names the keys removed.
 */
function emptiedMetadata(state: StoredFileState, req: StoredFileRequest): string | undefined {
  const declared = req.inputs.metadata;
  const stored = state.metadata;
  if (!isPlainObject(declared) || Object.keys(declared).length > 0 || !isPlainObject(stored)) return undefined;
  const keys = Object.keys(stored);
  if (keys.length === 0) return undefined;
  const secret = req.secretInputs.includes("metadata") || (state.secretInputs ?? []).includes("metadata");
  const which = secret ? `${keys.length} key${keys.length === 1 ? "" : "s"}` : keys.join(", ");
  return (
    `metadata is declared empty: the up removes every stored key (${which}). From YAML or Go a null key arrives as none: ` + "to remove one key, leave it out"
  );
}

/**
 * Whether applying `plan` to `state` is an update: a change declared, epochs to buy, secret names
 * to record (an update that sends nothing), or something an earlier `up` sent and could not confirm.
 */
function changes(plan: StoredFilePlan, state: StoredFileState, secretInputs: readonly string[]): boolean {
  return (
    plan.changedFields.length > 0 ||
    plan.renewEpochs > 0 ||
    secretsMoved(state.secretInputs, secretInputs) ||
    Boolean(state.unconfirmedUpload || state.unconfirmedRenew)
  );
}

/** Logs that already say each cause once: wrapped again, they would say it never. */
const onceAwareLogs = new WeakSet<ProviderLog>();

/** What `configure` builds, once: the settings and (on first use) the client. */
interface Configured {
  settings: ProviderSettings;
  client(): TuskrClient;
  /** The client's latest refusal of every request, if it was built and met one (building none). */
  refusal(): TuskrApiError | undefined;
  /** What this provider process knows of the service (one service, one epoch). */
  facts: ServiceFacts;
}

export class StoredFileCore {
  private configured: Configured | undefined;

  /**
   * @param clientOptions added to what the settings give (tests inject retry counters here).
   * @param log where warnings go: stdout for the dynamic provider (the engine shows it), the
   *   engine's log for the provider plugin.
   */
  constructor(
    private readonly clientOptions: Partial<TuskrClientOptions> = {},
    private readonly log: ProviderLog = (notice) => console.log(noticeLine(notice)),
  ) {}

  /** Called by the engine with the stack config before any other method. */
  configure(config: ConfigSource | undefined): void {
    this.configured = this.build(config);
  }

  private build(config: ConfigSource | undefined): Configured {
    const settings = settingsFrom(config);
    let client: TuskrClient | undefined;
    // Built on first use: check and diff need no key, and a missing key is reported where a
    // request would need it. One client per provider process keeps the concurrency bound.
    const built = () => {
      client ??= new TuskrClient({ ...clientOptionsFrom(settings), ...this.clientOptions });
      return client;
    };
    const facts = new ServiceFacts({
      epochSeconds: settings.epochSecondsAssumed ? undefined : settings.epochSeconds,
      idempotencyKeys: settings.idempotencyKeys,
    });
    return { settings, client: built, refusal: () => client?.refusal, facts };
  }

  private get context(): Configured {
    // An engine that never called configure: the environment alone.
    this.configured ??= this.build(undefined);
    return this.configured;
  }

  /** Each call reads the time once, here, and passes this clock down. */
  private clock(): PlanClock {
    const epoch = this.context.facts.epoch;
    return { nowMs: Date.now(), epochMs: epoch.ms, epochKnown: epoch.known, warnWithinEpochs: this.context.settings.expiryWarningEpochs };
  }

  /** This moment as plans read it: the time, and the epoch as now known. */
  planClock(): PlanClock {
    return this.clock();
  }

  /** Whether a plan of a recorded file made at `then` still holds now (a folder carries its diff's verdicts on it). */
  planStillHolds(then: PlanClock): (state: StoredFileState) => boolean {
    const now = this.clock();
    return (state) => planHolds(state, then, now);
  }

  /** The length a file's state recorded counts for every file: one service, one epoch. Returns `state`. */
  private remember<T extends StoredFileState | undefined>(state: T): T {
    this.seenLength(state?.epochMsSeen);
    return state;
  }

  /** A length a file's state recorded (`epochMsSeen`), learnt as reading that state teaches it. */
  seenLength(ms: unknown): void {
    this.context.facts.seed(ms);
  }

  /** The state as recorded, with the length the stack learnt, so each later `up` finds it. */
  private record(state: StoredFileState, clock: PlanClock): StoredFileState {
    return recorded(state, clock, this.context.facts.learntMs);
  }

  /** Causes already said in this process: a warning about the service is said once per stack, never once per file. */
  private readonly said = new Set<string>();

  /** Says `text` once per provider process (one per stack and command) for `cause`. */
  sayOnce(cause: string, text: string, log: ProviderLog = this.log, urn?: string): void {
    this.onceAware(log)({ ...warning(text), once: cause }, urn);
  }

  /** `log`, saying a notice that names a cause (`once`) only the first time in this process. */
  private onceAware(log: ProviderLog): ProviderLog {
    if (onceAwareLogs.has(log)) return log;
    const aware: ProviderLog = (notice, urn) => {
      if (notice.once !== undefined) {
        if (this.said.has(notice.once)) return;
        this.said.add(notice.once);
      }
      log(notice, urn);
    };
    onceAwareLogs.add(aware);
    return aware;
  }

  /** What the purchase code reads of the service's epoch, and how it teaches it; what it learns is said once. */
  private facts(log: ProviderLog, urn?: string): RenewFacts {
    const facts = this.context.facts;
    const tell = (finding: EpochFinding | undefined) => finding && this.sayOnce(finding.kind, findingText(finding), log, urn);
    return {
      clock: () => this.clock(),
      learn: (ms) => tell(facts.learn(ms)),
      bounded: (range) => tell(facts.bounded(range)),
      probeTurn: () => facts.probeTurn(),
    };
  }

  /** A plan's notices: about the file, each said with it; about the service, once. */
  private tellPlan(plan: StoredFilePlan, who: string, redact: (t: string) => string, log: ProviderLog, urn?: string): void {
    for (const notice of plan.notices) {
      if (notice.kind === "length-probe") this.sayOnce(notice.kind, notice.text, log, urn);
      else log(warning(redact(`StoredFile ${who}: ${notice.text}`)), urn);
    }
  }

  /** The latest failure that showed the service refusing every request: a folder that sees a new one starts no more entries. */
  serviceRefusal(): TuskrApiError | undefined {
    return this.context.refusal();
  }

  /** Which resource declared each content in this run: two on one content are refused. */
  private readonly claims = new ContentClaims();

  /**
   * Judges a declaration its front door has typed (`validateInputs`, `declaredInputsOf`) against
   * the one before it. Two resources declaring one content (the same bytes, or the same adopted
   * blobId) are refused, naming both: the service keeps one entry per content.
   */
  check(olds: DeclaredInputs, news: CheckedInputs, secretInputs: readonly string[], urn?: string): CheckedInputs {
    const failures = this.judge(olds, news, secretInputs);
    const shared = failures.length === 0 && urn ? this.claims.claim(urn, news.inputs, secretInputs) : undefined;
    return { inputs: news.inputs, failures: shared ? [shared] : failures };
  }

  /** What `check` refuses in a declaration, before any claim on its content (a folder judges each of its declarations once). */
  judge(olds: DeclaredInputs, news: CheckedInputs, secretInputs: readonly string[]): CheckFailure[] {
    // Bad configuration fails the preview, before any request.
    const problem = settingsProblem(this.context.settings);
    if (problem) throw new Error(problem.message);
    return [...news.failures, ...changeFailures(olds, news.inputs, secretInputs, this.clock())];
  }

  /**
   * A one-resource folder's claim on its contents (by sha256), as `check` makes one for each
   * StoredFile: the failure of each content another resource declared first.
   */
  claimFolder(urn: string, hashes: readonly string[], secretSource: boolean): Map<string, CheckFailure> {
    return this.claims.claimFolder(urn, hashes, secretSource);
  }

  /**
   * What will change. Also where a preview reports what the engine cannot show for a dynamic
   * resource (expiry, due keep-alive) and fails early on changes the apply would refuse, before any
   * request.
   */
  diff(id: string, state: StoredFileState, req: StoredFileRequest, log: ProviderLog = this.log): StoredFileDiff {
    return this.diffOf(id, state, req, log, planChange(this.remember(state), req.inputs, this.clock()));
  }

  /** `diff` for the many files of one resource (a folder's entries): each planned as `diff` plans it, by one planner. */
  differ(): (id: string, state: StoredFileState, req: StoredFileRequest, log?: ProviderLog) => StoredFileDiff {
    const plan = this.plans();
    return (id, state, req, log = this.log) => this.diffOf(id, state, req, log, plan(state, req.inputs));
  }

  /** The diff of a file whose plan is made: its messages made only when there is something to say. */
  private diffOf(id: string, state: StoredFileState, req: StoredFileRequest, log: ProviderLog, plan: StoredFilePlan): StoredFileDiff {
    let redact: ((text: string) => string) | undefined;
    const redacted = (text: string) => {
      redact ??= redactor(req.inputs, req.secretInputs, state);
      return redact(text);
    };
    const who = () => label(state, state.blobId ?? id);
    if (plan.notices.length > 0) this.tellPlan(plan, who(), redacted, log, req.urn);
    const emptied = emptiedMetadata(state, req);
    if (emptied) log(warning(redacted(`StoredFile ${who()}: ${emptied}`)), req.urn);
    const refusal = plan.replace ? undefined : planRefusal(plan);
    if (refusal) throw new Error(redacted(`StoredFile ${who()}: ${refusal}`));
    return {
      // Secret names alone changed: an update that sends nothing and records them.
      changes: changes(plan, state, req.secretInputs),
      replaces: plan.replaceFields,
      deleteBeforeReplace: false,
      detailedDiff: propertyDiffs(state, req.inputs, plan, req.secretInputs),
    };
  }

  /**
   * What applying `inputs` (secret as `secretInputs` names) to a file recorded as `state` would
   * do, said nowhere and sent nowhere, for the many files of one resource (a folder asks it of each
   * entry): each planned by one planner.
   */
  changeTeller(): (state: StoredFileState, inputs: DeclaredInputs, secretInputs: readonly string[]) => { changes: boolean; replace: boolean } {
    const plan = this.plans();
    return (state, inputs, secretInputs) => {
      const made = plan(state, inputs);
      return { changes: changes(made, state, secretInputs), replace: made.replace };
    };
  }

  /**
   * Plans for many files at one clock, made once for the files a plan cannot tell apart
   * (`planner`, plan.ts). A length a file's state teaches the stack starts a planner in it.
   */
  private plans(): (state: StoredFileState, inputs: DeclaredInputs) => StoredFilePlan {
    let current: { ms: number; known: boolean; plan: ReturnType<typeof planner> } | undefined;
    return (state, inputs) => {
      this.remember(state);
      const epoch = this.context.facts.epoch;
      if (current === undefined || current.ms !== epoch.ms || current.known !== epoch.known)
        current = { ms: epoch.ms, known: epoch.known, plan: planner(this.clock()) };
      return current.plan(state, inputs);
    };
  }

  /**
   * Adopts an existing file (`blobId`: read it) or uploads one (`source`: the upload carries its
   * name, tag and initial epochs), then patches what differs and buys the declared epochs.
   */
  async create(req: StoredFileRequest): Promise<{ id: string; state: StoredFileState }> {
    const { inputs } = req;
    const redact = redactor(inputs, req.secretInputs);
    const log = this.onceAware((notice) => this.log(mapText(notice, redact), req.urn));
    const facts = this.facts((notice, urn) => this.log(mapText(notice, redact), urn ?? req.urn), req.urn);
    const client = this.context.client();
    const asset = wireAsset(inputs.source);
    let start: Start;
    try {
      start = asset
        ? await uploadSource(client, asset, inputs, { onlyPreviewedContent: req.onlyPreviewedContent, owner: req.urn }, facts, log)
        : await adopt(client, String(inputs.blobId), this.clock());
    } catch (e) {
      // An upload has no blobId yet: it is named by its resource (a folder's entry by its path, which the folder says).
      const resource = req.urn !== undefined && resourceUrnOf(req.urn) === req.urn ? urnName(req.urn) : undefined;
      const failure = describe(
        e,
        asset ? (resource ?? `(upload of ${sourceFilename(asset, inputs.name ?? undefined)})`) : String(inputs.blobId),
        asset ? "uploading the file" : "adopting the file",
      );
      // Sent, perhaps bought, its entry not shown to hold these bytes: recorded as unconfirmed, so
      // the next `up` checks it again before anything is sent on it, and never uploads it again.
      const uploaded = asset && isTuskrApiError(e) ? e.uploaded : undefined;
      if (!asset || !uploaded) throw masked(failure, redact);
      const { blobId: id, ...claim } = uploaded;
      const unconfirmed: StoredFileState = {
        blobId: id,
        sourceHash: asset.hash,
        source: inputs.source,
        retentionEpochs: 0,
        retentionDeclared: declaresRetention(inputs),
        secretInputs: secretList(req.secretInputs),
        serviceUrl: client.baseUrl,
        unconfirmedUpload: { ...claim, epochs: Math.max(1, uploadFormEpochs(inputs, this.clock())) },
      };
      throw masked(partialFailure(failure, id, this.record(unconfirmed, this.clock())), redact);
    }
    const { blobId } = start;
    const state: StoredFileState = {
      ...observed(start.file, declaredFields(inputs)),
      blobId,
      retentionEpochs: 0,
      retentionDeclared: declaresRetention(inputs),
      keepAlive: isPlainObject(inputs.keepAlive) ? inputs.keepAlive : undefined,
      contentType: typeof inputs.contentType === "string" ? inputs.contentType : undefined,
      secretInputs: secretList(req.secretInputs),
      serviceUrl: client.baseUrl,
      ...start.state,
    };
    const clock = this.clock();
    const plan = planChange({ ...state, keepAlive: undefined }, inputs, clock);
    // A create has no preview diff to say it: buying to learn the length is said here, once.
    for (const notice of plan.notices) if (notice.kind === "length-probe") this.sayOnce(notice.kind, notice.text, log);
    const refusal = planRefusal(plan);
    if (refusal) {
      const message = `StoredFile ${label(state, blobId)}: ${refusal}`;
      // Adopting wrote nothing. An upload stored the file and bought its epochs: recorded, so the
      // next run does not upload it again, and plans what it still lacks from what it has.
      if (!asset) throw new Error(redact(message));
      throw masked(partialFailure(new TuskrApiError({ code: "VALIDATION_ERROR", message }), blobId, this.record(state, clock)), redact);
    }
    try {
      await applyPlan(client, blobId, state, inputs, plan, facts, true, log);
    } catch (e) {
      // The file exists and may already be patched: record it, so nothing done is forgotten.
      throw masked(partialFailure(describe(e, blobId, asset ? "uploading the file" : "adopting the file"), blobId, this.record(state, this.clock())), redact);
    }
    return { id: blobId, state: this.record(state, this.clock()) };
  }

  /**
   * Refresh: an unknown or expired file is gone. A drifted managed field is reported and returned
   * as an input too, because dynamic providers cannot return a detailed diff and the engine
   * otherwise compares unchanged inputs. `path`: a folder's entry's, which its messages name.
   */
  async read(id: string, before: StoredFileState, urn?: string, path?: string): Promise<StoredFileRead> {
    const secrets = before.secretInputs ?? [];
    const redact = redactor(before, secrets);
    // No state at all: an import (`pulumi import`, provider plugin only). Adopt the file as it is,
    // managing the fields it has, so the generated program declares exactly them and changes nothing.
    if (before.blobId === undefined && declaredFields(before).size === 0) return this.imported(id);
    const blobId = before.blobId ?? id;
    const who = subject(before, blobId, urn, path);
    this.remember(before);
    const client = this.context.client();
    let file: Partial<ReceivedFile>;
    try {
      file = withUnreported(await client.getFile(blobId), before);
    } catch (e) {
      if (isTuskrApiError(e) && e.isGone) {
        const why = e.status === 410 ? "has expired" : "does not exist (unknown blobId)";
        // Another service's word says nothing of this file: it stays in the stack.
        if (before.serviceUrl && before.serviceUrl !== client.baseUrl) {
          throw new Error(
            redact(
              `${who}: ${client.baseUrl} says the file ${why}, but it is held by ${before.serviceUrl}: kept. Set tuskr:baseUrl back, or run \`pulumi state delete\` to forget it`,
            ),
          );
        }
        // A state of an earlier release does not say which service holds the file: its url does.
        if (!before.serviceUrl && before.url && (await client.servedAt(before.url, before.size ?? 1)) !== "gone") {
          throw new Error(
            redact(
              `${who}: ${client.baseUrl} says the file ${why}, but its url ${before.url} does not: kept. Set tuskr:baseUrl to its service, or run \`pulumi state delete\``,
            ),
          );
        }
        this.log(warning(redact(`${who}: the service says the file ${why}: it leaves the stack's state (nothing is deleted)`)), urn);
        return {};
      }
      throw masked(describe(e, blobId, "reading the file"), redact);
    }
    const elsewhere = otherServiceProblem(before, file, client.baseUrl, blobId);
    if (elsewhere) throw new Error(redact(elsewhere));
    const managed = declaredFields(before);
    for (const line of drifted(before, file, managed, blobId, who)) this.log(warning(redact(line)), urn);
    // No `source` among the outputs: the engine gives read an asset with its contents elided
    // (hash only), which the program could not load back. The inputs may keep it.
    // A renew whose outcome an earlier `up` did not learn is settled by this record.
    const settled = { ...before };
    settleUnconfirmed(
      settled,
      file,
      this.facts((notice, u) => this.log(mapText(notice, redact), u ?? urn), urn),
    );
    const now = this.clock();
    try {
      checkRecord(file, horizonClock(now), blobId);
    } catch (e) {
      throw masked(describe(e, blobId, "reading the file"), redact);
    }
    const state = refreshedState(settled, file, managed, now, { blobId, serviceUrl: client.baseUrl });
    const inputs = refreshedInputs(before, state, file, managed);
    return { id, state: this.record(state, this.clock()), inputs: compact(inputs) as DeclaredInputs };
  }

  /**
   * `pulumi import`: one GET, no write. Inputs are the file's current fields and no
   * retentionEpochs, so the program the CLI prints changes nothing.
   */
  private async imported(blobId: string): Promise<StoredFileRead> {
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
      serviceUrl: this.context.client().baseUrl,
      ...retentionStartOf(file, this.clock()),
    };
    const inputs: Record<string, unknown> = { blobId };
    for (const field of managed) inputs[field] = file[field];
    return { id: blobId, state: this.record(state, this.clock()), inputs: inputs as DeclaredInputs };
  }

  /** `getFile`: one GET of any file, nothing written. */
  getFile(blobId: unknown): Promise<GetFileResult> {
    return readFile(this.context.client(), blobId, this.clock());
  }

  /** One PATCH with only the changed fields, then one renew for the increase; nothing if unchanged. */
  async update(id: string, before: StoredFileState, req: StoredFileRequest): Promise<StoredFileState> {
    const news = req.inputs;
    const redact = redactor(news, req.secretInputs, before);
    const blobId = String(news.blobId ?? before.blobId ?? id);
    const state: StoredFileState = {
      ...before,
      blobId,
      secretInputs: secretList(req.secretInputs),
      retentionDeclared: declaresRetention(news),
      // The declared asset: the old one arrives with its contents elided (hash only), which the
      // program could not load back from the outputs.
      source: news.source,
    };
    // A field no longer declared is no longer managed: it leaves the state, the file keeps it.
    for (const field of PATCH_FIELDS) if (news[field] === undefined || news[field] === null) delete state[field];
    // And so does its drift fingerprint, as does one of a field now secret.
    state.driftSeen = keptDriftSeen(before.driftSeen, declaredFields(news), req.secretInputs);
    state.keepAlive = isPlainObject(news.keepAlive) ? news.keepAlive : undefined;
    // A stored type cannot be changed (the plan's notice says so): the declaration is recorded, `mimeType` stays the served one.
    state.contentType = typeof news.contentType === "string" ? news.contentType : undefined;
    this.remember(before);
    const log: ProviderLog = this.onceAware((notice, urn) => this.log(mapText(notice, redact), urn ?? req.urn));
    const facts = this.facts(log, req.urn);
    const clock = this.clock();
    const client = this.context.client();
    const claim = before.unconfirmedUpload;
    if (claim) {
      // An upload an earlier `up` could not confirm: its entry is checked again before anything is sent on it.
      try {
        const { file, checkedBy } = await client.confirmUploaded({ blobId, ...claim });
        const confirmed = { ...observed(file, new Set()), ...confirmedStart(file, claim, checkedBy, clock), unconfirmedUpload: undefined };
        Object.assign(before, confirmed);
        Object.assign(state, confirmed);
      } catch (e) {
        throw masked(describe(e, blobId, "checking an earlier upload"), redact);
      }
    }
    // In epochs: a state of an earlier release gets the start its purchases imply.
    state.retentionStartEpochs = retentionStartEpochs(before, clock);
    // A field declared now but not managed before is not in the state: read the file once, so
    // the PATCH is planned against what the service holds (metadata keys it has must go too).
    const newlyManaged = PATCH_FIELDS.filter((f) => news[f] !== undefined && news[f] !== null && before[f] === undefined);
    if (newlyManaged.length > 0) {
      try {
        const fresh = await client.getFile(blobId);
        observe(state, fresh, new Set(), facts, blobId);
        Object.assign(before, observed(fresh, new Set(newlyManaged)));
      } catch (e) {
        throw masked(describe(e, blobId, "reading the file"), redact);
      }
    }
    const plan = planChange(before, news, clock);
    const refusal = planRefusal(plan);
    if (refusal) throw new Error(redact(`StoredFile ${label(state, blobId)}: ${refusal}`));
    const unchanged = JSON.stringify(compact(state));
    try {
      await applyPlan(client, blobId, state, news, plan, facts, newlyManaged.length > 0, log);
    } catch (e) {
      const error = describe(e, blobId, "updating the file");
      // Only if an earlier step went through is there anything new to record.
      if (JSON.stringify(compact(state)) !== unchanged) throw masked(partialFailure(error, id, this.record(state, this.clock())), redact);
      throw masked(error, redact);
    }
    // A file changed through this service is held by it.
    if (plan.changedFields.length > 0 || plan.renewEpochs > 0 || newlyManaged.length > 0) state.serviceUrl = client.baseUrl;
    return this.record(state, this.clock());
  }
}
