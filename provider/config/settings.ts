import { z } from "zod";
import { DEFAULT_EPOCH_SECONDS } from "../../api";
import { DEFAULT_BASE_URL, DEFAULT_MAX_CONCURRENCY, DEFAULT_TIMEOUT_MS, type TuskrClientOptions } from "../client/client";
import { apiKeyProblem, insecureBaseUrlProblem } from "../client/urls";
import { IDEMPOTENCY_KEYS } from "../service/facts";

/**
 * How each setting is documented and typed, once: the README's configuration table, the package
 * schema's `config` and the provider plugin's config inputs all derive from these.
 */
interface SettingDoc {
  description: string;
  /** The default, as the README says it. */
  default: string;
  /** The environment variable read when the stack config does not set it. */
  env?: string;
  /** Never shown: the package schema marks it secret. */
  secret?: boolean;
}
const setting = <T extends z.ZodType>(schema: T, doc: SettingDoc): T => schema.meta({ ...doc });
const positiveInt = z.number().int().positive();
const DEFAULT_EXPIRY_WARNING_EPOCHS = 3;

export const ProviderConfigSchema = z.object({
  apiKey: setting(z.string(), {
    description: "The Tuskr API key (`tsk_live_…`). Set it as a secret: `pulumi config set --secret tuskr:apiKey …`.",
    default: "— (required)",
    env: "TUSKR_API_KEY",
    secret: true,
  }),
  baseUrl: setting(z.string(), { description: "The service's base URL.", default: `\`${DEFAULT_BASE_URL}\``, env: "TUSKR_BASE_URL" }),
  maxConcurrency: setting(positiveInt, {
    description: "Requests in flight at most, per `up`.",
    default: `${DEFAULT_MAX_CONCURRENCY} requests in flight per \`up\``,
  }),
  timeoutMs: setting(positiveInt, {
    description: "Deadline of one request, the whole answer included, in milliseconds.",
    default: `${DEFAULT_TIMEOUT_MS}: one request, the whole answer included`,
  }),
  epochSeconds: setting(positiveInt, {
    description:
      "The service's epoch in seconds, as `pulumi-tuskr doctor` measured it: purchases count in it. A renew's answer showing another length counts over it (and is said).",
    default: `unset: counts wait for the service's answers, and the first purchase that depends on the length buys 1 epoch to learn it (previews count in ${DEFAULT_EPOCH_SECONDS} s)`,
  }),
  idempotencyKeys: setting(z.enum(IDEMPOTENCY_KEYS), {
    description:
      "Whether the service honours `Idempotency-Key` (`honoured`: it replays the first answer of a key), as `pulumi-tuskr doctor` found it: with `honoured` a purchase whose answer was lost is sent again under its key; with `ignored` never.",
    default: "unset: each `up` takes keys as honoured only once the service has replayed an answer",
  }),
  expiryWarningEpochs: setting(positiveInt, {
    description: "Previews warn about files with this many epochs left or fewer.",
    default: `${DEFAULT_EXPIRY_WARNING_EPOCHS}`,
  }),
  allowInsecureHttp: setting(z.boolean(), {
    description: "Allow a plain `http://` base URL to a host other than this machine (the key would cross the network in clear).",
    default:
      "`false`: a `http://` base URL is refused (at preview, before any request) unless its host is this machine (`localhost`, `127.x.x.x`, `::1`), since the key would cross the network in clear",
  }),
});

/** A setting's documentation, from the config schema. */
export function settingDoc(key: keyof typeof ProviderConfigSchema.shape): SettingDoc {
  return ProviderConfigSchema.shape[key].meta() as unknown as SettingDoc;
}

/**
 * The provider's settings, from stack config else environment. They live only in the provider
 * process, never in the serialized provider or resource inputs/outputs, so never in state.
 */
export type ProviderSettings = Partial<z.infer<typeof ProviderConfigSchema>> &
  Required<Pick<z.infer<typeof ProviderConfigSchema>, "baseUrl" | "epochSeconds" | "expiryWarningEpochs" | "allowInsecureHttp">> & {
    /** Whether epochSeconds is the default, set by nobody: the service's answers then teach it. */
    epochSecondsAssumed?: boolean;
    /** Settings given a value that is not one of theirs (refused before any request, never replaced by a default). */
    unreadable?: Array<{ setting: SettingName; value: string }>;
  };

/** The package's name in stack config: every setting is `tuskr:<name>`. */
export const CONFIG_NAMESPACE = "tuskr";
const SETTINGS = ProviderConfigSchema.keyof().options;
export type SettingName = (typeof SETTINGS)[number];
/** Stack config keys, by setting. */
export const CONFIG_KEYS = Object.fromEntries(SETTINGS.map((k) => [k, `${CONFIG_NAMESPACE}:${k}`])) as { [K in SettingName]: `tuskr:${K}` };

/** The slice of Pulumi's dynamic-provider config we read. */
export interface ConfigSource {
  get(key: string): unknown;
}

