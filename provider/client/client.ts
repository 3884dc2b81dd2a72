import * as fs from "node:fs";
import type { AxiosInstance, AxiosResponse, AxiosStatic } from "axios";
import { z } from "zod";
import {
  ErrorEnvelopeSchema,
  FileRecordSchema,
  IDEMPOTENCY_KEY_HEADER,
  LIMITS,
  PATHS,
  UploadRecordSchema,
  RenewBodySchema,
  UpdateFileBodySchema,
  blobIdProblem,
  boundedText,
  errorCodeForStatus,
  filePath as contractPath,
  metadataLimitProblem,
  type UpdateFileBody,
} from "../../api";
import { USER_AGENT } from "./version";
import { TuskrApiError, isTuskrApiError, redactString, redactValue } from "./errors";
import { type MultipartBody, carriedAsIs, multipartBody } from "./multipart";
import { DEFAULT_RETRY_POLICY, type RetryPolicy, Semaphore, backoffDelayMs, serverRequestedWaitSeconds, sleep } from "./retry";

export const DEFAULT_BASE_URL = "https://api.tuskr.dev";
export const DEFAULT_TIMEOUT_MS = 30_000;
/** Requests in flight at most, per client (one per provider process). */
export const DEFAULT_MAX_CONCURRENCY = 8;
/** The largest response body the client reads; a larger one is refused, never kept. */
const RESPONSE_MAX_BYTES = 256 * 1024;
/** What an answer that is not JSON at all is said to be. */
const NOT_JSON = "the body is not JSON";

export interface TuskrClientOptions {
  baseUrl?: string;
  apiKey: string;
  /** Wall-clock deadline of one request, the whole answer included (not only its headers). */
  timeoutMs?: number;
  /** Retries; `maxTotalMs` bounds a whole operation, requests in flight included. */
  retry?: Partial<RetryPolicy>;
  /** Most requests this client has in flight at once (the provider process shares one client). */
  maxConcurrency?: number;
  /**
   * Send the key over plain `http://` to a host other than loopback. Off: such a base URL is
   * refused, since the bearer key would cross the network in clear.
   */
  allowInsecureHttp?: boolean;
  /** Called once per retry, for logs and tests; never given the key. */
  onRetry?: (info: { method: string; path: string; attempt: number; waitMs: number; error: TuskrApiError }) => void;
  /** Injected in tests to make the jitter deterministic. */
  random?: () => number;
}

// ---------------------------------------------------------------------------------------------
// Response schemas: minimal ("only what is needed") and held to the contract's limits, since a
// value the service answers goes into state: unknown fields are dropped, absent ones stay
// absent, and a body that does not match becomes a TuskrApiError(INVALID_RESPONSE).
// ---------------------------------------------------------------------------------------------

const timestamp = (field: string) =>
  z
    .string()
    .max(64, { error: `${field} is longer than a timestamp` })
    .refine((v) => !Number.isNaN(Date.parse(v)), { error: `${field} is not a time` });

/**
 * A file record as the client takes it: the contract's shape (api/files.ts), every field but
 * blobId allowed to be missing or null (the service documents only part of it), and every value
 * within the same limits as the inputs.
 */
const ReceivedFileSchema = z.object({
  blobId: FileRecordSchema.shape.blobId,
  url: boundedText("url", LIMITS.urlMaxLength).nullish(),
  name: boundedText("name", LIMITS.nameMaxLength).nullish(),
  tag: boundedText("tag", LIMITS.tagMaxLength).nullish(),
  metadata: z
    .record(z.string(), z.unknown())
    .superRefine((value, ctx) => {
      const problem = metadataLimitProblem(value);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    })
    .nullish(),
  size: FileRecordSchema.shape.size.nullish(),
  mimeType: boundedText("mimeType", 255).nullish(),
  createdAt: timestamp("createdAt").nullish(),
  expiresAt: timestamp("expiresAt").nullish(),
});
export type ReceivedFile = z.infer<typeof ReceivedFileSchema>;

/** The upload's answer (documented, snake_case), within the same limits. */
const UploadRecordSchemaReceived = UploadRecordSchema.extend({
  url: boundedText("url", LIMITS.urlMaxLength),
  tag: boundedText("tag", LIMITS.tagMaxLength).nullish(),
  category: boundedText("category", LIMITS.tagMaxLength).nullish(),
  mime_type: boundedText("mime_type", 255).nullish(),
  created_at: timestamp("created_at"),
  expires_at: timestamp("expires_at"),
});

