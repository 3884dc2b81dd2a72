import { DEFAULT_BASE_URL, type TuskrClientOptions, insecureBaseUrlProblem } from "./client/client";

/**
 * The provider's settings: the stack config handed to `configure` (`tuskr:apiKey` as a secret,
 * `tuskr:baseUrl`, …), else the environment (`TUSKR_API_KEY`, `TUSKR_BASE_URL`). Built once per
 * `configure`; they live only in the provider process — never in the serialized provider, never
 * in resource inputs or outputs, so never in state.
 */
export interface ProviderSettings {
  apiKey?: string;
  baseUrl: string;
  maxConcurrency?: number;
  timeoutMs?: number;
  /** Length of one epoch in seconds (the service's setting; about a day). */
  epochSeconds: number;
  /** Previews warn about files with this many epochs left or fewer. */
  expiryWarningEpochs: number;
  /** Send the key over plain http to a host other than loopback. */
  allowInsecureHttp: boolean;
}

const DEFAULT_EPOCH_SECONDS = 86_400;
const DEFAULT_EXPIRY_WARNING_EPOCHS = 3;

/** Stack config keys, by setting. */
const CONFIG_KEYS = {
  apiKey: "tuskr:apiKey",
  baseUrl: "tuskr:baseUrl",
  maxConcurrency: "tuskr:maxConcurrency",
  timeoutMs: "tuskr:timeoutMs",
  epochSeconds: "tuskr:epochSeconds",
  expiryWarningEpochs: "tuskr:expiryWarningEpochs",
  allowInsecureHttp: "tuskr:allowInsecureHttp",
} as const satisfies Record<keyof ProviderSettings, string>;

const ENV_VARS = {
  apiKey: "TUSKR_API_KEY",
  baseUrl: "TUSKR_BASE_URL",
} as const;

/** The slice of Pulumi's dynamic-provider config we read. */
export interface ConfigSource {
  get(key: string): unknown;
}

/** The settings from the stack config, with the environment and the defaults behind it. */
export function settingsFrom(config: ConfigSource | undefined, env: NodeJS.ProcessEnv = process.env): ProviderSettings {
  const text = (key: string): string | undefined => {
    const v = config?.get(key);
    return typeof v === "string" && v !== "" ? v : undefined;
  };
  const int = (key: string): number | undefined => {
    const v = text(key);
    const n = v === undefined ? undefined : Number(v);
    return n !== undefined && Number.isInteger(n) && n > 0 ? n : undefined;
  };
  return {
    apiKey: text(CONFIG_KEYS.apiKey) ?? (env[ENV_VARS.apiKey] || undefined),
    baseUrl: text(CONFIG_KEYS.baseUrl) ?? (env[ENV_VARS.baseUrl] || DEFAULT_BASE_URL),
    maxConcurrency: int(CONFIG_KEYS.maxConcurrency),
    timeoutMs: int(CONFIG_KEYS.timeoutMs),
    epochSeconds: int(CONFIG_KEYS.epochSeconds) ?? DEFAULT_EPOCH_SECONDS,
    expiryWarningEpochs: int(CONFIG_KEYS.expiryWarningEpochs) ?? DEFAULT_EXPIRY_WARNING_EPOCHS,
    allowInsecureHttp: text(CONFIG_KEYS.allowInsecureHttp) === "true",
  };
}

/** What is wrong with the settings, naming the config key, or undefined: checked before any request. */
export function settingsProblem(settings: ProviderSettings): string | undefined {
  const insecure = insecureBaseUrlProblem(settings.baseUrl, settings.allowInsecureHttp);
  return insecure ? `${CONFIG_KEYS.baseUrl}: ${insecure}` : undefined;
}

/** The client options these settings make (the caller adds its own, e.g. a retry counter in tests). */
export function clientOptionsFrom(settings: ProviderSettings): TuskrClientOptions {
  return {
    apiKey: settings.apiKey ?? "",
    baseUrl: settings.baseUrl,
    maxConcurrency: settings.maxConcurrency,
    timeoutMs: settings.timeoutMs,
    allowInsecureHttp: settings.allowInsecureHttp,
  };
}
