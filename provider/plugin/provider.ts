import { isPlainObject } from "../../api";
import { CONFIG_KEYS, ProviderConfigSchema, type SettingName, settingsFrom, settingsProblems, configOfSettings } from "../config/settings";
import { SECRET_SIG, SIG_KEY, UNKNOWN } from "../engine/markers";
import { StoredFileCore, type StoredFileRequest } from "../file/core";
import type { ProviderLog } from "../engine/notice";
import type { PropertyDiff } from "../file/plan";
import type { StoredFileState } from "../file/schema";
import { type CheckFailure, declaredInputsOf, validateInputs } from "../file/validate";
import { hideBookkeeping, parseState } from "../file/state";
import { GET_FILE_TOKEN } from "./schema";
import { StoredFolderCore, type StoredFolderRequest, stepDigest } from "../folder/core";
import { reclaimAfter } from "../folder/memory";
import { folderInputsOf, validatedInputs } from "../folder/inputs";
import { type StoredFolderState, folderStateOf as parsedFolderState } from "../folder/schema";
import { RESTING, restingFor, restingRecord } from "../folder/resting";
import type { TuskrClientOptions } from "../client/client";

/**
 * The plugin's front door to the same core the dynamic resource runs, adding only plugin duties:
 * secret markers unwrapped and restored, engine URNs, typed config, property diffs, import. gRPC
 * lives in server.ts.
 */

type Props = Record<string, unknown>;

const isSecret = (v: unknown): v is { value: unknown } => isPlainObject(v) && (v as Props)[SIG_KEY] === SECRET_SIG;
const secret = (value: unknown) => ({ [SIG_KEY]: SECRET_SIG, value });

/** The value with every secret marker inside replaced by its value; whether there was one. */
function reveal(value: unknown): { value: unknown; secret: boolean } {
  if (isSecret(value)) return { value: reveal(value.value).value, secret: true };
  if (Array.isArray(value)) {
    const items = value.map(reveal);
    return { value: items.map((i) => i.value), secret: items.some((i) => i.secret) };
  }
  // Other special values (assets, archives, resource references) are kept as they are.
  if (isPlainObject(value) && (value as Props)[SIG_KEY] === undefined) {
    let any = false;
    const out: Props = {};
    for (const [k, v] of Object.entries(value as Props)) {
      const r = reveal(v);
      out[k] = r.value;
      any ||= r.secret;
    }
    return { value: out, secret: any };
  }
  return { value, secret: false };
}

/** Top-level properties revealed, and the names of those that held a secret. */
function revealAll(props: Props | undefined): { plain: Props; secrets: string[] } {
  const plain: Props = {};
  const secrets: string[] = [];
  for (const [k, v] of Object.entries(props ?? {})) {
    const r = reveal(v);
    plain[k] = r.value;
    if (r.secret) secrets.push(k);
  }
  return { plain, secrets };
}

/** The named properties marked secret again (the engine then keeps them encrypted in state). */
function conceal(props: Props, names: Iterable<string>): Props {
  const out = { ...props };
  for (const name of names) if (out[name] !== undefined) out[name] = secret(out[name]);
  return out;
}

/** A resource operation's request: the inputs revealed, the URN from the engine, the secret inputs from their markers. */
function requestOf(urn: string, props: Props | undefined): { inputs: Props; urn: string; secretInputs: string[] } {
  const { plain, secrets } = revealAll(props);
  return { inputs: plain, urn, secretInputs: secrets };
}

/** A StoredFile request: its inputs as `check` returned them, revealed and typed. */
function fileRequestOf(urn: string, props: Props | undefined): StoredFileRequest {
  const { inputs, secretInputs } = requestOf(urn, props);
  return { inputs: declaredInputsOf(inputs), urn, secretInputs };
}

/** Recorded state, revealed (it names its secret inputs itself). */
const stateOf = (props: Props | undefined): StoredFileState => parseState(revealAll(props).plain);

/** What the core records, with the secret inputs marked secret (names from the state itself). */
const recordedOutputs = (state: StoredFileState): Props => conceal(hideBookkeeping(state), state.secretInputs ?? []);

/** The settings as the plugin's config inputs carry them (typed, perhaps secret), keyed as stack config. */
const configSource = (args: Props | undefined) => configOfSettings(revealAll(args).plain);

export class StoredFilePlugin {
  private readonly core: StoredFileCore;
  /** `tuskr:index:StoredFolder`: its entries kept by this same core (one claim of each content across both types). */
  readonly folder: StoredFolderPlugin;

  constructor(log: ProviderLog, clientOptions: Partial<TuskrClientOptions> = {}) {
    this.core = new StoredFileCore(clientOptions, log);
    this.folder = new StoredFolderPlugin(new StoredFolderCore(this.core, log));
  }