/** What an upload sends: a file on disk or a text, and the name the file gets. */
export interface UploadSource {
  path?: string;
  text?: string;
  /** The bytes themselves (a small file read once). */
  bytes?: Buffer;
  /** The SHA-256 (hex) the file at `path` must have: read otherwise, the upload fails with CONTENT_CHANGED and nothing is stored. */
  sha256?: string;
  filename: string;
}

/** The upload form's fields besides the file. */
export interface UploadFields {
  tag?: string;
  /** Initial storage, in epochs (the service's default is 1). */
  epochs?: number;
  /** The file part's type: what the service records and serves the file as. */
  contentType?: string;
}

export interface UploadResult {
  file: Partial<ReceivedFile> & { blobId: string };
  /** 201: a new file, the epochs bought; 200: the same content was already stored (nothing bought, nothing set). */
  created: boolean;
  confirmedBy: "response" | "replay";
  keyHonoured: boolean;
  resent: boolean;
}

/** PATCH answers the updated record (assumed) or 204/empty (tolerated). */
const UpdateFileResponseSchema = ReceivedFileSchema.partial().optional();
/** Renew answers the updated record, perhaps with Tusky-like extras; or nothing (tolerated). */
const RenewFileResponseSchema = ReceivedFileSchema.partial().extend({ epochsAdded: z.number().nullish() }).optional();

export interface RenewOptions {
  /** Sent as `Idempotency-Key`; reused verbatim on every retry of this purchase. */
  idempotencyKey: string;
  /**
   * The file's expiry as last seen before this renew. The answer must be later; after an
   * ambiguous failure, when the key is not known to be honoured, the client reads the file back
   * and compares its expiry with this one (see `readBackVerdict`).
   */
  expiresAtBefore?: string | null;
  /**
   * Length of one epoch. With it, the read-back counts the renew as applied only if the expiry
   * moved by exactly the epochs asked for, so a renewal made elsewhere since `expiresAtBefore`
   * is not mistaken for ours. Without it, any move counts as applied.
   */
  epochMs?: number;
  /**
   * The service is known to honour Idempotency-Key (it echoed one before). Then an ambiguous
   * failure is simply sent again under the same key; otherwise the file is read back first, and
   * a move that cannot be attributed stops with RENEW_OUTCOME_UNKNOWN.
   */
  keyHonoured?: boolean;
}

export interface RenewResult {
  /** The file after the renew, when the service (or the read-back) told us. */
  file?: Partial<ReceivedFile>;
  /** How we know the epochs were bought: the answer, a replay of an earlier answer, or a read-back. */
  confirmedBy: "response" | "replay" | "read-back";
  /** The service echoed the Idempotency-Key: it took the key into account. */
  keyHonoured: boolean;
  /** This call sent the purchase more than once (a replay then answers its own earlier send). */
  resent: boolean;
}

/** The entry a 409 ALREADY_STORED names (`details.blobId`), if `e` is one. */
function alreadyStoredAs(e: unknown): string | undefined {
  if (!isTuskrApiError(e) || e.status !== 409 || e.code !== "ALREADY_STORED") return undefined;
  const body = e.responseBody as { error?: { details?: { blobId?: unknown } } } | undefined;
  const blobId = body?.error?.details?.blobId;
  return typeof blobId === "string" ? blobId : undefined;
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

/** Why a base URL may not carry the key, or undefined. Plain http is for loopback only, unless allowed. */
export function insecureBaseUrlProblem(baseUrl: string, allowInsecureHttp = false): string | undefined {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return `${JSON.stringify(baseUrl)} is not a URL`;
  }
  if (url.protocol === "https:") return undefined;
  if (url.protocol !== "http:") return `${url.protocol} is not http(s)`;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const loopback = host === "localhost" || host === "::1" || /^127(\.\d{1,3}){3}$/.test(host);
  if (loopback || allowInsecureHttp) return undefined;
  return (
    `${url.origin} is plain http to a host other than this machine: the API key would be sent in clear. ` +
    "Use https, or set tuskr:allowInsecureHttp to true if this network is trusted"
  );
}

/** How far the service's clock may be from ours before a time it reports is not believed. */
const CLOCK_SKEW_MS = 5 * 60 * 1000;

