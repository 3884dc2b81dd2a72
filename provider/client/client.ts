import * as fs from "node:fs";
import type { z } from "zod";
import { IDEMPOTENCY_KEY_HEADER, LIMITS, PATHS, RenewBodySchema, UpdateFileBodySchema, blobIdProblem, type UpdateFileBody } from "../../api";
import { TuskrApiError, type UploadedClaim, isTuskrApiError } from "./errors";
import { type MultipartBody, carriedAsIs, multipartBody } from "./multipart";
import { purchase, readBackVerdict } from "./purchase";
import { DEFAULT_RETRY_POLICY, type RetryPolicy, Semaphore } from "./retry";
import { type Sent, Transport } from "./transport";
import { apiKeyProblem, filePath, headerKey, insecureBaseUrlProblem } from "./urls";
import {
  type ReceivedFile,
  ReadFileSchema,
  type RenewOptions,
  type RenewResult,
  RenewFileResponseSchema,
  type UploadFields,
  type UploadResult,
  type UploadSource,
  UpdateFileResponseSchema,
  UploadAnswerSchema,
  alreadyStoredAs,
  parseBody,
} from "./wire";

export type { ReceivedFile, UploadResult } from "./wire";

export const DEFAULT_BASE_URL = "https://api.tuskr.dev";
export const DEFAULT_TIMEOUT_MS = 30_000;
/** Requests in flight at most, per client (one per provider process). */
export const DEFAULT_MAX_CONCURRENCY = 8;

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
  /**
   * Whether the service honours Idempotency-Key, as the stack's setting says (`tuskr:idempotencyKeys`).
   * Unset: taken as honoured only once this client has seen it replay an answer.
   */
  idempotencyKeys?: "honoured" | "ignored";
  /** Called once per retry, for logs and tests; never given the key. */
  onRetry?: (info: { method: string; path: string; attempt: number; waitMs: number; error: TuskrApiError }) => void;
  /** Injected in tests to make the jitter deterministic. */
  random?: () => number;
}

/** How far the service's clock may be from ours before a time it reports is not believed. */
const CLOCK_SKEW_MS = 5 * 60 * 1000;

export class TuskrClient {
  private readonly http: Transport;
  /** How this client retries; the provider's rounds of read → buy follow it too. */
  readonly policy: RetryPolicy;
  private readonly random: () => number;
  private readonly idempotencyKeys: TuskrClientOptions["idempotencyKeys"];
  readonly baseUrl: string;
  /**
   * Purchases this service was seen replaying: only those may be resent after an ambiguous
   * failure. An echoed key proves nothing (a gateway may echo what the service ignores).
   */
  private readonly replaying = new Set<"upload" | "renew">();
  /** Each key's first answer in this process, which a replay under that key must repeat. */
  private readonly answers = new Map<string, { blobId?: string; expiresAt?: string | null }>();

  constructor(options: TuskrClientOptions) {
    if (!options.apiKey) {
      throw new TuskrApiError({
        code: "CONFIG_ERROR",
        message: "no API key: set the secret stack config `tuskr:apiKey` (pulumi config set --secret tuskr:apiKey ...) or TUSKR_API_KEY",
      });
    }
    const keyProblem = apiKeyProblem(options.apiKey);
    if (keyProblem) throw new TuskrApiError({ code: "CONFIG_ERROR", message: `tuskr:apiKey ${keyProblem}` });
    this.baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    const insecure = insecureBaseUrlProblem(this.baseUrl, options.allowInsecureHttp);
    if (insecure) throw new TuskrApiError({ code: "CONFIG_ERROR", message: `tuskr:baseUrl: ${insecure}` });
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.random = options.random ?? Math.random;
    this.idempotencyKeys = options.idempotencyKeys;
    const gate = new Semaphore(options.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY);
    this.http = new Transport(
      this.baseUrl,
      headerKey(options.apiKey),
      this.policy,
      options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      gate,
      this.random,
      options.onRetry,
    );
  }

  /** The latest failure that showed the service refusing every request (nothing overlapping it is sent). */
  get refusal(): TuskrApiError | undefined {
    return this.http.refusal;
  }