/** Settings given by name (the provider plugin's inputs, as the engine passes or records them), read as stack config. */
export function configOfSettings(values: Record<string, unknown>): ConfigSource {
  const byKey = new Map<string, unknown>(Object.entries(CONFIG_KEYS).map(([name, key]) => [key, values[name]]));
  return { get: (key) => byKey.get(key) };
}

/** The settings from the stack config, with the environment and the defaults behind it. */
export function settingsFrom(config: ConfigSource | undefined, env: NodeJS.ProcessEnv = process.env): ProviderSettings {
  const fromEnv = (key: SettingName): string | undefined => {
    const name = settingDoc(key).env;
    return name ? env[name] || undefined : undefined;
  };
  // Stack config arrives as text (dynamic providers) or typed (the provider plugin): either way, text.
  const text = (key: SettingName): string | undefined => {
    const v = config?.get(CONFIG_KEYS[key]);
    if (typeof v === "number" || typeof v === "boolean") return String(v);
    return typeof v === "string" && v !== "" ? v : fromEnv(key);
  };
  const int = (key: SettingName): number | undefined => {
    const v = text(key);
    const n = v === undefined ? undefined : Number(v);
    return n !== undefined && Number.isSafeInteger(n) && n > 0 ? n : undefined;
  };
  const unreadable: Array<{ setting: SettingName; value: string }> = [];
  for (const key of ["maxConcurrency", "timeoutMs", "epochSeconds", "expiryWarningEpochs"] as const) {
    const v = text(key);
    if (v !== undefined && int(key) === undefined) unreadable.push({ setting: key, value: v });
  }
  const keys = text("idempotencyKeys");
  if (keys !== undefined && oneOf(keys, IDEMPOTENCY_KEYS) === undefined) unreadable.push({ setting: "idempotencyKeys", value: keys });
  return {
    unreadable,
    apiKey: text("apiKey"),
    baseUrl: text("baseUrl") ?? DEFAULT_BASE_URL,
    maxConcurrency: int("maxConcurrency"),
    timeoutMs: int("timeoutMs"),
    epochSeconds: int("epochSeconds") ?? DEFAULT_EPOCH_SECONDS,
    epochSecondsAssumed: int("epochSeconds") === undefined,
    idempotencyKeys: oneOf(text("idempotencyKeys"), IDEMPOTENCY_KEYS),
    expiryWarningEpochs: int("expiryWarningEpochs") ?? DEFAULT_EXPIRY_WARNING_EPOCHS,
    allowInsecureHttp: text("allowInsecureHttp") === "true",
  };
}

/** `value` when it is one of `options`, else undefined. */
function oneOf<T extends string>(value: string | undefined, options: readonly T[]): T | undefined {
  return options.find((o) => o === value);
}

/** What is wrong with the settings, naming the config key, or undefined: checked before any request. */
export function settingsProblem(settings: ProviderSettings): { setting: SettingName; message: string } | undefined {
  return settingsProblems(settings)[0];
}

/** Everything wrong with the settings, each naming its config key. */
export function settingsProblems(settings: ProviderSettings): Array<{ setting: SettingName; message: string }> {
  const problems: Array<{ setting: SettingName; message: string }> = [];
  // Every request needs the key: without one, a preview would promise what the apply cannot do.
  if (!settings.apiKey) {
    problems.push({
      setting: "apiKey",
      message:
        `${CONFIG_KEYS.apiKey} is not set: set the Tuskr API key as a secret (pulumi config set --secret ${CONFIG_KEYS.apiKey} <key>)` +
        ` or in the environment (${settingDoc("apiKey").env})`,
    });
  }
  const keyProblem = settings.apiKey ? apiKeyProblem(settings.apiKey) : undefined;
  if (keyProblem) problems.push({ setting: "apiKey", message: `${CONFIG_KEYS.apiKey} ${keyProblem}` });
  // A value that is not one of the setting's is refused, never replaced by the default.
  for (const bad of settings.unreadable ?? []) {
    const expected = bad.setting === "idempotencyKeys" ? IDEMPOTENCY_KEYS.join(" or ") : "a whole number above 0";
    problems.push({ setting: bad.setting, message: `${CONFIG_KEYS[bad.setting]} must be ${expected} (got ${JSON.stringify(bad.value.slice(0, 40))})` });
  }
  const insecure = insecureBaseUrlProblem(settings.baseUrl, settings.allowInsecureHttp);
  if (insecure) problems.push({ setting: "baseUrl", message: `${CONFIG_KEYS.baseUrl}: ${insecure}` });
  return problems;
}

/** The client options these settings make (the caller adds its own, e.g. a retry counter in tests). */
export function clientOptionsFrom(settings: ProviderSettings): TuskrClientOptions {
  return {
    apiKey: settings.apiKey ?? "",
    baseUrl: settings.baseUrl,
    maxConcurrency: settings.maxConcurrency,
    timeoutMs: settings.timeoutMs,
    allowInsecureHttp: settings.allowInsecureHttp,
    idempotencyKeys: settings.idempotencyKeys,
  };
}
