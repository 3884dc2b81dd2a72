import axios, { type AxiosInstance, type AxiosResponse } from "axios";
import { z } from "zod";
import {
  ErrorEnvelopeSchema,
  FileRecordSchema,
  IDEMPOTENCY_KEY_HEADER,
  RenewBodySchema,
  UpdateFileBodySchema,
  blobIdProblem,
  errorCodeForStatus,
  filePath as contractPath,
  type UpdateFileBody,
} from "../../api";
import { USER_AGENT } from "../version";
import { TuskrApiError, redactString, redactValue } from "./errors";
import { DEFAULT_RETRY_POLICY, type RetryPolicy, Semaphore, backoffDelayMs, serverRequestedWaitSeconds, sleep } from "./retry";

export const DEFAULT_BASE_URL = "https://api.tuskr.dev";

export interface TuskrClientOptions {
  baseUrl?: string;
  apiKey: string;
  /** Per-request timeout. */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** Most requests this client has in flight at once (the provider process shares one client). */
  maxConcurrency?: number;
  /** Called once per retry, for logs and tests; never given the key. */
  onRetry?: (info: { method: string; path: string; attempt: number; waitMs: number; error: TuskrApiError }) => void;
  /** Injected in tests to make the jitter deterministic. */
  random?: () => number;
}

// ---------------------------------------------------------------------------------------------
// Response schemas: minimal and tolerant ("only what is needed"). Unknown fields are dropped,
// absent ones stay absent; a body that does not match becomes a TuskrApiError(INVALID_RESPONSE).
// ---------------------------------------------------------------------------------------------

/**
 * A file record as the client takes it: the contract's shape (api/files.ts), with every field
 * but blobId allowed to be missing or null, since the service documents only part of it.
 */