  /** Whether this service is known to honour Idempotency-Key on `kind`: it replayed an answer of that kind. */
  keysHonoured(kind: "upload" | "renew"): boolean {
    if (this.idempotencyKeys !== undefined) return this.idempotencyKeys === "honoured";
    return this.replaying.has(kind);
  }

  /**
   * Notes an answer under `key`; one marked as a replay that repeats the key's earlier answer (same
   * file, expiry not moved further) shows the service honours keys, since it sold nothing again.
   */
  private noteAnswer(kind: "upload" | "renew", key: string, replayMarked: boolean, answer: { blobId?: string; expiresAt?: string | null }): void {
    const id = `${kind} ${key}`;
    const earlier = this.answers.get(id);
    if (!earlier) {
      this.answers.set(id, answer);
      return;
    }
    const further = Date.parse(answer.expiresAt ?? "") > Date.parse(earlier.expiresAt ?? "");
    if (replayMarked && answer.blobId === earlier.blobId && answer.expiresAt && !further) this.replaying.add(kind);
  }

  /** Requests currently in flight (for tests of the concurrency bound). */
  get inFlight(): number {
    return this.http.inFlight;
  }

  /** `GET /v1/files/:blobId` — the file's index entry. */
  async getFile(blobId: string): Promise<ReceivedFile> {
    return this.getWithin(blobId, this.http.deadline());
  }

  /** `PATCH /v1/files/:blobId` with only the fields that change. Safe to retry: same body, same result. */
  async updateFile(blobId: string, patch: UpdateFileBody): Promise<Partial<ReceivedFile> | undefined> {
    const path = filePath(blobId);
    const body = parseBody(UpdateFileBodySchema, patch, "PATCH", path);
    const { data } = await this.http.send("PATCH", path, {
      body,
      about: blobId,
      schema: UpdateFileResponseSchema,
      retryAmbiguous: true,
      deadline: this.http.deadline(),
    });
    if (data) this.expectFile(blobId, "PATCH", path, data);
    return data;
  }

