import { FaultInjector, type FaultConfig } from "./faults";
import { EmulatorServer, type RequestCounts, type RequestLogEntry } from "./server";
import { DUPLICATE_UPLOAD_MODES, type DuplicateUploadMode, type IdempotencyMode, type InspectedFile } from "./service";
import type { FileStore, StoreOptions } from "./store";
import { DiskFileStore } from "./store-disk";
import { MemoryFileStore } from "./store-memory";

/**
 * The Tuskr emulator as a library: `startEmulator()` serves the service's routes over real HTTP
 * on loopback and hands back its URL, `close()` and direct helpers for tests. The CLI
 * (`tuskr-emulator`, cli.ts) is a thin wrapper around this.
 */

/** The key the emulator accepts when none is configured. Shaped like a real key, never one. */
export const EMULATOR_DEFAULT_API_KEY = "tsk_test_emulator_local_key";

export interface EmulatorOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Keys with full access. Default: [EMULATOR_DEFAULT_API_KEY]. */
  apiKeys?: string[];
  /** Keys that can read but get 403 FORBIDDEN on every write. */
  readOnlyApiKeys?: string[];
  /** Directory for state.json and blobs/; undefined keeps everything in memory. */
  dataDir?: string;
  /** Length of an epoch. Default: the data directory's, else 86400 (one day). */
  epochSeconds?: number;
  /** Seed of random fault injection (default 1). */
  seed?: number;
  faults?: FaultConfig;
  /** Token bucket over /v1 requests; 429 RATE_LIMIT_EXCEEDED beyond it. Off by default. */
  rateLimit?: { requestsPerSecond: number };
  /**
   * "honour" (default): renew remembers each accepted Idempotency-Key, replays it and echoes it.
   * "ignore": renew pays no attention to the header, as a service that does not support it.
   */
  idempotency?: IdempotencyMode;
  /**
   * What an upload of bytes already stored does (undocumented for the real service): "existing"
   * (default) answers with that entry unchanged; "purchase" adds the upload's epochs to it and
   * overwrites its name and tag; "refuse" answers 409 ALREADY_STORED naming it.
   */
  duplicateUpload?: DuplicateUploadMode;
  /**
   * The CDN (`GET /cdn/:blobId`, each record's `url`) serves bytes only with a key, as a gateway in
   * front of the service may. Default false: anyone with the url reads it.
   */
  cdnWantsKey?: boolean;
  /**
   * Each API key's prepaid balance, in epochs (an epoch costs one credit): a renew that costs
   * more than what is left answers 402 INSUFFICIENT_BALANCE and buys nothing. Unlimited by
   * default. Kept in memory: a restart refills it.
   */
  prepaidBalance?: number;
}

export interface EmulatorUpload {
  content: string | Uint8Array;
  filename?: string;
  /** Default: the filename. */
  name?: string;
  mimeType?: string;
  tag?: string;
  category?: string;
  /** Default 1. */
  epochs?: number;
}

export interface Emulator {
  /** Base URL, e.g. http://127.0.0.1:40123 (no trailing slash). */
  readonly url: string;
  readonly port: number;
  /** Absolute data directory, or undefined in memory. */
  readonly dataDir: string | undefined;
  /** Epoch length in force (the data directory's when it had one). */
  readonly epochSeconds: number;
  /** Stops listening, cuts open connections and waits for pending writes. Safe to call twice. */
  close(): Promise<void>;
  /** Moves the clock forward (persisted); returns the new current epoch. */
  advanceEpochs(epochs: number): Promise<number>;
  currentEpoch(): number;
  /** Forgets files, idempotency records and the request log, and restarts the clock. Keys, faults and limits stay. */
  reset(): Promise<void>;
  /** The /v1 requests received so far, in order of arrival (the latest 10,000). */
  requests(): RequestLogEntry[];
  /** How many /v1 requests were answered, by route and status (`{ upload: { "201": 3 } }`), however many the log keeps. */
  requestCounts(): RequestCounts;
  /** The /v1 requests received and not answered yet (a `hang` fault holds them), in order of arrival. */
  inFlight(): RequestLogEntry[];
  /** Empties the log and the counts. */
  clearRequests(): void;
  /** Everything the emulator keeps about each file, including endEpoch and epochsBought. */
  files(): InspectedFile[];
  /** Replaces the fault configuration and restarts its random sequence. */
  setFaults(config: FaultConfig): void;
  /** The fault configuration, with what is left of the script. */
  faults(): FaultConfig;
  /** Uploads without HTTP (not logged, no faults); same rules as POST /v1/files. */
  uploadFile(upload: EmulatorUpload): Promise<InspectedFile>;
}

