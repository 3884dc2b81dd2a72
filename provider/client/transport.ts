import { createHash } from "node:crypto";
import * as http from "node:http";
import * as https from "node:https";
import { Readable } from "node:stream";
import * as zlib from "node:zlib";
import type { AxiosInstance, AxiosResponse, AxiosStatic } from "axios";
import type { Dispatcher, Pool } from "undici";
import type { z } from "zod";
import { ErrorEnvelopeSchema, LIMITS, errorCodeForStatus } from "../../api";
import { TuskrApiError, redactString, redactStrings, redactValue, secretMask } from "./errors";
import type { MultipartBody } from "./multipart";
import { type RetryPolicy, type Semaphore, decideRetry, refusalEvidence, serverRequestedWaitSeconds, sleep } from "./retry";
import { USER_AGENT } from "../engine/identity";

/** The largest response body the client reads; a larger one is refused, never kept. */
const RESPONSE_MAX_BYTES = 256 * 1024;
/** What an answer that is not JSON at all is said to be. */
const NOT_JSON = "the body is not JSON";

export interface SendOptions<S extends z.ZodType> {
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

/** An HTTP answer as the transport reads it: its body as text, at most RESPONSE_MAX_BYTES. */
interface Answer {
  status: number;
  headers: Record<string, unknown>;
  data: string;
}

/**
 * The environment variable that names a proxy for `url`'s scheme, if one does: those axios reads
 * (through proxy-from-env), in lower or upper case; NO_PROXY is left to it.
 */
function proxyVariableFor(url: string): string | undefined {
  const scheme = url.slice(0, url.indexOf(":")).toLowerCase();
  for (const name of [`${scheme}_proxy`, "all_proxy"]) {
    for (const form of [name, name.toUpperCase()]) if (process.env[form]) return form;
  }
  return undefined;
}

/** A body that does not decode as its Content-Encoding says (or names an encoding not decoded here). */
class Undecodable extends Error {}

/** One content coding undone; a body of zlib or raw deflate is taken under `deflate`, as browsers do. */
function undo(coding: string, bytes: Buffer, options: zlib.ZlibOptions): Buffer {
  switch (coding) {
    case "identity":
      return bytes;
    case "gzip":
    case "x-gzip":
    case "deflate":
    case "compress":
    case "x-compress":
      try {
        return zlib.unzipSync(bytes, options);
      } catch (e) {
        if (e instanceof RangeError || coding === "gzip" || coding === "x-gzip") throw e;
        return zlib.inflateRawSync(bytes, options);
      }
    case "br":
      return zlib.brotliDecompressSync(bytes, options);
    default:
      throw new Undecodable(`a Content-Encoding of ${JSON.stringify(coding.slice(0, 40))}, which the client does not decode`);
  }
}

/**
 * The answer's body as text: its content codings undone, last applied first (servers may compress
 * unasked), never past `limit` bytes (a RangeError beyond), a byte order mark dropped.
 */
function bodyText(raw: Buffer, encoding: string | undefined, limit: number): string {
  let bytes = raw;
  if (raw.length > 0 && encoding) {
    const codings = encoding
      .toLowerCase()
      .split(",")
      .map((c) => c.trim())
      .filter((c) => c !== "");
    for (const coding of codings.reverse()) {
      try {
        bytes = undo(coding, bytes, { maxOutputLength: limit });
      } catch (e) {
        if (e instanceof RangeError || e instanceof Undecodable) throw e;
        throw new Undecodable(`a body that does not decode as its Content-Encoding (${coding}) says`);
      }
    }
  }
  const text = bytes.toString("utf8");
  // A byte order mark is not part of the JSON.
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Headers of one value, whose repeats Node's client drops: a second Retry-After is not joined into a date. */
const SINGLE_VALUED = new Set([
  "age",
  "authorization",
  "content-length",
  "content-type",
  "etag",
  "expires",
  "from",
  "host",
  "if-modified-since",
  "if-unmodified-since",
  "last-modified",
  "location",
  "max-forwards",
  "proxy-authorization",
  "referer",
  "retry-after",
  "server",
  "user-agent",
]);

/**
 * An answer's raw headers as Node's client gives those this client reads: names in lower case, a
 * repeat dropped or joined (set-cookie and cookie, which it never reads, are joined too).
 */
function headerObject(raw: Buffer[] | string[] | null): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  if (!raw) return out;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i].toString("latin1").toLowerCase();
    // Spaces and tabs after a value are not part of it, as Node's client reads it.
    const value = raw[i + 1].toString("latin1").replace(/[ \t]+$/, "");
    if (!Object.hasOwn(out, name)) out[name] = value;
    else if (!SINGLE_VALUED.has(name)) out[name] = `${out[name]}, ${value}`;
  }
  return out;
}