  /**
   * `POST /v1/files`, streamed from disk. It buys epochs, so an ambiguous failure is resent only
   * once the service is known to honour keys (it replayed an upload's answer); otherwise
   * UPLOAD_OUTCOME_UNKNOWN, since there is no id to read back and a second upload may be sold.
   */
  async uploadFile(
    source: UploadSource,
    fields: UploadFields,
    // epochMs: the epoch's length, to check the answer's expiry against the horizon.
    // contentSha256: the bytes' SHA-256 (hex), which an entry this upload did not make must serve.
    options: { idempotencyKey: string; keyHonoured?: boolean; epochMs?: number; contentSha256?: string },
  ): Promise<UploadResult> {
    const path = PATHS.files;
    const { size, form } = await uploadForm(source, fields);
    const headers = { [IDEMPOTENCY_KEY_HEADER]: options.idempotencyKey };
    const deadline = this.http.deadline();
    const extraMs = Math.ceil(size / (1024 * 1024)) * 1000;
    const sentAt = Date.now();
    const honoured = options.keyHonoured ?? this.keysHonoured("upload");
    const answered = await purchase<Omit<UploadResult, "resent" | "checkedBy">>(this.policy, this.random, {
      deadline,
      send: async () => {
        let sent: Sent<z.infer<typeof UploadAnswerSchema>>;
        try {
          sent = await this.http.send("POST", path, { form, headers, schema: UploadAnswerSchema, retryAmbiguous: false, deadline, extraMs });
        } catch (e) {
          // A service that refuses bytes it already stores names the entry: that entry is this content's.
          const stored = alreadyStoredAs(e);
          if (stored === undefined) throw e;
          const problem = blobIdProblem(stored);
          if (problem) throw this.http.invalidResponse("POST", path, 409, `details.blobId ${problem}`, undefined);
          return { file: { blobId: stored }, created: false, confirmedBy: "response" as const, keyHonoured: false };
        }
        const header = (name: string) => String(sent.headers[name.toLowerCase()] ?? "");
        const echoed = header(IDEMPOTENCY_KEY_HEADER) === options.idempotencyKey;
        const u = sent.data;
        // The record of other content is not this upload's (a blob is its content).
        if (u.size !== undefined && u.size !== null && u.size !== size)
          throw this.http.invalidResponse(
            "POST",
            path,
            sent.status,
            `the answer is the record of a file of ${u.size} bytes, not the ${size} bytes sent`,
            undefined,
          );
        // The id every later request goes to: it must be one the contract allows.
        const idProblem = blobIdProblem(u.blobId);
        if (idProblem) throw this.http.invalidResponse("POST", path, sent.status, `blob_id ${idProblem}`, undefined);
        const replayed = echoed && header("Idempotent-Replayed") === "true";
        if (!replayed) this.expectPlausibleExpiry("POST", path, sent.status, u, sentAt, options.epochMs);
        this.noteAnswer("upload", options.idempotencyKey, replayed, { blobId: u.blobId, expiresAt: u.expiresAt });
        const keyHonoured = this.keysHonoured("upload");
        return {
          file: { blobId: u.blobId, url: u.url, size: u.size, mimeType: u.mimeType, tag: u.tag, createdAt: u.createdAt, expiresAt: u.expiresAt },
          created: sent.status === 201,
          confirmedBy: replayed ? "replay" : "response",
          keyHonoured,
        };
      },
      // Nothing to read back (the file's id is the answer's): only a key known to be honoured makes a resend safe.
      settle: async () => (honoured ? { again: "after-backoff" } : { stop: "" }),
      unknown: (lastError) =>
        new TuskrApiError({
          code: "UPLOAD_OUTCOME_UNKNOWN",
          message:
            `upload of ${source.filename} (${size} bytes) may or may not have been applied (${lastError?.message ?? "ambiguous failure"}); ` +
            "not sent again. Run `pulumi up`: the same upload reuses its Idempotency-Key.",
          method: "POST",
          path,
          status: lastError?.status,
          retryable: false,
          mayHaveBeenApplied: true,
        }),
    });
    const sent = { size, filename: source.filename, sentAt, sha256: options.contentSha256 };
    try {
      const answer = { createdAt: answered.file.createdAt, expiresAt: answered.file.expiresAt };
      return { ...answered, answer, ...(await this.confirmedUpload(answered, sent, deadline)) };
    } catch (e) {
      // Bought perhaps, but not shown to be these bytes: the entry it names is recorded as
      // unconfirmed, checked again by the next `up` before anything is sent on it, never uploaded again.
      if (!isTuskrApiError(e) || e.code !== "INVALID_RESPONSE") throw e;
      throw new TuskrApiError({
        ...e,
        message: e.message,
        uploaded: { blobId: answered.file.blobId, created: answered.created && answered.confirmedBy === "response", ...sent },
      });
    }
  }

  /**
   * Checks an upload's answer before its blobId is recorded: the service's record must hold the
   * bytes sent, else an answer naming another file would have it PATCHed and renewed as ours.
   */
  /**
   * Checks again an upload an earlier run could not confirm (`TuskrApiError.uploaded`): the entry
   * it named must hold the bytes sent, as `uploadFile` checks it, before anything is sent on it.
   */
  async confirmUploaded(uploaded: UploadedClaim): Promise<Pick<UploadResult, "file" | "checkedBy">> {
    const answered = {
      file: { blobId: uploaded.blobId },
      created: uploaded.created,
      confirmedBy: uploaded.created ? "response" : "replay",
      keyHonoured: false,
    } as const;
    return this.confirmedUpload(answered, uploaded, this.http.deadline());
  }