interface SendOptions<S extends z.ZodType> {
  body?: unknown;
  /** The file the request is about: only a 404/410 naming it says that it is gone. */
  about?: string;
  /** A multipart body instead of JSON: a fresh one for each attempt (its file streams once). */
  form?: () => Promise<MultipartBody>;
  /** More time for this request than `timeoutMs` (an upload's body takes time to send). */
  extraMs?: number;
  headers?: Record<string, string>;
  schema: S;
  /**
   * Whether a failure that may have been applied (timeout, reset, 5xx) can be retried as is.
   * True for GET and PATCH (same body, same result); false for renew, which buys epochs.
   */
  retryAmbiguous: boolean;
  /** Wall-clock time (ms) by which the whole operation must end, retries and requests in flight included. */
  deadline: number;
}

interface Sent<T> {
  data: T;
  status: number;
  headers: Record<string, unknown>;
}

export class TuskrClient {
  private axiosInstance?: AxiosInstance;
  private readonly apiKey: string;
  private readonly policy: RetryPolicy;
  private readonly timeoutMs: number;
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
    this.baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    const insecure = insecureBaseUrlProblem(this.baseUrl, options.allowInsecureHttp);
    if (insecure) throw new TuskrApiError({ code: "CONFIG_ERROR", message: `tuskr:baseUrl: ${insecure}` });
    this.apiKey = options.apiKey;
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.gate = new Semaphore(options.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY);
    this.random = options.random ?? Math.random;
    this.onRetry = options.onRetry;
  }

  /**
   * The HTTP client, made at the first request: every program that declares a resource loads
   * this module, and only a provider that sends needs axios (~90 ms to load). A client that
   * cannot be loaded (a broken install) sent nothing: a configuration error, not retried.
   */
  private loadedHttp(method: string, path: string): AxiosInstance {
    try {
      this.axiosInstance ??= (require("axios") as AxiosStatic).create({
        baseURL: this.baseUrl,
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
        maxContentLength: RESPONSE_MAX_BYTES,
        // An upload's body: the file plus its form.
        maxBodyLength: LIMITS.uploadMaxBytes + 64 * 1024,
      });
    } catch (e) {
      const why = e instanceof Error ? e.message.split("\n")[0] : String(e);
      throw new TuskrApiError({
        code: "CONFIG_ERROR",
        message: this.redact(`${method} ${path}: the HTTP client (axios) could not be loaded (${why}); nothing sent. Reinstall pulumi-tuskr's dependencies`),
        method,
        path,
        retryable: false,
      });
    }
    return this.axiosInstance;
  }

  /** Requests currently in flight (for tests of the concurrency bound). */
  get inFlight(): number {
    return this.gate.inFlight;
  }

  /** `GET /v1/files/:blobId` — the file's index entry. */
  async getFile(blobId: string): Promise<ReceivedFile> {
    return this.getWithin(blobId, this.deadline());
  }

  /** `PATCH /v1/files/:blobId` with only the fields that change. Safe to retry: same body, same result. */
  async updateFile(blobId: string, patch: UpdateFileBody): Promise<Partial<ReceivedFile> | undefined> {
    const path = filePath(blobId);
    const body = parseBody(UpdateFileBodySchema, patch, "PATCH", path);
    const { data } = await this.send("PATCH", path, { body, about: blobId, schema: UpdateFileResponseSchema, retryAmbiguous: true, deadline: this.deadline() });
    if (data) this.expectFile(blobId, "PATCH", path, data);
    return data;
  }

  /**
   * `POST /v1/files`: uploads content (multipart/form-data, the file streamed from disk, never
   * read whole), with what the upload form carries: the file's name (its filename), `tag` and the
   * initial `epochs`. Like a renew it buys epochs, so it is never retried blindly: the same
   * Idempotency-Key goes with every attempt, and an ambiguous failure is sent again only once the
   * service is known to honour keys; otherwise it fails with UPLOAD_OUTCOME_UNKNOWN (nothing to
   * read back: the file's id is the answer's).
   */
  async uploadFile(
    source: UploadSource,
    fields: UploadFields,
    // epochMs: the epoch's length, to check the answer's expiry against the horizon.
    options: { idempotencyKey: string; keyHonoured?: boolean; epochMs?: number },
  ): Promise<UploadResult> {
    const path = PATHS.files;
    const size =
      source.bytes !== undefined
        ? source.bytes.length
        : source.text !== undefined
          ? Buffer.byteLength(source.text, "utf8")
          : (await fs.promises.stat(source.path!)).size;
    const fieldsSent: Array<[string, string]> = [];
    if (fields.tag !== undefined) fieldsSent.push(["tag", fields.tag]);
    if (fields.epochs !== undefined) fieldsSent.push(["epochs", String(fields.epochs)]);
    const part = { filename: source.filename, type: fields.contentType ?? "" };
    const form = async () =>
      multipartBody(
        source.bytes !== undefined
          ? { ...part, bytes: source.bytes }
          : source.text !== undefined
            ? { ...part, bytes: Buffer.from(source.text, "utf8") }
            : { ...part, path: source.path!, size, sha256: source.sha256 },
        fieldsSent,
      );
    const headers = { [IDEMPOTENCY_KEY_HEADER]: options.idempotencyKey };
    const deadline = this.deadline();
    const extraMs = Math.ceil(size / (1024 * 1024)) * 1000;
    const sentAt = Date.now();
    const answered = await this.purchase<Omit<UploadResult, "resent">>({
      deadline,
      send: async () => {
        let sent: Sent<z.infer<typeof UploadRecordSchemaReceived>>;
        try {
          sent = await this.send("POST", path, { form, headers, schema: UploadRecordSchemaReceived, retryAmbiguous: false, deadline, extraMs });
        } catch (e) {
          // A service that refuses bytes it already stores names the entry: that entry is this content's.
          const stored = alreadyStoredAs(e);
          if (stored === undefined) throw e;
          const problem = blobIdProblem(stored);
          if (problem) throw this.invalidResponse("POST", path, 409, `details.blobId ${problem}`, undefined);
          return { file: { blobId: stored }, created: false, confirmedBy: "response" as const, keyHonoured: false };
        }
        const header = (name: string) => String(sent.headers[name.toLowerCase()] ?? "");
        const keyHonoured = header(IDEMPOTENCY_KEY_HEADER) === options.idempotencyKey;
        const u = sent.data;
        // The record of other content is not this upload's (a blob is its content).
        if (u.size !== size)
          throw this.invalidResponse("POST", path, sent.status, `the answer is the record of a file of ${u.size} bytes, not the ${size} bytes sent`, undefined);
        // The id every later request goes to: it must be one the contract allows.
        const idProblem = blobIdProblem(u.blob_id);
        if (idProblem) throw this.invalidResponse("POST", path, sent.status, `blob_id ${idProblem}`, undefined);
        const replayed = keyHonoured && header("Idempotent-Replayed") === "true";
        if (!replayed) this.expectPlausibleExpiry("POST", path, sent.status, { createdAt: u.created_at, expiresAt: u.expires_at }, sentAt, options.epochMs);
        return {
          file: { blobId: u.blob_id, url: u.url, size: u.size, mimeType: u.mime_type, tag: u.tag, createdAt: u.created_at, expiresAt: u.expires_at },
          created: sent.status === 201,
          confirmedBy: replayed ? "replay" : "response",
          keyHonoured,
        };
      },
      // Nothing to read back (the file's id is the answer's): only a key known to be honoured makes a resend safe.
      settle: async () => (options.keyHonoured ? { again: "after-backoff" } : { stop: "" }),
      unknown: (lastError) =>
        new TuskrApiError({
          code: "UPLOAD_OUTCOME_UNKNOWN",
          message:
            `upload of ${source.filename} (${size} bytes) may or may not have been applied (${lastError?.message ?? "ambiguous failure"}); ` +
            "not sent again, to avoid buying its epochs twice. Run `pulumi up` again: the same upload reuses its Idempotency-Key, " +
            "and a service that honours it answers with the file it made instead of making another.",
          method: "POST",
          path,
          status: lastError?.status,
          retryable: false,
        }),
    });
    return { ...answered, file: await this.confirmedUpload(answered, { size, filename: source.filename, sentAt }, deadline) };
  }

  /**
   * The gate an upload's answer passes before its blobId is recorded: the service's own record of
   * that blobId, read back, must hold the bytes sent, and a new entry must be the one this request
   * made. An answer naming another file would otherwise have it PATCHed and renewed as ours.
   */
  private async confirmedUpload(
    answered: Omit<UploadResult, "resent">,
    sent: { size: number; filename: string; sentAt: number },
    deadline: number,
  ): Promise<UploadResult["file"]> {
    const { blobId } = answered.file;
    const path = filePath(blobId);
    const fresh = answered.created && answered.confirmedBy === "response";
    let record: ReceivedFile;
    try {
      record = await this.getWithin(blobId, deadline);
    } catch (e) {
      // A new entry the service does not have was never made; an earlier one may have expired since.
      if (fresh && isTuskrApiError(e) && e.isGone)
        throw this.invalidResponse("GET", path, e.status ?? 404, "the upload's answer names a file the service does not have", undefined);
      throw e;
    }
    const sameInstant = (a?: string | null, b?: string | null) => !a || !b || Date.parse(a) === Date.parse(b);
    const createdMs = Date.parse(record.createdAt ?? "");
    const problem =
      record.size !== sent.size
        ? `the upload's blobId holds ${record.size ?? "an unknown number of"} bytes, not the ${sent.size} sent`
        : !fresh
          ? undefined
          : !sameInstant(record.createdAt, answered.file.createdAt)
            ? `the upload's blobId was created at ${record.createdAt}, not at ${answered.file.createdAt} as its answer said`
            : createdMs < sent.sentAt - CLOCK_SKEW_MS
              ? `the upload's blobId was created at ${record.createdAt}, before this upload was sent`
              : record.name && carriedAsIs(sent.filename, "filename") && record.name !== sent.filename
                ? `the upload's blobId is named ${JSON.stringify(record.name.slice(0, 80))}, not ${JSON.stringify(sent.filename.slice(0, 80))} as uploaded`
                : undefined;
    if (problem) throw this.invalidResponse("GET", path, 200, `${problem}: not taken as this upload's`, undefined);
    return { ...answered.file, ...record, blobId };
  }

  /**
   * `POST /v1/files/:blobId/renew`. Never retried blindly: the same Idempotency-Key goes with
   * every attempt. Once the service is known to honour keys, an ambiguous failure is sent again
   * under the same key (a service that applied it replays instead of selling twice). Otherwise
   * the file is read back first: the renew is sent again only if the expiry moved less than this
   * purchase; a move of exactly it counts as applied; anything else, or no prior expiry to compare
   * with, fails with RENEW_OUTCOME_UNKNOWN rather than risk buying twice.
   */
  async renewFile(blobId: string, epochs: number, options: RenewOptions): Promise<RenewResult> {
    const path = filePath(blobId, "renew");
    const body = parseBody(RenewBodySchema, { epochs }, "POST", path);
    const headers = { [IDEMPOTENCY_KEY_HEADER]: options.idempotencyKey };
    const deadline = this.deadline();
    const sentAt = Date.now();
    return this.purchase<Omit<RenewResult, "resent">>({
      deadline,
      send: async () =>
        this.renewed(
          blobId,
          path,
          options,
          sentAt,
          await this.send("POST", path, { body, about: blobId, headers, schema: RenewFileResponseSchema, retryAmbiguous: false, deadline }),
        ),
      settle: async () => {
        if (options.keyHonoured) return { again: "after-backoff" };
        // The renew may or may not have been applied, and the key may not protect us. Look first.
        if (!options.expiresAtBefore) return { stop: "there is no earlier expiry to compare with" };
        let after: ReceivedFile;
        try {
          after = await this.getWithin(blobId, deadline);
        } catch {
          return { stop: "the file could not be read back" };
        }
        const verdict = readBackVerdict(options.expiresAtBefore, after.expiresAt, epochs, options.epochMs);
        if (verdict === "applied") return { outcome: { file: after, confirmedBy: "read-back", keyHonoured: false } };
        if (verdict === "unattributable") {
          return { stop: `the expiry moved from ${options.expiresAtBefore} to ${after.expiresAt}, more than this purchase: someone else renewed the file too` };
        }
        return { again: "now" };
      },
      unknown: (lastError, why) =>
        new TuskrApiError({
          code: "RENEW_OUTCOME_UNKNOWN",
          message:
            `renew of ${epochs} epoch(s) for blobId ${JSON.stringify(blobId)} may or may not have been applied ` +
            `(${lastError?.message ?? "ambiguous failure"}${why ? `; ${why}` : ""}); not sent again, to avoid buying twice. ` +
            "Check the file's expiry on the service, then run `pulumi refresh` and `pulumi up`: the same purchase reuses its Idempotency-Key.",
          method: "POST",
          path,
          status: lastError?.status,
          retryable: false,
        }),
    });
  }

  /**
   * One purchase (an upload, a renew), whose outcome an ambiguous failure (sent, no answer) leaves
   * unknown: sent under one Idempotency-Key; after each ambiguous failure `settle` decides whether
   * to send it again (at most `maxAttempts` sends, within the operation's deadline), to take the
   * outcome as known, or to stop, and then `unknown` is the error. A definite failure, or an
   * answer that does not check out, fails at once.
   */
  private async purchase<T>(p: {
    deadline: number;
    send: () => Promise<T>;
    settle: () => Promise<{ again: "now" | "after-backoff" } | { outcome: T } | { stop: string }>;
    unknown: (lastError: TuskrApiError | undefined, why: string) => TuskrApiError;
  }): Promise<T & { resent: boolean }> {
    let lastError: TuskrApiError | undefined;
    let why = "";
    for (let round = 1; round <= Math.max(1, this.policy.maxAttempts); round++) {
      try {
        return { ...(await p.send()), resent: round > 1 };
      } catch (e) {
        const error = e as TuskrApiError;
        if (!error.mayHaveBeenApplied || error.code === "INVALID_RESPONSE") throw error;
        lastError = error;
      }
      if (Date.now() >= p.deadline) {
        why = "the operation's time budget ran out";
        break;
      }
      const next = await p.settle();
      if ("outcome" in next) return { ...next.outcome, resent: round > 1 };
      if ("stop" in next) {
        why = next.stop;
        break;
      }
      if (next.again === "after-backoff") {
        await sleep(Math.min(Math.max(this.policy.minDelayMs, backoffDelayMs(round, this.policy, this.random)), Math.max(0, p.deadline - Date.now())));
      }
    }
    throw p.unknown(lastError, why);
  }

  /** Checks a renew's answer against the request, and reads what it says about the key. */
  private renewed(
    blobId: string,
    path: string,
    options: RenewOptions,
    sentAt: number,
    sent: Sent<z.infer<typeof RenewFileResponseSchema>>,
  ): Omit<RenewResult, "resent"> {
    const header = (name: string) => String(sent.headers[name.toLowerCase()] ?? "");
    const keyHonoured = header(IDEMPOTENCY_KEY_HEADER) === options.idempotencyKey;
    const replayed = keyHonoured && header("Idempotent-Replayed") === "true";
    const file = sent.data ?? undefined;
    if (file) {
      this.expectFile(blobId, "POST", path, file);
      // A renew only ever moves the expiry later. A replay answers as of its first request, so
      // it may be older than what was seen since.
      const before = options.expiresAtBefore ? Date.parse(options.expiresAtBefore) : NaN;
      const after = file.expiresAt ? Date.parse(file.expiresAt) : NaN;
      if (!replayed && !Number.isNaN(before) && !Number.isNaN(after) && after <= before) {
        throw this.invalidResponse(
          "POST",
          path,
          200,
          `expiresAt ${file.expiresAt} is not later than ${options.expiresAtBefore}, the expiry before this renew`,
          file,
        );
      }
      if (!replayed) this.expectPlausibleExpiry("POST", path, sent.status, file, sentAt, options.epochMs);
    }
    return { file, confirmedBy: replayed ? "replay" : "response", keyHonoured };
  }

  /**
   * The expiry a purchase's answer reports must be one a live file can have: not before the
   * request was sent, not past the service's horizon from then, and not before the file's own
   * creation. Anything else is not recorded (a later plan would act on it).
   */
  private expectPlausibleExpiry(
    method: string,
    path: string,
    status: number,
    file: { createdAt?: string | null; expiresAt?: string | null },
    sentAt: number,
    epochMs: number | undefined,
  ): void {
    const expires = Date.parse(file.expiresAt ?? "");
    if (Number.isNaN(expires)) return;
    const created = Date.parse(file.createdAt ?? "");
    const problem =
      !Number.isNaN(created) && created > expires
        ? `createdAt ${file.createdAt} is after expiresAt ${file.expiresAt}`
        : expires <= sentAt - CLOCK_SKEW_MS
          ? `expiresAt ${file.expiresAt} is before the request was sent (${new Date(sentAt).toISOString()})`
          : epochMs !== undefined && expires > sentAt + (LIMITS.maxEpochsAhead + 1) * epochMs + CLOCK_SKEW_MS
            ? `expiresAt ${file.expiresAt} is past the service's horizon (${LIMITS.maxEpochsAhead} epochs from ${new Date(sentAt).toISOString()})`
            : undefined;
    if (problem) throw this.invalidResponse(method, path, status, problem, undefined);
  }

  /** A record in an answer must be the requested file's. */
  private expectFile(blobId: string, method: string, path: string, file: { blobId?: string }): void {
    if (file.blobId !== undefined && file.blobId !== blobId) {
      throw this.invalidResponse(method, path, 200, `the answer is the record of another file (blobId ${JSON.stringify(file.blobId.slice(0, 80))})`, undefined);
    }
  }

  private async getWithin(blobId: string, deadline: number): Promise<ReceivedFile> {
    const path = filePath(blobId);
    const { data } = await this.send("GET", path, { about: blobId, schema: ReceivedFileSchema, retryAmbiguous: true, deadline });
    this.expectFile(blobId, "GET", path, data);
    return data;
  }

  /** When an operation started now must be over. */
  private deadline(): number {
    return Date.now() + this.policy.maxTotalMs;
  }

  private async send<S extends z.ZodType>(method: string, path: string, opts: SendOptions<S>): Promise<Sent<z.infer<S>>> {
    for (let attempt = 1; ; attempt++) {
      let error: TuskrApiError;
      try {
        const response = await this.gate.run(() => this.request(method, path, opts));
        if (response.status >= 200 && response.status < 300) {
          return {
            data: this.parseResponse(method, path, response, opts.schema),
            status: response.status,
            headers: response.headers as Record<string, unknown>,
          };
        }
        error = this.httpError(method, path, response, opts.about);
      } catch (e) {
        error = e instanceof TuskrApiError ? e : this.transportError(method, path, e);
      }
      const retryable = error.retryable && (opts.retryAmbiguous || !error.mayHaveBeenApplied);
      // A 429 is the server pacing us, not failing: allowed more attempts, so a rate-limited run
      // slows down instead of failing after a handful; still a bounded number.
      const outOfAttempts = attempt >= (error.status === 429 ? this.policy.maxRateLimitedAttempts : this.policy.maxAttempts);
      if (!retryable || outOfAttempts) throw error;
      const serverWaitMs = error.retryAfterSeconds !== undefined ? Math.ceil(error.retryAfterSeconds * 1000) : undefined;
      const waitMs = Math.max(this.policy.minDelayMs, serverWaitMs ?? backoffDelayMs(attempt, this.policy, this.random));
      if (Date.now() + waitMs >= opts.deadline) throw error;
      this.onRetry?.({ method, path, attempt, waitMs, error });
      await sleep(waitMs);
    }
  }

  /**
   * One request. Its deadline is wall-clock and covers the whole answer: the abort signal fires
   * at the request timeout or at the operation's deadline, whichever comes first, and aborts a
   * body still arriving as well as a request still waiting for headers.
   */
  private async request(method: string, path: string, opts: SendOptions<z.ZodType>): Promise<AxiosResponse> {
    // Before the request's clock starts, and outside the catch below that reads a failure as a
    // request that may have been applied: a client that cannot be loaded sent nothing.
    const http = this.loadedHttp(method, path);
    const remaining = opts.deadline - Date.now();
    if (remaining <= 0) throw this.timeoutError(method, path, `the operation's time budget of ${this.policy.maxTotalMs} ms ran out`, false);
    const own = this.timeoutMs + (opts.extraMs ?? 0);
    const limit = Math.min(own, remaining);
    const signal = AbortSignal.timeout(limit);
    let form: MultipartBody | undefined;
    try {
      form = opts.form ? await opts.form() : undefined;
    } catch (e) {
      // The body could not be written (a content type no header may carry): nothing was sent.
      const why = e instanceof Error ? e.message : String(e);
      throw new TuskrApiError({ code: "BAD_REQUEST", message: this.redact(`${method} ${path}: ${why}; nothing sent`), method, path, retryable: false });
    }
    try {
      return await http.request({
        method,
        url: path,
        data: form ? form.body : opts.body === undefined ? undefined : JSON.stringify(opts.body),
        headers: form ? { ...opts.headers, "Content-Type": form.contentType, "Content-Length": String(form.length) } : opts.headers,
        signal,
      });
    } catch (e) {
      // The body stopped itself before its end: the request never completed, so nothing was stored.
      const refused = form?.refused();
      if (refused)
        throw new TuskrApiError({
          code: "CONTENT_CHANGED",
          message: this.redact(`${method} ${path}: ${refused}; not sent whole`),
          method,
          path,
          retryable: false,
        });
      if (signal.aborted) {
        const why =
          limit < own
            ? `the operation's time budget of ${this.policy.maxTotalMs} ms ran out`
            : `no complete answer within ${own} ms (tuskr:timeoutMs${opts.extraMs ? `, plus ${opts.extraMs} ms for the upload's size` : ""})`;
        throw this.timeoutError(method, path, why, true);
      }
      throw e;
    }
  }

  private parseResponse<S extends z.ZodType>(method: string, path: string, response: AxiosResponse, schema: S): z.infer<S> {
    const text = typeof response.data === "string" ? response.data : "";
    let json: unknown;
    if (text.trim() !== "") {
      try {
        json = JSON.parse(text);
      } catch {
        throw this.invalidResponse(method, path, response.status, NOT_JSON, text.slice(0, 500));
      }
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? issue.path.join(".") : "body";
      throw this.invalidResponse(method, path, response.status, `${where}: ${issue?.message ?? "does not match the schema"}`, undefined);
    }
    return parsed.data;
  }

  /** A 2xx answer that cannot be trusted: never retried, nothing from it is recorded. */
  private invalidResponse(method: string, path: string, status: number, detail: string, body: unknown): TuskrApiError {
    return new TuskrApiError({
      code: "INVALID_RESPONSE",
      // Not JSON at all (a web page): likely another server than the service's API.
      message: this.redact(
        `${method} ${this.baseUrl}${path} answered ${status} with an unexpected body (INVALID_RESPONSE): ${detail}${detail === NOT_JSON ? `; ${this.baseUrl} may not be the service's API: check tuskr:baseUrl` : ""}`,
      ),
      status,
      method,
      path,
      retryable: false,
      // The service acted on the request, whatever its answer says.
      mayHaveBeenApplied: true,
      responseBody: body === undefined ? undefined : redactValue(body, [this.apiKey]),
    });
  }

  private timeoutError(method: string, path: string, why: string, sent: boolean): TuskrApiError {
    return new TuskrApiError({
      code: "TIMEOUT",
      message: this.redact(`${method} ${this.baseUrl}${path} timed out: ${why}`),
      method,
      path,
      retryable: sent,
      mayHaveBeenApplied: sent,
    });
  }

  private httpError(method: string, path: string, response: AxiosResponse, about?: string): TuskrApiError {
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
    const serverMessage = envelope.success ? envelope.data.error.message.slice(0, 1000) : undefined;
    const waitSeconds = serverRequestedWaitSeconds(response.headers as Record<string, unknown>);
    const gone =
      about !== undefined &&
      envelope.success &&
      envelope.data.error.details?.blobId === about &&
      ((status === 404 && code === "NOT_FOUND") || (status === 410 && code === "FILE_EXPIRED"));
    // A 404 that does not name the file is no evidence about it: say where it came from.
    const unexplained404 =
      status === 404 && !gone
        ? `; the answer does not say that a file ${about !== undefined ? JSON.stringify(about) : ""} does not exist (no error naming it), so ${this.baseUrl}${path} may not be the service's route: check tuskr:baseUrl`
        : // A method the server does not have, said without the service's error: another server's answer.
          !envelope.success && (status === 405 || status === 501)
          ? `; this is not the service's error (no error envelope) and the server does not support ${method} there, so ${this.baseUrl} may not be the service: check tuskr:baseUrl`
          : "";
    return new TuskrApiError({
      code: code.slice(0, 64),
      status,
      method,
      path,
      goneBlobId: gone ? about : undefined,
      message: this.redact(`${method} ${path} failed with ${status} ${code.slice(0, 64)}${serverMessage ? `: ${serverMessage}` : ""}${unexplained404}`),
      // 501: the server does not implement the method: neither applied nor worth sending again.
      retryable: status === 429 || (status >= 500 && status !== 501),
      responseBody: redactValue(typeof body === "string" ? body.slice(0, 2000) : body, [this.apiKey]),
      retryAfterSeconds: status === 429 || status === 503 ? waitSeconds : undefined,
      mayHaveBeenApplied: status >= 500 && status !== 501,
    });
  }

  private transportError(method: string, path: string, e: unknown): TuskrApiError {
    const err = e as { code?: string; message?: string };
    if (err.code === "ERR_BAD_RESPONSE" && /maxContentLength/.test(err.message ?? "")) {
      return this.invalidResponse(method, path, 200, `the body is larger than ${RESPONSE_MAX_BYTES} bytes, the most the client reads`, undefined);
    }
    const timeout = err.code === "ECONNABORTED" || err.code === "ETIMEDOUT";
    // Refused or unresolvable: the request never reached the server, so it was not applied.
    const neverSent = err.code === "ECONNREFUSED" || err.code === "ENOTFOUND" || err.code === "EAI_AGAIN";
    const code = timeout ? "TIMEOUT" : "NETWORK_ERROR";
    const why = neverSent ? `${err.code}: nothing answers at ${this.baseUrl}: check tuskr:baseUrl` : (err.code ?? err.message ?? "network error");
    return new TuskrApiError({
      code,
      message: this.redact(`${method} ${this.baseUrl}${path} ${timeout ? `timed out (${code})` : `failed (${code}): ${why}`}`),
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