/** undici's code for a connection not opened in time: the request was not written. */
const CONNECT_TIMEOUT = "UND_ERR_CONNECT_TIMEOUT";

/** What ends a request whose time ran out (the caller tells it by the expiry, not by this error). */
const timeRanOut = () => Object.assign(new Error("the request's time ran out"), { code: "ABORT_ERR" });

/** A request's time limit: whether it ran out, and how to stop the request under way when it does. */
interface Expiry {
  expired: boolean;
  cancel?: () => void;
}

/** The base URL as its origin and the path the routes follow, parsed once. */
type RequestTarget = { origin: string; path: string };

/** A path URL parsing leaves as it is: segments of unreserved characters, none a dot segment. */
const SIMPLE_PATH = /^(?:\/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)+$/;

/** The base URL's parts, or null when it carries more than an origin and a path (credentials, a query) or is not a URL. */
function plainOrigin(baseUrl: string): RequestTarget | null {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return null;
  }
  if (url.username || url.password || url.search || url.hash || baseUrl.includes("?") || baseUrl.includes("#")) return null;
  if (!SIMPLE_PATH.test(url.pathname) && url.pathname !== "/") return null;
  return { origin: url.origin, path: url.pathname.replace(/\/+$/, "") };
}

export interface Sent<T> {
  data: T;
  status: number;
  headers: Record<string, unknown>;
}

/**
 * One request at a time, as the service sees it: deadlines, retries of what is safe to retry,
 * the answer parsed against its schema, and every failure turned into one TuskrApiError that
 * never holds the key.
 */
export class Transport {
  private axiosInstance?: AxiosInstance;
  /**
   * The failure that showed the service refusing every request, and after how many attempts. While
   * it stands (until a request gets through, its hold ends and a probe does, or one starts with none
   * other under way) nothing is sent, so thousands of files cost one retry budget per request under
   * way, not one per file.
   */
  private refused?: { error: TuskrApiError; attempts: number; until: number; probing: boolean };
  /**
   * Requests refused (failing, pacing or not answering) since the last 2xx, by the file they are
   * about: one past its retries may be that file's fault; another refused too makes it the service's.
   */
  private readonly failing = new Set<string>();
  /** Sends so far: tells apart requests that name no file (uploads all share one path). */
  private sends = 0;
  /** The latest such failure, kept after it stops standing: what a folder compares to stop starting entries. */
  private lastRefusal?: TuskrApiError;
  /** Retry loops running (waits included), and 2xx answers so far: what tells a refusal of everyone from one request's bad luck. */
  private active = 0;
  private succeeded = 0;
  /** What masks the key in answers: its forms worked out once, not once per answer. */
  private answerMask?: (text: string) => string;
  /** The base URL's origin and path, when it is no more than those (null: it is more, or not a URL). */
  private origin?: RequestTarget | null;
  /** undici's connections to that origin, opened at the first request sent through them. */
  private pool?: Pool;
  /**
   * Whether requests go through axios, which honours HTTP(S)_PROXY and NO_PROXY: only when the
   * environment names a proxy. Otherwise Node's own client sends them, at a third of axios' CPU a
   * request, which bounds a 100,000-file folder's first `up`. Decided at the first request.
   */
  private viaAxios?: boolean;
  /** The headers every request to the service carries. */
  private readonly common: Record<string, string>;