const DEFAULT_SEED = 1;

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const apiKeys = options.apiKeys ?? [EMULATOR_DEFAULT_API_KEY];
  const readOnlyApiKeys = options.readOnlyApiKeys ?? [];
  checkOptions(options, apiKeys, readOnlyApiKeys);

  const store = await openStore({ dataDir: options.dataDir, epochSeconds: options.epochSeconds });
  const faults = new FaultInjector(options.seed ?? DEFAULT_SEED, options.faults);
  const server = new EmulatorServer({
    store,
    faults,
    apiKeys,
    readOnlyApiKeys,
    rateLimit: options.rateLimit,
    idempotency: options.idempotency,
    prepaidBalance: options.prepaidBalance,
    duplicateUpload: options.duplicateUpload,
    cdnWantsKey: options.cdnWantsKey,
  });
  let url: string;
  try {
    url = await server.listen(options.port ?? 0, options.host ?? "127.0.0.1");
  } catch (error) {
    await store.flush();
    throw error;
  }
  const service = server.files;

  return {
    url,
    port: Number(new URL(url).port),
    dataDir: store.dataDir,
    epochSeconds: store.clock.epochSeconds,
    close: () => server.close(),
    async advanceEpochs(epochs: number) {
      if (!Number.isSafeInteger(epochs) || epochs < 0) throw new Error(`advanceEpochs: epochs must be a non-negative integer, got ${epochs}`);
      await store.advance(epochs);
      return store.clock.currentEpoch();
    },
    currentEpoch: () => store.clock.currentEpoch(),
    reset: () => server.reset(),
    requests: () => server.requests(),
    requestCounts: () => server.requestCounts(),
    inFlight: () => server.inFlight(),
    clearRequests: () => void server.clearRequests(),
    files: () => service.dump(),
    setFaults: (config) => faults.set(config),
    faults: () => faults.view(),
    async uploadFile(upload) {
      const content = typeof upload.content === "string" ? Buffer.from(upload.content, "utf8") : Buffer.from(upload.content);
      return service.internalView(await service.uploadDirect({ ...upload, content }));
    },
  };
}

/** The store for these options: on disk with a data directory, else in memory. */
function openStore(options: StoreOptions = {}): Promise<FileStore> {
  return options.dataDir === undefined ? Promise.resolve(MemoryFileStore.open(options)) : DiskFileStore.openDir(options.dataDir, options);
}

function checkOptions(options: EmulatorOptions, apiKeys: string[], readOnlyApiKeys: string[]): void {
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`port must be an integer from 0 to 65535, got ${port}`);
  if (apiKeys.length === 0) throw new Error("apiKeys must hold at least one key");
  for (const key of [...apiKeys, ...readOnlyApiKeys]) {
    // Never echo the key itself: it may be a real one pasted by mistake.
    if (typeof key !== "string" || !/^\S+$/.test(key)) throw new Error("every API key must be a non-empty string without whitespace");
  }
  if (readOnlyApiKeys.some((key) => apiKeys.includes(key))) throw new Error("a key cannot be both in apiKeys and readOnlyApiKeys");
  if (options.epochSeconds !== undefined && !(Number.isFinite(options.epochSeconds) && options.epochSeconds > 0)) {
    throw new Error(`epochSeconds must be a positive number, got ${options.epochSeconds}`);
  }
  if (options.seed !== undefined && !(Number.isInteger(options.seed) && options.seed >= 0 && options.seed < 2 ** 32)) {
    throw new Error(`seed must be an integer from 0 to 2^32-1, got ${options.seed}`);
  }
  const rps = options.rateLimit?.requestsPerSecond;
  if (options.rateLimit !== undefined && !(typeof rps === "number" && Number.isFinite(rps) && rps > 0)) {
    throw new Error(`rateLimit.requestsPerSecond must be a positive number, got ${rps}`);
  }
  if (options.prepaidBalance !== undefined && !(Number.isSafeInteger(options.prepaidBalance) && options.prepaidBalance >= 0)) {
    throw new Error(`prepaidBalance must be a whole number of epochs >= 0, got ${options.prepaidBalance}`);
  }
  if (options.idempotency !== undefined && options.idempotency !== "honour" && options.idempotency !== "ignore") {
    throw new Error(`idempotency must be "honour" or "ignore", got ${JSON.stringify(options.idempotency)}`);
  }
  if (options.duplicateUpload !== undefined && !DUPLICATE_UPLOAD_MODES.includes(options.duplicateUpload)) {
    throw new Error(`duplicateUpload must be one of ${DUPLICATE_UPLOAD_MODES.join(", ")}, got ${JSON.stringify(options.duplicateUpload)}`);
  }
}

export { UPLOAD_MAX_BYTES } from "./body";
export { ERRORS, EmulatorError, type ErrorEntry } from "./errors";
export {
  FAULT_KINDS,
  FAULT_ROUTES,
  type FaultConfig,
  type FaultKind,
  type FaultRoute,
  type FaultRouteSelector,
  type RouteFaultRates,
  type ScriptedFault,
} from "./faults";
export type { LoggedRoute, RequestCounts, RequestLogEntry } from "./server";
export { blobIdOf, DUPLICATE_UPLOAD_MODES, type DuplicateUploadMode, type IdempotencyMode, type InspectedFile, type RenewAnswer } from "./service";
export { STATE_FILE } from "./store-disk";