  private async confirmedUpload(
    answered: Omit<UploadResult, "resent" | "checkedBy">,
    sent: { size: number; filename: string; sentAt: number; sha256?: string },
    deadline: number,
  ): Promise<Pick<UploadResult, "file" | "checkedBy">> {
    const { blobId } = answered.file;
    const path = filePath(blobId);
    // A 201 on an entry created before this request is a service selling a second upload of stored
    // bytes: that entry is checked as any it did not make (its bytes), not refused as a new one.
    const claimedMs = Date.parse(answered.file.createdAt ?? "");
    const fresh = answered.created && answered.confirmedBy === "response" && !(claimedMs < sent.sentAt - CLOCK_SKEW_MS);
    let record: ReceivedFile;
    try {
      record = await this.getWithin(blobId, deadline);
    } catch (e) {
      // A new entry the service does not have was never made; an earlier one may have expired since.
      // Only a replayed answer may name an entry that expired since; a new or "already stored" one names a file that exists.
      if (answered.confirmedBy !== "replay" && isTuskrApiError(e) && e.isGone)
        throw this.http.invalidResponse("GET", path, e.status ?? 404, "the upload's answer names a file the service does not have", undefined);
      throw e;
    }
    const sameInstant = (a?: string | null, b?: string | null) => !a || !b || Date.parse(a) === Date.parse(b);
    const createdMs = Date.parse(record.createdAt ?? "");
    // A field the record leaves out is not compared: the service documents only part of it.
    const problem =
      record.size !== undefined && record.size !== null && record.size !== sent.size
        ? `the upload's blobId holds ${record.size} bytes, not the ${sent.size} sent`
        : !fresh
          ? undefined
          : !sameInstant(record.createdAt, answered.file.createdAt)
            ? `the upload's blobId was created at ${record.createdAt}, not at ${answered.file.createdAt} as its answer said`
            : createdMs < sent.sentAt - CLOCK_SKEW_MS
              ? `the upload's blobId was created at ${record.createdAt}, before this upload was sent`
              : record.name && carriedAsIs(sent.filename, "filename") && record.name !== wellFormed(sent.filename)
                ? `the upload's blobId is named ${JSON.stringify(record.name.slice(0, 80))}, not ${JSON.stringify(sent.filename.slice(0, 80))} as uploaded`
                : undefined;
    if (problem) throw this.http.invalidResponse("GET", path, 200, `${problem}: not taken as this upload's`, undefined);
    // An entry this request did not make (already stored, replayed) is the service's record of
    // these bytes (its blobId and size, read with the key), and where its url serves them without
    // the key, their SHA-256: a size alone would let another file of that size be PATCHed and renewed.
    if (!fresh && sent.sha256 && record.url) {
      const served = await this.http.served(record.url, sent.size, deadline);
      if (served.sha256 !== undefined && served.sha256 !== sent.sha256)
        throw this.http.invalidResponse(
          "GET",
          path,
          200,
          `the entry named serves other bytes (sha256 ${served.sha256.slice(0, 12)}…): not taken as this upload's`,
          undefined,
        );
      // A gateway whose download links want the key: the record, read through the API, decides.
      if (served.sha256 === undefined && served.status !== 401 && served.status !== 403)
        throw this.http.invalidResponse(
          "GET",
          path,
          200,
          `its url answered ${served.status}: the entry's content could not be read back to check it is these bytes`,
          undefined,
        );
      return { file: { ...answered.file, ...record, blobId }, checkedBy: served.sha256 !== undefined ? "content" : "record" };
    }
    return { file: { ...answered.file, ...record, blobId }, checkedBy: fresh ? "created" : "record" };
  }

  /**
   * Whether a file's content is still served at `url` (its record's): "gone" only on a 404 or 410
   * there, "served" on a 2xx, else "unknown" (a CDN that wants a key, a failure, a network error).
   */
  async servedAt(url: string, maxBytes: number): Promise<"gone" | "served" | "unknown"> {
    try {
      const { status } = await this.http.served(url, Math.max(1, maxBytes), this.http.deadline());
      return status === 404 || status === 410 ? "gone" : status >= 200 && status < 300 ? "served" : "unknown";
    } catch {
      return "unknown";
    }
  }