const f = FileRecordSchema.shape;
const ReceivedFileSchema = z.object({
  blobId: f.blobId,
  url: f.url.nullish(),
  name: f.name.optional(),
  tag: f.tag.optional(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  size: f.size.nullish(),
  createdAt: f.createdAt.nullish(),
  expiresAt: f.expiresAt.nullish(),
});
export type ReceivedFile = z.infer<typeof ReceivedFileSchema>;

/** PATCH answers the updated record (assumed) or 204/empty (tolerated). */
const UpdateFileResponseSchema = ReceivedFileSchema.partial().optional();
/** Renew answers the updated record, perhaps with Tusky-like extras; or nothing (tolerated). */
const RenewFileResponseSchema = ReceivedFileSchema.partial()
  .extend({ epochsAdded: z.number().nullish() })
  .optional();

export interface RenewOptions {
  /** Sent as `Idempotency-Key`; reused verbatim on every retry of this purchase. */
  idempotencyKey: string;
  /**
   * The file's expiry as last seen before this renew. After an ambiguous failure the client
   * reads the file back and compares its expiry with this one (see `readBackVerdict`).
   */
  expiresAtBefore?: string | null;
  /**
   * Length of one epoch. With it, the read-back counts the renew as applied only if the expiry
   * moved by exactly the epochs asked for, so a renewal made elsewhere since `expiresAtBefore`
   * is not mistaken for ours. Without it, any move counts as applied.
   */
  epochMs?: number;
}

export interface RenewResult {
  /** The file after the renew, when the service (or the read-back) told us. */
  file?: Partial<ReceivedFile>;
  /** How we know the epochs were bought: the service answered, or a read-back saw the expiry move. */
  confirmedBy: "response" | "read-back";
}

/** Path of a file's route, after the contract's blobId rule (refused as BAD_REQUEST, before any request). */
export function filePath(blobId: string, route: "file" | "renew" = "file"): string {
  assertSafeBlobId(blobId);
  return contractPath(blobId, route);
}

export function assertSafeBlobId(blobId: string): void {
  const problem = blobIdProblem(blobId);
  if (problem) throw new TuskrApiError({ code: "BAD_REQUEST", message: `blobId ${problem}`, retryable: false });
}

interface SendOptions<S extends z.ZodType> {
  body?: unknown;
  headers?: Record<string, string>;
  schema: S;
  /**
   * Whether a failure that may have been applied (timeout, reset, 5xx) can be retried as is.
   * True for GET and PATCH (same body, same result); false for renew, which buys epochs.
   */
  retryAmbiguous: boolean;
}

export class TuskrClient {
  private readonly http: AxiosInstance;
  private readonly apiKey: string;
  private readonly policy: RetryPolicy;
  private readonly gate: Semaphore;
  private readonly random: () => number;
  private readonly onRetry?: TuskrClientOptions["onRetry"];
  readonly baseUrl: string;

  constructor(options: TuskrClientOptions) {
    if (!options.apiKey) {
      throw new TuskrApiError({
        code: "CONFIG_ERROR",
        message: "no API key: set the secret stack config `tuskr:apiKey` (pulumi config set --secret tuskr:apiKey ...) or TUSKR_API_KEY",
      });
    }
    this.apiKey = options.apiKey;
    this.baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.gate = new Semaphore(options.maxConcurrency ?? 8);
    this.random = options.random ?? Math.random;
    this.onRetry = options.onRetry;
    this.http = axios.create({
      baseURL: this.baseUrl,
      timeout: options.timeoutMs ?? 30_000,
      headers: {
        Authorization: `Bearer ${this.apiKey}`,
        "Content-Type": "application/json",
        Accept: "application/json",
        "User-Agent": USER_AGENT,
      },
      // Every status comes back as a response; we decide what is an error, not axios
      // (whose errors carry the request config, Authorization header included).
      validateStatus: () => true,
      // Parse JSON ourselves so a non-JSON body is reported, not silently kept as text.
      responseType: "text",
      transformResponse: [(data: unknown) => data],
      maxRedirects: 0,
    });
  }

  /** Requests currently in flight (for tests of the concurrency bound). */
  get inFlight(): number {
    return this.gate.inFlight;
  }

  /** `GET /v1/files/:blobId` — the file's index entry. */
  async getFile(blobId: string): Promise<ReceivedFile> {
    return this.send("GET", filePath(blobId), { schema: ReceivedFileSchema, retryAmbiguous: true });
  }

  /** `PATCH /v1/files/:blobId` with only the fields that change. Safe to retry: same body, same result. */
  async updateFile(blobId: string, patch: UpdateFileBody): Promise<Partial<ReceivedFile> | undefined> {
    const body = parseBody(UpdateFileBodySchema, patch, "PATCH", filePath(blobId));
    return this.send("PATCH", filePath(blobId), { body, schema: UpdateFileResponseSchema, retryAmbiguous: true });
  }

  /**
   * `POST /v1/files/:blobId/renew`. Never retried blindly: the same Idempotency-Key goes with
   * every attempt, and after an ambiguous failure the file is read back; the renew is sent again
   * unless the expiry moved by exactly this purchase (`readBackVerdict`). Without a prior expiry
   * to compare with, it fails with RENEW_OUTCOME_UNKNOWN rather than risk buying twice.
   */
  async renewFile(blobId: string, epochs: number, options: RenewOptions): Promise<RenewResult> {
    const path = filePath(blobId, "renew");
    const body = parseBody(RenewBodySchema, { epochs }, "POST", path);
    const headers = { [IDEMPOTENCY_KEY_HEADER]: options.idempotencyKey };
    const rounds = Math.max(1, this.policy.maxAttempts);
    let lastError: TuskrApiError | undefined;
    for (let round = 1; round <= rounds; round++) {
      try {
        const file = await this.send("POST", path, { body, headers, schema: RenewFileResponseSchema, retryAmbiguous: false });
        return { file: file ?? undefined, confirmedBy: "response" };
      } catch (e) {
        const error = e as TuskrApiError;
        if (!isAmbiguous(error)) throw error;
        lastError = error;
      }
      // The renew may or may not have been applied. Look before buying again.
      if (!options.expiresAtBefore) break;
      let after: ReceivedFile;
      try {
        after = await this.getFile(blobId);
      } catch {
        break;
      }
      const verdict = readBackVerdict(options.expiresAtBefore, after.expiresAt, epochs, options.epochMs);
      if (verdict === "applied") return { file: after, confirmedBy: "read-back" };
      // "not-applied": safe to send again. "unattributable": the expiry moved by more than this
      // purchase, so someone else renewed the file since it was last seen and the move cannot
      // tell whether ours is in it. Sent again with the same Idempotency-Key either way: a
      // service that applied it replays the purchase instead of making it twice.
    }
    throw new TuskrApiError({
      code: "RENEW_OUTCOME_UNKNOWN",
      message:
        `renew of ${epochs} epoch(s) for blobId ${JSON.stringify(blobId)} may or may not have been applied ` +
        `(${lastError?.message ?? "ambiguous failure"}); not retried to avoid buying twice. ` +
        "Run `pulumi refresh` and `pulumi up` again: the same idempotency key is reused.",
      method: "POST",
      path,
      status: lastError?.status,
      retryable: false,
    });
  }

  private async send<S extends z.ZodType>(method: string, path: string, opts: SendOptions<S>): Promise<z.infer<S>> {
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      let error: TuskrApiError;
      try {
        const response = await this.gate.run(() =>
          this.http.request({ method, url: path, data: opts.body === undefined ? undefined : JSON.stringify(opts.body), headers: opts.headers }),
        );
        if (response.status >= 200 && response.status < 300) return this.parseResponse(method, path, response, opts.schema);
        error = this.httpError(method, path, response);
      } catch (e) {
        error = e instanceof TuskrApiError ? e : this.transportError(method, path, e);
      }
      const retryable = error.retryable && (opts.retryAmbiguous || !isAmbiguous(error));
      // A 429 is the server pacing us, not failing: it is bounded by the time budget only, so a
      // rate-limited run slows down instead of failing after a handful of attempts.
      const outOfAttempts = attempt >= this.policy.maxAttempts && error.status !== 429;
      if (!retryable || outOfAttempts) throw error;
      const serverWaitMs = error.retryAfterSeconds !== undefined ? Math.ceil(error.retryAfterSeconds * 1000) : undefined;
      const waitMs = serverWaitMs ?? backoffDelayMs(attempt, this.policy, this.random);
      if (Date.now() - started + waitMs > this.policy.maxTotalMs) throw error;
      this.onRetry?.({ method, path, attempt, waitMs, error });
      await sleep(waitMs);
    }
  }

  private parseResponse<S extends z.ZodType>(method: string, path: string, response: AxiosResponse, schema: S): z.infer<S> {
    const text = typeof response.data === "string" ? response.data : "";
    let json: unknown = undefined;
    if (text.trim() !== "") {
      try {
        json = JSON.parse(text);
      } catch {
        throw this.invalidResponse(method, path, response.status, "the body is not JSON", text.slice(0, 500));
      }
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? issue.path.join(".") : "body";
      throw this.invalidResponse(method, path, response.status, `${where}: ${issue?.message ?? "does not match the schema"}`, json);
    }
    return parsed.data;
  }

  private invalidResponse(method: string, path: string, status: number, detail: string, body: unknown): TuskrApiError {
    return new TuskrApiError({
      code: "INVALID_RESPONSE",
      message: this.redact(`${method} ${path} answered ${status} with an unexpected body: ${detail}`),
      status,
      method,
      path,
      retryable: false,
      responseBody: redactValue(body, [this.apiKey]),
    });
  }

  private httpError(method: string, path: string, response: AxiosResponse): TuskrApiError {
    const text = typeof response.data === "string" ? response.data : "";
    let body: unknown = text || undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* keep the text */
    }
    const envelope = ErrorEnvelopeSchema.safeParse(body);
    const status = response.status;
    const code = envelope.success ? envelope.data.error.code : (errorCodeForStatus(status) ?? (status >= 500 ? "INTERNAL_ERROR" : "HTTP_ERROR"));
    const serverMessage = envelope.success ? envelope.data.error.message : undefined;
    const waitSeconds = serverRequestedWaitSeconds(response.headers as Record<string, unknown>);
    return new TuskrApiError({
      code,
      status,
      method,
      path,
      message: this.redact(`${method} ${path} failed with ${status} ${code}${serverMessage ? `: ${serverMessage}` : ""}`),
      retryable: status === 429 || status >= 500,
      responseBody: redactValue(body, [this.apiKey]),
      retryAfterSeconds: status === 429 || status === 503 ? waitSeconds : undefined,
      mayHaveBeenApplied: status >= 500,
    });
  }

  private transportError(method: string, path: string, e: unknown): TuskrApiError {
    const err = e as { code?: string; message?: string };
    const timeout = err.code === "ECONNABORTED" || err.code === "ETIMEDOUT" || /timeout/i.test(err.message ?? "");
    // Refused or unresolvable: the request never reached the server, so it was not applied.
    const neverSent = err.code === "ECONNREFUSED" || err.code === "ENOTFOUND" || err.code === "EAI_AGAIN";
    return new TuskrApiError({
      code: timeout ? "TIMEOUT" : "NETWORK_ERROR",
      message: this.redact(`${method} ${this.baseUrl}${path} ${timeout ? "timed out" : `failed: ${err.code ?? err.message ?? "network error"}`}`),
      method,
      path,
      retryable: true,
      mayHaveBeenApplied: !neverSent,
    });
  }

  private redact(text: string): string {
    return redactString(text, [this.apiKey]);
  }
}

