import { isPlainObject } from "../../api";
import { CONFIG_KEYS, ProviderConfigSchema, type SettingName, settingsFrom, settingsProblem } from "../settings";
import { type ProviderLog, StoredFileProvider } from "../stored-file-provider";
import type { PropertyDiff } from "../stored-file-plan";
import { secretInputs, UNKNOWN } from "../stored-file-schema";
import { SIG_KEY } from "../stored-file-source";
import type { TuskrClientOptions } from "../client/client";

/**
 * The provider plugin's resource logic: the same StoredFileProvider the dynamic resource runs
 * (schema, planner, client), with what only a plugin has to do around it — the engine's secret
 * markers unwrapped on the way in and put back on the way out, the URN given by the engine,
 * provider config as typed inputs, property-level diffs, import. No gRPC here (server.ts).
 */

/** The secret kind of Pulumi's special values. */
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

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

/** The properties without the two the provider adds for itself (the URN, the secret inputs' names). */
function withoutInternal(props: Props): Props {
  const { __urn: _urn, __secretInputs: _secrets, ...rest } = props;
  return rest;
}

/** Inputs a resource operation gets: revealed, with the URN and the secret inputs' names the provider reads. */
function resourceInputs(urn: string, props: Props | undefined): Props {
  const { plain, secrets } = revealAll(props);
  return { ...withoutInternal(plain), __urn: urn, ...(secrets.length > 0 ? { __secretInputs: secrets } : {}) };
}

/** State the provider reads: revealed, with the URN (it keeps the names of its secret inputs itself). */
function resourceState(urn: string, props: Props | undefined): Props {
  return { ...revealAll(props).plain, __urn: urn };
}

/** What the provider records, with the secret inputs marked secret (names from the state itself). */
function recordedOutputs(outs: Props | undefined): Props {
  const { __urn: _urn, ...rest } = outs ?? {};
  return conceal(rest, secretInputs(rest));
}

export interface CheckFailure {
  property: string;
  reason: string;
}

/** The settings as the plugin's config inputs carry them (typed, perhaps secret), keyed as stack config. */
function configSource(args: Props | undefined) {
  const { plain } = revealAll(args);
  const byKey = new Map<string, unknown>(Object.entries(CONFIG_KEYS).map(([name, key]) => [key, plain[name]]));
  return { get: (key: string) => byKey.get(key) };
}

export class StoredFilePlugin {
  private readonly core: StoredFileProvider;

  constructor(log: ProviderLog, clientOptions: Partial<TuskrClientOptions> = {}) {
    this.core = new StoredFileProvider(clientOptions, log);
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
    const problem = settingsProblem(settingsFrom(configSource(news)));
    if (problem) failures.push({ property: "baseUrl", reason: problem });
    for (const key of Object.keys(plain)) {
      if (!(key in ProviderConfigSchema.shape) && key !== "version") {
        failures.push({ property: key, reason: `${key} is not a setting of the tuskr provider (settings: ${Object.keys(ProviderConfigSchema.shape).join(", ")})` });
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
    await this.core.configure({ config: configSource(args) });
  }

  async check(urn: string, olds: Props, news: Props): Promise<{ inputs: Props; failures: CheckFailure[] }> {
    const checkedNews = resourceInputs(urn, news);
    const { inputs, failures } = await this.core.check(revealAll(olds).plain, checkedNews);
    return { inputs: conceal(withoutInternal(inputs as Props), secretInputs(checkedNews)), failures: failures ?? [] };
  }

  async diff(id: string, urn: string, olds: Props, news: Props): Promise<{ changes: boolean; replaces: string[]; detailedDiff: Record<string, PropertyDiff> }> {
    const result = await this.core.diff(id, resourceState(urn, olds), resourceInputs(urn, news));
    return { changes: result.changes === true, replaces: result.replaces ?? [], detailedDiff: result.detailedDiff };
  }

  async create(urn: string, news: Props): Promise<{ id: string; outs: Props }> {
    const { id, outs } = await this.core.create(resourceInputs(urn, news)).catch(rethrowPartial);
    return { id, outs: recordedOutputs(outs) };
  }

  /** Refresh, and import (no state): one GET. */
  async read(id: string, urn: string, props: Props): Promise<{ id?: string; props?: Props; inputs?: Props }> {
    const result = await this.core.read(id, resourceState(urn, props));
    if (result.id === undefined) return {};
    const recorded = recordedOutputs(result.props as Props);
    const inputs = { ...(result.inputs as Props) };
    return { id: result.id, props: recorded, inputs: conceal(inputs, secretInputs(result.props as Props)) };
  }

  async update(id: string, urn: string, olds: Props, news: Props): Promise<{ outs: Props }> {
    const { outs } = await this.core.update(id, resourceState(urn, olds), resourceInputs(urn, news)).catch(rethrowPartial);
    return { outs: recordedOutputs(outs) };
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
  if (e && isPlainObject(e.properties)) e.properties = recordedOutputs(e.properties);
  throw error;
}