  /**
   * Provider config, at preview and before any request: each setting's type, and the rules the
   * dynamic resource applies (plain http refused unless loopback or allowed), naming the setting.
   */
  checkConfig(news: Props): { inputs: Props; failures: CheckFailure[] } {
    const failures: CheckFailure[] = [];
    const { plain, secrets } = revealAll(news);
    for (const [name, schema] of Object.entries(ProviderConfigSchema.shape) as Array<[SettingName, (typeof ProviderConfigSchema.shape)[SettingName]]>) {
      const value = plain[name];
      if (value === undefined || value === null || value === UNKNOWN) continue;
      // Stack config may hold numbers and booleans as text: read them as the dynamic resource does.
      const candidate = typeof value === "string" && name !== "apiKey" && name !== "baseUrl" ? coerce(value) : value;
      const parsed = schema.safeParse(candidate);
      if (!parsed.success) failures.push({ property: name, reason: `${CONFIG_KEYS[name]}: ${parsed.error.issues[0]?.message ?? "invalid"}` });
    }
    // What the settings make of the values (each setting once: its type was said above).
    for (const problem of settingsProblems(settingsFrom(configSource(news)))) {
      if (!failures.some((f) => f.property === problem.setting)) failures.push({ property: problem.setting, reason: problem.message });
    }
    for (const key of Object.keys(plain)) {
      if (!(key in ProviderConfigSchema.shape) && key !== "version") {
        failures.push({
          property: key,
          reason: `${key} is not a setting of the tuskr provider (settings: ${Object.keys(ProviderConfigSchema.shape).join(", ")})`,
        });
      }
    }
    // The key is secret whether or not it was given as one.
    return { inputs: conceal(plain, new Set([...secrets, "apiKey"])), failures };
  }

  /** A settings change never replaces the provider (which would replace every file): it updates it. */
  diffConfig(olds: Props, news: Props): { changes: boolean } {
    const a = revealAll(olds).plain;
    const b = revealAll(news).plain;
    const keys = new Set([...Object.keys(a), ...Object.keys(b)].filter((k) => k !== "version"));
    return { changes: [...keys].some((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k])) };
  }

  async configure(args: Props): Promise<void> {
    this.core.configure(configSource(args));
  }

  async check(urn: string, olds: Props, news: Props): Promise<{ inputs: Props; failures: CheckFailure[] }> {
    const { inputs, secretInputs } = requestOf(urn, news);
    const checked = this.core.check(declaredInputsOf(revealAll(olds).plain), validateInputs(inputs, secretInputs), secretInputs, urn);
    return { inputs: conceal(checked.inputs, secretInputs), failures: checked.failures };
  }

  async diff(id: string, urn: string, olds: Props, news: Props): Promise<{ changes: boolean; replaces: string[]; detailedDiff: Record<string, PropertyDiff> }> {
    const { changes, replaces, detailedDiff } = this.core.diff(id, stateOf(olds), fileRequestOf(urn, news));
    return { changes, replaces, detailedDiff };
  }

  async create(urn: string, news: Props): Promise<{ id: string; outs: Props }> {
    const { id, state } = await this.core.create(fileRequestOf(urn, news)).catch(rethrowPartial);
    return { id, outs: recordedOutputs(state) };
  }

  /** Refresh, and import (no state): one GET. */
  async read(id: string, urn: string, props: Props): Promise<{ id?: string; props?: Props; inputs?: Props }> {
    const { id: found, state, inputs } = await this.core.read(id, stateOf(props), urn);
    if (found === undefined || state === undefined) return {};
    return { id: found, props: recordedOutputs(state), inputs: conceal({ ...inputs }, state.secretInputs ?? []) };
  }

  async update(id: string, urn: string, olds: Props, news: Props): Promise<{ outs: Props }> {
    const state = await this.core.update(id, stateOf(olds), fileRequestOf(urn, news)).catch(rethrowPartial);
    return { outs: recordedOutputs(state) };
  }

  /** The plugin's functions: `tuskr:index:getFile`. */
  async invoke(token: string, args: Props): Promise<Props> {
    if (token !== GET_FILE_TOKEN) throw new Error(`the tuskr provider has no function ${token}`);
    const { blobId } = revealAll(args).plain;
    return { ...(await this.core.getFile(blobId)) };
  }

  /** Blobs cannot be deleted through the API: the file keeps its period, and no request is sent. */
  async delete(): Promise<void> {
    // Nothing to do.
  }
}

/** "8" → 8, "true" → true: config given on the command line is text. */
function coerce(value: string): unknown {
  if (value === "true" || value === "false") return value === "true";
  const n = Number(value);
  return value.trim() !== "" && Number.isFinite(n) ? n : value;
}

/** A partial failure (the file exists, some steps done) keeps its recorded state, secrets marked. */
function rethrowPartial(error: unknown): never {
  const e = error as { properties?: Props };
  if (e && isPlainObject(e.properties)) e.properties = recordedOutputs(e.properties as StoredFileState);
  throw error;
}

/** A folder's recorded state, revealed and read leniently. */
const folderStateOf = (props: Props | undefined): StoredFolderState => parsedFolderState(revealAll(props).plain);