/** A failure after which the request may have been applied: timeouts, resets, 5xx. */
function isAmbiguous(error: TuskrApiError): boolean {
  return error.mayHaveBeenApplied;
}

/**
 * What a read-back after an ambiguous renew failure says about that renew, from how far the
 * expiry moved since it was last seen. Expiry only grows, by whole epochs, so with the epoch
 * length known:
 * - moved less than this purchase: ours is not in it ("not-applied");
 * - moved by this purchase (within half an epoch): ours ("applied");
 * - moved by more: someone else renewed too, and ours may or may not be part of it
 *   ("unattributable"). Taking that as applied would record epochs never bought.
 * Without the epoch length, any move counts as applied.
 */
export function readBackVerdict(
  before: string,
  after: string | null | undefined,
  epochs: number,
  epochMs?: number,
): "applied" | "not-applied" | "unattributable" {
  const b = Date.parse(before);
  const a = after ? Date.parse(after) : NaN;
  if (Number.isNaN(a) || Number.isNaN(b)) return "not-applied";
  const moved = a - b;
  if (!epochMs) return moved > 0 ? "applied" : "not-applied";
  const expected = epochs * epochMs;
  if (moved < expected - epochMs / 2) return "not-applied";
  if (moved <= expected + epochMs / 2) return "applied";
  return "unattributable";
}

function parseBody<S extends z.ZodType>(schema: S, body: unknown, method: string, path: string): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new TuskrApiError({
      code: "BAD_REQUEST",
      message: `${method} ${path}: invalid request body at ${issue?.path.join(".") || "body"}: ${issue?.message}`,
      method,
      path,
      retryable: false,
    });
  }
  return parsed.data;
}
