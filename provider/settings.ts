import { DEFAULT_BASE_URL, TuskrClient, type TuskrClientOptions } from "./client/client";

/**
 * Where the provider's credentials come from: the stack config (`tuskr:apiKey` as a secret,
 * `tuskr:baseUrl`) handed to the dynamic provider's `configure`, else the environment
 * (`TUSKR_API_KEY`, `TUSKR_BASE_URL`). They live only in this module of the provider process:
 * never in the serialized provider, never in resource inputs or outputs, so never in state.
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
}

export const CONFIG_KEYS = {
  apiKey: "tuskr:apiKey",
  baseUrl: "tuskr:baseUrl",
  maxConcurrency: "tuskr:maxConcurrency",
  timeoutMs: "tuskr:timeoutMs",
  epochSeconds: "tuskr:epochSeconds",
  expiryWarningEpochs: "tuskr:expiryWarningEpochs",
} as const;

export const DEFAULT_EPOCH_SECONDS = 86_400;
export const DEFAULT_EXPIRY_WARNING_EPOCHS = 3;

export const ENV_VARS = {
  apiKey: "TUSKR_API_KEY",
  baseUrl: "TUSKR_BASE_URL",
} as const;

/** The slice of Pulumi's dynamic-provider config we read. */
export interface ConfigSource {
  get(key: string): unknown;
}

let fromConfig: Partial<ProviderSettings> = {};
let cachedClient: { key: string; client: TuskrClient } | undefined;

/** Called by the dynamic provider's `configure` with the stack config. */
export function applyConfig(config: ConfigSource | undefined): void {
  const text = (key: string): string | undefined => {
    const v = config?.get(key);
    return typeof v === "string" && v !== "" ? v : undefined;
  };
  const int = (key: string): number | undefined => {
    const v = text(key);
    const n = v === undefined ? undefined : Number(v);
    return n !== undefined && Number.isInteger(n) && n > 0 ? n : undefined;
  };
  fromConfig = {
    apiKey: text(CONFIG_KEYS.apiKey),
    baseUrl: text(CONFIG_KEYS.baseUrl),
    maxConcurrency: int(CONFIG_KEYS.maxConcurrency),
    timeoutMs: int(CONFIG_KEYS.timeoutMs),
    epochSeconds: int(CONFIG_KEYS.epochSeconds),
    expiryWarningEpochs: int(CONFIG_KEYS.expiryWarningEpochs),
  };
  cachedClient = undefined;
}

export function resolveSettings(env: NodeJS.ProcessEnv = process.env): ProviderSettings {
  return {
    apiKey: fromConfig.apiKey ?? (env[ENV_VARS.apiKey] || undefined),
    baseUrl: fromConfig.baseUrl ?? (env[ENV_VARS.baseUrl] || DEFAULT_BASE_URL),
    maxConcurrency: fromConfig.maxConcurrency,
    timeoutMs: fromConfig.timeoutMs,
    epochSeconds: fromConfig.epochSeconds ?? DEFAULT_EPOCH_SECONDS,
    expiryWarningEpochs: fromConfig.expiryWarningEpochs ?? DEFAULT_EXPIRY_WARNING_EPOCHS,
  };
}

/** The plan's clock: now, and the epoch settings. */
export function planClock(nowMs: number = Date.now()): { nowMs: number; epochMs: number; warnWithinEpochs: number } {
  const s = resolveSettings();
  return { nowMs, epochMs: s.epochSeconds * 1000, warnWithinEpochs: s.expiryWarningEpochs };
}

/** One client per provider process (so the concurrency bound holds across resources). */
export function getClient(overrides: Partial<TuskrClientOptions> = {}): TuskrClient {
  const s = resolveSettings();
  const key = JSON.stringify([s.baseUrl, s.apiKey, s.maxConcurrency, s.timeoutMs]);
  if (!cachedClient || cachedClient.key !== key) {
    cachedClient = {
      key,
      client: new TuskrClient({
        apiKey: s.apiKey ?? "",
        baseUrl: s.baseUrl,
        maxConcurrency: s.maxConcurrency,
        timeoutMs: s.timeoutMs,
        ...overrides,
      }),
    };
  }
  return cachedClient.client;
}