/**
 * A folder operation's request: its inputs (as `check` returned them) revealed and typed, the URN
 * from the engine, the secret inputs from their markers; given olds, the step's digest.
 */
function folderRequestOf(urn: string, props: Props | undefined, olds?: Props): StoredFolderRequest {
  const { plain, secrets } = revealAll(props);
  return { inputs: folderInputsOf(plain), urn, secretInputs: secrets, ...(olds ? { sent: stepDigest(olds, props) } : {}) };
}

/**
 * What a folder records, its secret inputs marked secret — and its entries too when any value is
 * (they hold the values). What it handed over always is: it holds values an earlier step declared.
 */
function folderOutputs(state: StoredFolderState): Props {
  const secrets = state.secretInputs ?? [];
  return conceal(state as Props, [...(secrets.length > 0 ? [...secrets, "entries"] : []), "handedOver"]);
}

/**
 * What a verdict is made for besides the outputs: the inputs as values and secret names (the engine
 * may mark a value secret that the plugin did not, and a value marked secret anew is a change), and
 * the URN, whose name the verdict's notices say.
 */
const restedOn = (urn: string, news: Props): Props => {
  const { plain, secrets } = revealAll(news);
  return { inputs: plain, secrets, urn };
};

/** The plugin's front door for `tuskr:index:StoredFolder`: the same shape as StoredFile's, over the folder core. */
export class StoredFolderPlugin {
  constructor(private readonly core: StoredFolderCore) {}

  async check(urn: string, olds: Props, news: Props): Promise<{ inputs: Props; failures: CheckFailure[] }> {
    const { inputs, secretInputs } = requestOf(urn, news);
    const checked = this.core.check(() => folderInputsOf(revealAll(olds).plain), validatedInputs(inputs, secretInputs), secretInputs, urn);
    const answer = { inputs: conceal(checked.inputs, secretInputs), failures: checked.failures };
    // What the walk and the judging made goes before the plugin's server copies the inputs into its message.
    reclaimAfter(isPlainObject(checked.inputs.manifest) ? Object.keys(checked.inputs.manifest).length : 0);
    return answer;
  }

  /** `oldInputs`: the inputs the engine recorded (after a refresh, those it handed back), where it sends them. */
  async diff(
    id: string,
    urn: string,
    olds: Props,
    news: Props,
    oldInputs: Props = {},
  ): Promise<{ changes: boolean; replaces: string[]; detailedDiff: Record<string, PropertyDiff> }> {
    // What the last write found still holds: its entries are not read (folder/resting.ts).
    const resting = restingFor(revealAll(olds).plain, restedOn(urn, news));
    if (resting && this.core.rests(resting, urn)) return { changes: false, replaces: [], detailedDiff: {} };
    const { changes, replaces, detailedDiff } = this.core.diff(
      id,
      folderStateOf(olds),
      folderRequestOf(urn, news, olds),
      folderInputsOf(revealAll(oldInputs).plain),
    );
    return { changes, replaces, detailedDiff };
  }

  async create(urn: string, news: Props): Promise<{ id: string; outs: Props }> {
    const req = folderRequestOf(urn, news);
    const { id, state } = await this.core.create(req).catch(rethrowFolderPartial);
    return { id, outs: this.written(state, req, news) };
  }

  async read(id: string, urn: string, props: Props): Promise<{ id?: string; props?: Props; inputs?: Props }> {
    const before = folderStateOf(props);
    const { id: found, state, inputs } = await this.core.read(id, before, urn);
    if (found === undefined || state === undefined) return {};
    // The verdict of the last write is kept: the next diff takes it only if the refresh changed nothing.
    const outs = folderOutputs(state);
    if (props[RESTING] !== undefined) outs[RESTING] = props[RESTING];
    return { id: found, props: outs, inputs: conceal({ ...inputs }, state.secretInputs ?? []) };
  }

  async update(id: string, urn: string, olds: Props, news: Props): Promise<{ outs: Props }> {
    const req = folderRequestOf(urn, news, olds);
    const state = await this.core.update(id, () => folderStateOf(olds), req).catch(rethrowFolderPartial);
    return { outs: this.written(state, req, news) };
  }

  /** The outputs a write records, with the verdict the next diff would reach when that is nothing to do (secret: it says what the diff says). */
  private written(state: StoredFolderState, req: StoredFolderRequest, news: Props): Props {
    const resting = this.core.restingAfter(state, req);
    const outs = folderOutputs(state);
    if (resting) outs[RESTING] = secret(restingRecord(resting, revealAll(outs).plain, restedOn(req.urn ?? "", news)));
    return outs;
  }
}

/** A folder's partial failure keeps what was done (each entry that went through), secrets marked. */
function rethrowFolderPartial(error: unknown): never {
  const e = error as { properties?: Props };
  if (e && isPlainObject(e.properties)) e.properties = folderOutputs(e.properties as StoredFolderState);
  throw error;
}