  /**
   * `POST /v1/files/:blobId/renew`, never retried blindly since it buys epochs. With keys known to
   * be honoured an ambiguous failure is resent under its key (the service replays it). Otherwise it
   * is never resent: a read-back that shows it applied is taken, anything else is
   * RENEW_OUTCOME_UNKNOWN, since a renew the service applies after the read would be bought twice.
   */
  async renewFile(blobId: string, epochs: number, options: RenewOptions): Promise<RenewResult> {
    const path = filePath(blobId, "renew");
    const body = parseBody(RenewBodySchema, { epochs }, "POST", path);
    const headers = { [IDEMPOTENCY_KEY_HEADER]: options.idempotencyKey };
    const deadline = this.http.deadline();
    const sentAt = Date.now();
    const honoured = options.keyHonoured ?? this.keysHonoured("renew");
    return purchase<Omit<RenewResult, "resent">>(this.policy, this.random, {
      deadline,
      send: async () =>
        this.renewed(
          blobId,
          path,
          options,
          sentAt,
          await this.http.send("POST", path, { body, about: blobId, headers, schema: RenewFileResponseSchema, retryAmbiguous: false, deadline }),
        ),
      settle: async () => {
        if (honoured) return { again: "after-backoff" };
        // The renew may or may not have been applied, and the key may not protect us. Look, never resend.
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
          return {
            stop: `the expiry moved from ${options.expiresAtBefore} to ${after.expiresAt}, which this purchase alone does not explain: someone else may have renewed the file too`,
          };
        }
        // Unmoved now says nothing of later: a 5xx may be a commit still landing.
        return {
          stop: "the read-back shows the expiry unmoved, and the service is not known to honour Idempotency-Key: a renew it applies late would be bought twice",
        };
      },
      unknown: (lastError, why) =>
        new TuskrApiError({
          code: "RENEW_OUTCOME_UNKNOWN",
          message:
            `renew of ${epochs} epoch(s) for blobId ${JSON.stringify(blobId)} may or may not have been applied ` +
            `(${lastError?.message ?? "ambiguous failure"}${why ? `; ${why}` : ""}); not sent again. ` +
            "Run `pulumi up` again later: it reads the file's expiry and buys only what the declared end still lacks.",
          method: "POST",
          path,
          status: lastError?.status,
          retryable: false,
          mayHaveBeenApplied: true,
        }),
    });
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
    const echoed = header(IDEMPOTENCY_KEY_HEADER) === options.idempotencyKey;
    const replayed = echoed && header("Idempotent-Replayed") === "true";
    const file = sent.data ?? undefined;
    if (file) {
      this.expectFile(blobId, "POST", path, file);
      // A renew only ever moves the expiry later. A replay answers as of its first request, so
      // it may be older than what was seen since.
      const before = options.expiresAtBefore ? Date.parse(options.expiresAtBefore) : NaN;
      const after = file.expiresAt ? Date.parse(file.expiresAt) : NaN;
      if (!replayed && !Number.isNaN(before) && !Number.isNaN(after) && after <= before) {
        throw this.http.invalidResponse(
          "POST",
          path,
          200,
          `expiresAt ${file.expiresAt} is not later than ${options.expiresAtBefore}, the expiry before this renew`,
          file,
        );
      }
      if (!replayed) this.expectPlausibleExpiry("POST", path, sent.status, file, sentAt, options.epochMs);
      this.noteAnswer("renew", options.idempotencyKey, replayed, { blobId, expiresAt: file.expiresAt });
    }
    return { file, confirmedBy: replayed ? "replay" : "response", keyHonoured: this.keysHonoured("renew") };
  }

  /**
   * A purchase answer's expiry must be plausible (not before sending, creation, or past the
   * horizon); anything else is refused, because a later plan would act on it.
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
    if (problem) throw this.http.invalidResponse(method, path, status, problem, undefined);
  }

  /** A record in an answer must be the requested file's. */
  private expectFile(blobId: string, method: string, path: string, file: { blobId?: string }): void {
    if (file.blobId !== undefined && file.blobId !== blobId) {
      throw this.http.invalidResponse(
        method,
        path,
        200,
        `the answer is the record of another file (blobId ${JSON.stringify(file.blobId.slice(0, 80))})`,
        undefined,
      );
    }
  }

  private async getWithin(blobId: string, deadline: number): Promise<ReceivedFile> {
    const path = filePath(blobId);
    const { data } = await this.http.send("GET", path, { about: blobId, schema: ReadFileSchema, retryAmbiguous: true, deadline });
    this.expectFile(blobId, "GET", path, data);
    // A record that leaves out its id is the one its path names.
    return { ...data, blobId };
  }
}

/** The upload's multipart form, made anew for each attempt (a file streams once), and the file's size. */
async function uploadForm(source: UploadSource, fields: UploadFields): Promise<{ size: number; form: () => Promise<MultipartBody> }> {
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
  return { size, form };
}

/** The text as a service stores it: each lone surrogate as U+FFFD (what JSON and UTF-8 can carry). */
const wellFormed = (text: string): string => text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