  constructor(
    readonly baseUrl: string,
    private readonly apiKey: string,
    private readonly policy: RetryPolicy,
    private readonly timeoutMs: number,
    private readonly gate: Semaphore,
    private readonly random: () => number,
    private readonly onRetry?: (info: { method: string; path: string; attempt: number; waitMs: number; error: TuskrApiError }) => void,
  ) {
    this.common = { Authorization: `Bearer ${apiKey}`, Accept: "application/json", "User-Agent": USER_AGENT };
  }

  /** Requests currently in flight. */
  get inFlight(): number {
    return this.gate.inFlight;
  }

  /** The latest failure that showed the service refusing every request (kept once the client sends again). */
  get refusal(): TuskrApiError | undefined {
    return this.lastRefusal;
  }

  /** When an operation started now must be over. */
  deadline(): number {
    return Date.now() + this.policy.maxTotalMs;
  }

  /**
   * axios, loaded lazily because every program loads this module but only a provider sending
   * through a proxy needs it (~90 ms). A failed load sent nothing: a configuration error, not retried.
   */
  private loadedAxios(method: string, path: string): AxiosInstance {
    try {
      this.axiosInstance ??= (require("axios") as AxiosStatic).create({
        baseURL: this.baseUrl,
        headers: { ...this.common, "Content-Type": "application/json" },
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
      throw this.notLoaded("axios", method, path, e);
    }
    return this.axiosInstance;
  }

  async send<S extends z.ZodType>(method: string, path: string, opts: SendOptions<S>): Promise<Sent<z.infer<S>>> {
    // A request made while no other is under way starts anew (the next run, or the next `up` of a
    // long-lived process); one that overlaps a refusal is not sent.
    if (this.active === 0) this.refused = undefined;
    this.active++;
    try {
      return await this.attempts(method, path, opts, opts.about ?? `${method} ${path} #${++this.sends}`);
    } finally {
      this.active--;
    }
  }

  private async attempts<S extends z.ZodType>(method: string, path: string, opts: SendOptions<S>, who: string): Promise<Sent<z.infer<S>>> {
    const succeededBefore = this.succeeded;
    for (let attempt = 1; ; attempt++) {
      // Checked before each resend too: a request under way stops at its next attempt.
      const probe = this.admit(method, path);
      let error: TuskrApiError;
      try {
        const response = await this.gate.run(() => this.request(method, path, opts));
        if (response.status >= 200 && response.status < 300) {
          // Whatever else was refused, this got through: the service does not refuse everyone.
          this.succeeded++;
          this.refused = undefined;
          this.failing.clear();
          return {
            data: this.parseResponse(method, path, response, opts.schema),
            status: response.status,
            headers: response.headers,
          };
        }
        error = this.httpError(method, path, response, opts.about);
      } catch (e) {
        error = e instanceof TuskrApiError ? e : this.transportError(method, path, e);
      }
      if (refusalEvidence(error, "attempts")) this.failing.add(who);
      if (probe && this.refused) {
        // A probe has one attempt: failing the service's way it renews the trip, otherwise the next request probes.
        if (refusalEvidence(error, "attempts")) {
          this.trip(error, attempt);
          throw error;
        }
        this.refused.probing = false;
      }
      const next = decideRetry(this.policy, { kind: "request", attempt, error, deadline: opts.deadline, ambiguousAllowed: opts.retryAmbiguous }, this.random);
      if ("stop" in next) {
        // Everyone's only if no other request got through while this one was being refused.
        if (this.succeeded === succeededBefore) this.weigh(error, next.stop, who, attempt);
        throw error;
      }
      this.onRetry?.({ method, path, attempt, waitMs: next.wait, error });
      await sleep(next.wait);
    }
  }

  /**
   * Whether this attempt may be sent, and as the probe of a trip. A trip holds for twice the longest
   * backoff, so every request under way meets it at its next attempt; then one request is let
   * through, and its 2xx clears the trip, so a recovered service is not refused for a whole run.
   */
  private admit(method: string, path: string): boolean {
    const refused = this.refused;
    if (!refused) return false;
    if (refused.probing || Date.now() < refused.until) throw this.notSent(method, path, refused);
    refused.probing = true;
    return true;
  }

  /** Records a request given up on (`stop`), tripping when it shows the service refusing every request. */
  private weigh(error: TuskrApiError, stop: Parameters<typeof refusalEvidence>[1], who: string, attempts: number): void {
    const evidence = refusalEvidence(error, stop);
    if (!evidence) return;
    // Another request still retrying counts: waiting for its budget to run out too would start more entries meanwhile.
    if (evidence === "corroborated" && ![...this.failing].some((other) => other !== who)) return;
    if (!this.refused) this.trip(error, attempts);
  }

  private trip(error: TuskrApiError, attempts: number): void {
    this.refused = { error, attempts, until: Date.now() + 2 * this.policy.maxDelayMs, probing: false };
    this.lastRefusal = error;
  }

  /**
   * One request. Its deadline is wall-clock and covers the whole answer, so a slow body is aborted
   * as well as a request waiting for headers.
   */
  private async request(method: string, path: string, opts: SendOptions<z.ZodType>): Promise<Answer> {
    this.viaAxios ??= proxyVariableFor(this.baseUrl) !== undefined;
    // Before the request's clock starts, and outside the catch below that reads a failure as a
    // request that may have been applied: a client that cannot be loaded sent nothing.
    const viaAxios = this.viaAxios ? this.loadedAxios(method, path) : undefined;
    const remaining = opts.deadline - Date.now();
    if (remaining <= 0) throw this.timeoutError(method, path, `the operation's time budget of ${this.policy.maxTotalMs} ms ran out`, false);
    const own = this.timeoutMs + (opts.extraMs ?? 0);
    const limit = Math.min(own, remaining);
    // A timer of its own, cleared with the answer: AbortSignal.timeout's stays until it fires, so
    // 100,000 requests in a few minutes would hold tens of thousands of spent timers. It cancels the
    // request directly: an AbortSignal per request cost more CPU than the rest of its sending.
    const expiry: Expiry = { expired: false };
    const timeout = setTimeout(() => {
      expiry.expired = true;
      expiry.cancel?.();
    }, limit);
    let form: MultipartBody | undefined;
    try {
      form = opts.form ? await opts.form() : undefined;
    } catch (e) {
      clearTimeout(timeout);
      // The body could not be written (a content type no header may carry): nothing was sent.
      const why = e instanceof Error ? e.message : String(e);
      throw new TuskrApiError({ code: "BAD_REQUEST", message: this.redact(`${method} ${path}: ${why}; nothing sent`), method, path, retryable: false });
    }
    const ranOut = () =>
      limit < own
        ? `the operation's time budget of ${this.policy.maxTotalMs} ms ran out`
        : `no complete answer within ${own} ms (tuskr:timeoutMs${opts.extraMs ? `, plus ${opts.extraMs} ms for the upload's size` : ""})`;
    // The time ran out while the body was made (a slow disk): nothing was sent, so it may be sent again.
    if (expiry.expired) {
      if (form?.body instanceof Readable) form.body.destroy();
      throw this.timeoutError(method, path, `${ranOut()}; nothing sent`, false, true);
    }
    const data = form ? form.body : opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const headers = form ? { ...opts.headers, "Content-Type": form.contentType, "Content-Length": String(form.length) } : opts.headers;
    try {
      if (!viaAxios) return await this.direct(method, path, data, headers, expiry);
      const controller = new AbortController();
      expiry.cancel = () => controller.abort();
      if (expiry.expired) controller.abort();
      const response = await viaAxios.request({ method, url: path, data, headers, signal: controller.signal });
      return { status: response.status, headers: response.headers as Record<string, unknown>, data: typeof response.data === "string" ? response.data : "" };
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
      if (expiry.expired) {
        const why = ranOut();
        // No connection opened in time: nothing of the request was written, so it was not applied.
        if ((e as { code?: string }).code === CONNECT_TIMEOUT) throw this.timeoutError(method, path, `${why}; no connection opened, nothing sent`, false, true);
        throw this.timeoutError(method, path, why, true);
      }
      throw e;
    } finally {
      clearTimeout(timeout);
    }
  }

  /**
   * One request without a proxy: through undici's connection pool, which took half the CPU of Node's
   * own client per request here (20,000 requests: 2.0 s against 3.7 s), what bounds a large folder's
   * first `up`. A streamed body (a file too large to hold) or a base URL with more than an origin and
   * a path goes through Node's client, which tells an answer that came before the body's end.
   */
  private direct(
    method: string,
    path: string,
    body: string | Buffer | Readable | undefined,
    own: Record<string, string> | undefined,
    expiry: Expiry,
  ): Promise<Answer> {
    const headers: Record<string, string> = { ...this.common, ...own };
    if (body !== undefined && !(body instanceof Readable)) {
      headers["Content-Type"] ??= "application/json";
      headers["Content-Length"] = String(Buffer.byteLength(body));
    }
    this.origin ??= plainOrigin(this.baseUrl);
    if (this.origin && SIMPLE_PATH.test(path) && !(body instanceof Readable))
      return this.pooled(method, this.origin, `${this.origin.path}${path}`, body, headers, expiry);
    const url = `${this.baseUrl.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
    return new Promise<Answer>((resolve, reject) => {
      let req: http.ClientRequest;
      try {
        req = (/^https:/i.test(url) ? https : http).request(url, { method, headers });
      } catch (e) {
        reject(this.unbuilt(method, path, e));
        return;
      }
      expiry.cancel = () => req.destroy(timeRanOut());
      if (expiry.expired) expiry.cancel();
      let responded = false;
      req.on("response", (res) => {
        responded = true;
        const chunks: Buffer[] = [];
        let read = 0;
        res.on("data", (chunk: Buffer) => {
          read += chunk.length;
          if (read > RESPONSE_MAX_BYTES) {
            reject(this.tooLarge(method, path, res.statusCode ?? 0, RESPONSE_MAX_BYTES));
            req.destroy();
            return;
          }
          chunks.push(chunk);
        });
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          const ok = status >= 200 && status < 300;
          // Answered before its body was sent whole: a refusal is taken as said, an acceptance is not
          // (the service cannot have stored what it did not receive). The rest is not sent, the file is closed.
          if (body instanceof Readable && !body.readableEnded) {
            req.destroy();
            if (ok) return reject(this.invalidResponse(method, path, status, "answered before the upload's body was sent whole", undefined));
          }
          try {
            resolve(this.readWhole(method, path, status, res.headers, Buffer.concat(chunks)));
          } catch (e) {
            reject(e);
          }
        });
        res.on("error", reject);
        // Cut before its end (the connection closed): never an answer, whatever arrived of it.
        res.on("close", () => {
          if (!res.complete) reject(Object.assign(new Error("the answer ended before its end"), { code: "ECONNRESET" }));
        });
      });
      req.on("error", reject);
      // Closed with no answer and no error (a 101 Switching Protocols, which no one here takes up).
      req.on("close", () => {
        if (!responded) reject(Object.assign(new Error("the connection closed without an answer"), { code: "ECONNRESET" }));
      });
      if (body instanceof Readable) {
        // A body that stops itself (a file that changed) ends the request unfinished; one the request outlives is closed.
        body.on("error", (e) => req.destroy(e));
        req.on("close", () => body.destroy());
        body.pipe(req);
      } else req.end(body);
    });
  }

  /** One request through undici's pool to `target`: the answer read up to RESPONSE_MAX_BYTES, its headers as Node's client gives them. */
  private pooled(
    method: string,
    target: RequestTarget,
    path: string,
    body: string | Buffer | undefined,
    headers: Record<string, string>,
    expiry: Expiry,
  ): Promise<Answer> {
    if (!this.pool) {
      let undici: typeof import("undici");
      try {
        undici = require("undici");
      } catch (e) {
        return Promise.reject(this.notLoaded("undici", method, path, e));
      }
      // No timeouts of its own but the connection's, at tuskr:timeoutMs: the request's timer ends
      // the rest (tuskr:timeoutMs, the upload's extra time, the operation's budget).
      this.pool = new undici.Pool(target.origin, { headersTimeout: 0, bodyTimeout: 0, connect: { timeout: this.timeoutMs } });
    }
    const pool = this.pool;
    return new Promise<Answer>((resolve, reject) => {
      // Until the request is written (a connection may be slow to open), the timer ends the wait
      // itself: undici lets the connection try on, to its own timeout.
      expiry.cancel = () => reject(Object.assign(timeRanOut(), { code: CONNECT_TIMEOUT }));
      let connected = false;
      let status = 0;
      let answerHeaders: Record<string, string> = {};
      const chunks: Buffer[] = [];
      let read = 0;
      let stop: ((reason: Error) => void) | undefined;
      const handler: Dispatcher.DispatchHandlers = {
        onConnect: (abort) => {
          connected = true;
          stop = abort;
          expiry.cancel = () => abort(timeRanOut());
          if (expiry.expired) expiry.cancel();
        },
        onHeaders: (statusCode, raw) => {
          status = statusCode;
          answerHeaders = headerObject(raw);
          return true;
        },
        onData: (chunk) => {
          read += chunk.length;
          if (read > RESPONSE_MAX_BYTES) {
            stop?.(this.tooLarge(method, path, status, RESPONSE_MAX_BYTES));
            return false;
          }
          chunks.push(chunk);
          return true;
        },
        onComplete: () => {
          try {
            resolve(this.readWhole(method, path, status, answerHeaders, Buffer.concat(chunks)));
          } catch (e) {
            reject(e);
          }
        },
        onError: (e) => {
          const code = (e as { code?: string }).code;
          // A header undici refuses fails the request before it is written, as Node's client throws.
          if (!connected && code === "UND_ERR_INVALID_ARG") return reject(this.unbuilt(method, path, e));
          // A connection closed before the answer's end is a reset, as Node's client calls it.
          reject(code === "UND_ERR_SOCKET" ? Object.assign(new Error(e.message), { code: "ECONNRESET" }) : e);
        },
      };
      try {
        pool.dispatch({ path, method: method as Dispatcher.HttpMethod, headers, body }, handler);
      } catch (e) {
        reject(this.unbuilt(method, path, e));
      }
    });
  }

  /**
   * What `url` serves: its status and, for a 2xx, the body's SHA-256. The key goes only to the
   * service's own origin, since a CDN may be another host; one attempt, bounded size, no redirects.
   */
  async served(url: string, maxBytes: number, deadline: number): Promise<{ status: number; sha256?: string }> {
    const method = "GET";
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      throw this.invalidResponse(method, url, 200, "the record's url is not a URL", undefined);
    }
    if (target.protocol !== "https:" && target.protocol !== "http:") throw this.invalidResponse(method, url, 200, "the record's url is not http(s)", undefined);
    const limit = Math.min(this.timeoutMs + Math.ceil(maxBytes / (1024 * 1024)) * 1000, deadline - Date.now());
    if (limit <= 0) throw this.timeoutError(method, url, `the operation's time budget of ${this.policy.maxTotalMs} ms ran out`, false);
    const axios = require("axios") as AxiosStatic;
    // An error's body may be longer than the file; other bytes than the file's fail the hash anyway.
    const bodyLimit = Math.max(maxBytes, 64 * 1024);
    let response: AxiosResponse;
    try {
      response = await this.gate.run(() =>
        axios.get(target.href, {
          headers:
            target.origin === new URL(this.baseUrl).origin
              ? { "User-Agent": USER_AGENT, Authorization: `Bearer ${this.apiKey}` }
              : { "User-Agent": USER_AGENT },
          responseType: "arraybuffer",
          maxContentLength: bodyLimit,
          // A CDN may redirect; a key sent to the service's origin is dropped on a redirect to another host.
          maxRedirects: 3,
          validateStatus: () => true,
          signal: AbortSignal.timeout(limit),
        }),
      );
    } catch (e) {
      throw this.transportError(method, target.pathname, e, bodyLimit);
    }
    if (response.status < 200 || response.status >= 300) return { status: response.status };
    return {
      status: response.status,
      sha256: createHash("sha256")
        .update(Buffer.from(response.data as ArrayBuffer))
        .digest("hex"),
    };
  }

  private parseResponse<S extends z.ZodType>(method: string, path: string, response: Answer, schema: S): z.infer<S> {
    const text = response.data;
    let json: unknown;
    if (text.trim() !== "") {
      try {
        json = JSON.parse(text);
      } catch {
        throw this.invalidResponse(method, path, response.status, NOT_JSON, text.slice(0, 500));
      }
    }
    // Every answer passes here, so the API key a service echoes (a signed link's query, a field
    // holding it) is masked before any of it is recorded in a state, compared or said.
    this.answerMask ??= secretMask([this.apiKey], false);
    const parsed = schema.safeParse(json === undefined ? json : redactStrings(json, this.answerMask));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? issue.path.join(".") : "body";
      // The field named, and what shows the service's answers whole.
      throw this.invalidResponse(
        method,
        path,
        response.status,
        `${where}: ${issue?.message ?? "does not match the schema"}; \`pulumi-tuskr doctor\` shows what this service answers`,
        undefined,
      );
    }
    return parsed.data;
  }

  /** An answer read to its end: its body decoded, or the failure that is (too large, undecodable). */
  private readWhole(method: string, path: string, status: number, headers: Record<string, unknown>, raw: Buffer): Answer {
    try {
      return { status, headers, data: bodyText(raw, headers["content-encoding"] as string | undefined, RESPONSE_MAX_BYTES) };
    } catch (e) {
      if (e instanceof RangeError) throw this.tooLarge(method, path, status, RESPONSE_MAX_BYTES);
      // A refusal's status says what failed even when its body cannot be read.
      if (status < 200 || status >= 300) return { status, headers, data: "" };
      throw this.invalidResponse(method, path, status, e instanceof Error ? e.message : String(e), undefined);
    }
  }

  /** An HTTP client that could not be loaded: a configuration error, nothing sent, not retried. */
  private notLoaded(client: string, method: string, path: string, e: unknown): TuskrApiError {
    const why = e instanceof Error ? e.message.split("\n")[0] : String(e);
    return new TuskrApiError({
      code: "CONFIG_ERROR",
      message: this.redact(`${method} ${path}: the HTTP client (${client}) could not be loaded (${why}); nothing sent. Reinstall pulumi-tuskr's dependencies`),
      method,
      path,
      retryable: false,
    });
  }

  /** A request the HTTP client refused to build (a header it cannot carry): nothing was sent. */
  private unbuilt(method: string, path: string, e: unknown): TuskrApiError {
    const why = e instanceof Error ? e.message : String(e);
    return new TuskrApiError({
      code: "BAD_REQUEST",
      message: this.redact(`${method} ${path}: ${why}; nothing sent`),
      method,
      path,
      retryable: false,
      notSent: true,
    });
  }

  /** A 2xx answer that cannot be trusted: never retried, nothing from it is recorded. */
  invalidResponse(method: string, path: string, status: number, detail: string, body: unknown): TuskrApiError {
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

  private tooLarge(method: string, path: string, status: number, limit: number): TuskrApiError {
    return this.invalidResponse(method, path, status, `the body is larger than ${limit} bytes, the most the client reads`, undefined);
  }

  /**
   * A request not sent because an earlier one showed the service refusing every request, or not
   * answering at all (no status: refused connection, DNS, timeout); its status and code are that one's.
   */
  private notSent(method: string, path: string, refused: { error: TuskrApiError; attempts: number }): TuskrApiError {
    const { error, attempts } = refused;
    const why = error.status === undefined ? "the service cannot be reached" : "the service refuses every request";
    return new TuskrApiError({
      code: error.code,
      status: error.status,
      method,
      path,
      message: this.redact(`${method} ${path} not sent: ${why} (${error.message}, after ${attempts} attempt(s)); run \`pulumi up\` again once it answers`),
      retryable: false,
      notSent: true,
    });
  }

  private timeoutError(method: string, path: string, why: string, sent: boolean, retryable = sent): TuskrApiError {
    return new TuskrApiError({
      code: "TIMEOUT",
      message: this.redact(`${method} ${this.baseUrl}${path} timed out: ${why}`),
      method,
      path,
      retryable,
      mayHaveBeenApplied: sent,
    });
  }

  private httpError(method: string, path: string, response: Answer, about?: string): TuskrApiError {
    const text = response.data;
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
    const waitSeconds = serverRequestedWaitSeconds(response.headers);
    const gone =
      about !== undefined &&
      envelope.success &&
      envelope.data.error.details?.blobId === about &&
      ((status === 404 && code === "NOT_FOUND") || (status === 410 && code === "FILE_EXPIRED"));
    // A 404 that does not name the file is no evidence about it: say where it came from.
    const unexplained404 =
      status === 404 && !gone
        ? about !== undefined
          ? `; not the service's error naming it: the blobId ${JSON.stringify(about)} may not exist, or ${this.baseUrl}${path} may not be the service's route (check tuskr:baseUrl; \`pulumi-tuskr doctor\` tells)`
          : `; not the service's error: ${this.baseUrl}${path} may not be the service's route: check tuskr:baseUrl`
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

  private transportError(method: string, path: string, e: unknown, bodyLimit = RESPONSE_MAX_BYTES): TuskrApiError {
    const err = e as { code?: string; message?: string };
    if (err.code === "ERR_BAD_RESPONSE" && /maxContentLength/.test(err.message ?? "")) {
      return this.tooLarge(method, path, 200, bodyLimit);
    }
    const timeout = err.code === "ECONNABORTED" || err.code === "ETIMEDOUT" || err.code === CONNECT_TIMEOUT;
    // Refused, unresolvable or not connected in time: the request never reached the server, so it was not applied.
    const neverSent = err.code === "ECONNREFUSED" || err.code === "ENOTFOUND" || err.code === "EAI_AGAIN" || err.code === CONNECT_TIMEOUT;
    const code = timeout ? "TIMEOUT" : "NETWORK_ERROR";
    const why = neverSent ? `${err.code}: nothing answers at ${this.baseUrl}: check tuskr:baseUrl` : (err.code ?? err.message ?? "network error");
    return new TuskrApiError({
      code,
      message: this.redact(
        `${method} ${this.baseUrl}${path} ${timeout ? `timed out (${code})${neverSent ? `: no connection opened within ${this.timeoutMs} ms (tuskr:timeoutMs), nothing sent` : ""}` : `failed (${code}): ${why}`}`,
      ),
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
