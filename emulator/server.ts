import { createHash, timingSafeEqual } from "node:crypto";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { type FormPart, type Parsed, discardRest, readJson, readMultipart } from "./body";
import { ERRORS, EmulatorError, emulatorError, emulatorErrorWithHeaders } from "./errors";
import type { FaultInjector, FaultKind, FaultRoute } from "./faults";
import { TokenBucket, rateLimitedError } from "./rate-limit";
import { type Reply, type Route, isServiceRoute, matchRoute, routeTable } from "./routes";
import { FileService, type DuplicateUploadMode, type IdempotencyMode } from "./service";
import type { FileStore } from "./store";

/** The log keeps this many entries, dropping the oldest. */
const LOG_MAX_ENTRIES = 10_000;

export type LoggedRoute = FaultRoute | "unknown";

/**
 * How many /v1 requests were answered (or dropped: status 0), by route and status, since the log
 * was last cleared: every one, however many entries the log keeps.
 */
export type RequestCounts = Partial<Record<LoggedRoute, Record<string, number>>>;

/** One /v1 request as the emulator received it. The Authorization header is never kept. */
export interface RequestLogEntry {
  /** Order of arrival, from 1; starts over when the log is cleared or the emulator reset. */
  seq: number;
  /** Arrival time, ISO 8601. */
  time: string;
  method: string;
  /** The path as sent, still percent-encoded, without the query string. */
  path: string;
  route: LoggedRoute;
  /** Percent-decoded blobId, for routes that have one. */
  blobId?: string;
  /** Status sent; 0 when no response was sent (connection destroyed, or the client went away). */
  status: number;
  /** Parsed JSON body of PATCH and renew requests, when it parsed; for an upload, its form's text fields and, for a file part, `{ filename, bytes }`. */
  requestBody?: unknown;
  idempotencyKey?: string;
  /** The fault injected into this request, if any. */
  fault?: FaultKind;
  /** Set while a `hang` or `apply-then-hang` fault holds the request (after applying it, for the latter). */
  held?: boolean;
}

export interface ServerConfig {
  store: FileStore;
  faults: FaultInjector;
  apiKeys: readonly string[];
  readOnlyApiKeys: readonly string[];
  rateLimit?: { requestsPerSecond: number };
  idempotency?: IdempotencyMode;
  prepaidBalance?: number;
  duplicateUpload?: DuplicateUploadMode;
  cdnWantsKey?: boolean;
}

/** One request in flight and what has been done about its response. */
interface Exchange {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  entry?: RequestLogEntry;
  answered: boolean;
}

const sha256 = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest();
const isV1 = (path: string): boolean => path === "/v1" || path.startsWith("/v1/");

export class EmulatorServer {
  readonly http: http.Server;
  private service: FileService | undefined;
  private routes: Route[] = [];
  private log: RequestLogEntry[] = [];
  private counts: RequestCounts = {};
  /** /v1 requests received and not yet answered or dropped. */
  private readonly open = new Set<RequestLogEntry>();
  private seq = 0;
  private readonly keys: { digest: Buffer; readOnly: boolean }[];
  private readonly limiter: TokenBucket | undefined;
  private readonly closing = new AbortController();
  private closed: Promise<void> | undefined;

  constructor(private readonly config: ServerConfig) {
    // Keys are compared by digest in constant time; the keys themselves are not kept here.
    this.keys = [
      ...config.apiKeys.map((key) => ({ digest: sha256(key), readOnly: false })),
      ...config.readOnlyApiKeys.map((key) => ({ digest: sha256(key), readOnly: true })),
    ];
    this.limiter = config.rateLimit ? new TokenBucket(config.rateLimit.requestsPerSecond) : undefined;
    this.http = http.createServer((req, res) => {
      this.handle(req, res).catch(() => res.destroy());
    });
  }

  /** Starts listening and returns the base URL. */
  async listen(port: number, host: string): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.http.once("error", reject);
      this.http.listen(port, host, () => {
        this.http.off("error", reject);
        resolve();
      });
    });
    const address = this.http.address() as AddressInfo;
    const shown = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
    const url = `http://${shown.includes(":") ? `[${shown}]` : shown}:${address.port}`;
    const service = new FileService(this.config.store, url, this.config.idempotency, this.config.prepaidBalance, this.config.duplicateUpload);
    this.service = service;
    this.routes = routeTable({
      service,
      store: this.config.store,
      faults: this.config.faults,
      reset: () => this.reset(),
      requests: () => this.requests(),
      requestCounts: () => this.requestCounts(),
      clearRequests: () => this.clearRequests(),
      cdnWantsKey: this.config.cdnWantsKey ?? false,
    });
    return url;
  }

  get files(): FileService {
    if (this.service === undefined) throw new Error("the emulator is not listening");
    return this.service;
  }

  requests(): RequestLogEntry[] {
    return structuredClone(this.log).sort((a, b) => a.seq - b.seq);
  }

  /** The /v1 requests received but not answered yet (status 0), in order of arrival. */
  inFlight(): RequestLogEntry[] {
    return structuredClone([...this.open]).sort((a, b) => a.seq - b.seq);
  }

  requestCounts(): RequestCounts {
    return structuredClone(this.counts);
  }

  clearRequests(): number {
    const count = this.log.length;
    this.log = [];
    this.counts = {};
    this.seq = 0;
    return count;
  }

  async reset(): Promise<void> {
    await this.config.store.reset();
    this.service?.refillBalances();
    this.clearRequests();
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      this.closing.abort();
      await new Promise<void>((resolve) => {
        this.http.close(() => resolve());
        this.http.closeAllConnections();
      });
      await this.config.store.flush();
    })();
    return this.closed;
  }

  // ---------------------------------------------------------------------------------------------

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const method = req.method ?? "GET";
    const rawUrl = req.url ?? "/";
    const query = rawUrl.indexOf("?");
    const rawPath = query === -1 ? rawUrl : rawUrl.slice(0, query);
    const match = matchRoute(this.routes, method, rawPath);

    const exchange: Exchange = { req, res, answered: false };
    if (isV1(rawPath)) {
      const idempotencyKey = req.headers["idempotency-key"];
      const blobId = match.kind === "route" ? match.blobId || undefined : match.kind === "method" ? match.blobId : undefined;
      exchange.entry = {
        seq: ++this.seq,
        time: new Date().toISOString(),
        method,
        path: rawPath,
        route: match.kind === "route" && isServiceRoute(match.route) ? match.route.name : "unknown",
        ...(blobId !== undefined ? { blobId } : {}),
        status: 0,
        ...(typeof idempotencyKey === "string" ? { idempotencyKey } : {}),
      };
      this.open.add(exchange.entry);
    }
    // A client that goes away before the answer still leaves its entry in the log.
    res.on("close", () => {
      if (!exchange.answered) this.finish(exchange, 0);
    });

    try {
      const route = match.kind === "route" ? match.route : undefined;
      const caller = route?.auth === false ? { readOnly: false, account: "" } : this.authenticate(req);
      const readOnly = caller.readOnly;
      if (match.kind === "badPath") throw emulatorError(ERRORS.malformedPath);
      if (match.kind === "none") throw emulatorError(ERRORS.routeNotFound, method, rawPath);
      if (match.kind === "method") {
        throw emulatorErrorWithHeaders(ERRORS.methodNotAllowed, { Allow: match.allowed.join(", ") }, method, match.allowed);
      }
      if (readOnly && method !== "GET") throw emulatorError(ERRORS.readOnlyApiKey, match.route.refusal);
      await this.serve(exchange, match.route, match.blobId, caller.account);
    } catch (error) {
      this.fail(exchange, error);
    }
  }

  /** The caller's key: read-only or not, and its account (the key's digest); 401 for a missing or unknown key. */
  private authenticate(req: http.IncomingMessage): { readOnly: boolean; account: string } {
    const header = req.headers.authorization;
    if (header === undefined || header.trim() === "") throw emulatorError(ERRORS.missingApiKey);
    const match = /^Bearer +(\S+) *$/i.exec(header);
    if (match === null) throw emulatorError(ERRORS.malformedAuthorization);
    const digest = sha256(match[1]);
    let found: { readOnly: boolean } | undefined;
    for (const key of this.keys) {
      if (timingSafeEqual(key.digest, digest)) found ??= key;
    }
    if (found === undefined) throw emulatorError(ERRORS.invalidApiKey);
    return { readOnly: found.readOnly, account: digest.toString("hex") };
  }

  /**
   * A matched route: the rate limit (service routes), the body read and parsed once (before any
   * fault strikes, so the log shows what each attempt carried), the injected fault, the handler.
   */
  private async serve(exchange: Exchange, route: Route, blobId: string, account: string): Promise<void> {
    const { req } = exchange;
    const service = isServiceRoute(route);
    if (service && this.limiter !== undefined) {
      const waitMs = this.limiter.take();
      if (waitMs !== undefined) throw rateLimitedError(waitMs / 1000, this.limiter.rate);
    }

    let json: Parsed<unknown> | undefined;
    let form: Parsed<FormPart[]> | undefined;
    if (route.body === "json") {
      json = await readJson(req);
      if (json.ok && exchange.entry) exchange.entry.requestBody = json.value;
    } else if (route.body === "multipart") {
      form = await readMultipart(req);
      if (form.ok && exchange.entry) exchange.entry.requestBody = formSummary(form.value);
    }

    const fault = service ? this.config.faults.decide(route.name, blobId || undefined) : undefined;
    if (fault !== undefined && exchange.entry) exchange.entry.fault = fault.kind;
    if (fault !== undefined && fault.latencyMs > 0) await sleep(fault.latencyMs, undefined, { signal: this.closing.signal });
    if (fault?.kind === "reset") return this.drop(exchange);
    if (fault?.kind === "hang") return this.hold(exchange);
    if (fault?.kind === "5xx") throw emulatorError(fault.status === 500 ? ERRORS.injectedInternal : ERRORS.injectedUnavailable);
    if (fault?.kind === "429") throw rateLimitedError(fault.retryAfterSeconds ?? 1);

    const parsed = <T>(body: Parsed<T> | undefined): T => {
      if (body === undefined) throw new Error(`route ${route.name} reads no body`);
      if (!body.ok) throw body.error;
      return body.value;
    };
    let reply: Reply;
    try {
      reply = await route.handle({
        blobId,
        account,
        json: () => parsed(json),
        form: () => parsed(form),
        header: (name) => {
          const value = req.headers[name.toLowerCase()];
          return typeof value === "string" ? value : undefined;
        },
      });
    } catch (error) {
      if (fault?.kind === "apply-then-drop") return this.drop(exchange);
      if (fault?.kind === "apply-then-hang") return this.hold(exchange);
      throw error;
    }
    if (fault?.kind === "apply-then-drop") return this.drop(exchange); // applied and persisted; the answer is lost
    if (fault?.kind === "apply-then-hang") return this.hold(exchange); // applied and persisted; no answer comes
    this.respond(exchange, reply);
  }

  // ---------------------------------------------------------------------------------------------

  private respond(exchange: Exchange, reply: Reply): void {
    if (exchange.answered) return;
    this.finish(exchange, reply.status);
    const { res } = exchange;
    if (res.destroyed) return;
    const [contentType, data] = reply.bytes
      ? [reply.bytes.contentType, reply.bytes.data]
      : ["application/json; charset=utf-8", Buffer.from(JSON.stringify(reply.body))];
    res.writeHead(reply.status, { "Content-Type": contentType, "Content-Length": data.length, "Cache-Control": "no-store", ...reply.headers });
    res.end(data);
  }

  private fail(exchange: Exchange, error: unknown): void {
    const known =
      error instanceof EmulatorError
        ? error
        : emulatorError(ERRORS.internal, this.closing.signal.aborted ? "the emulator is shutting down" : String((error as Error)?.message ?? error));
    if (known.status === 413) discardRest(exchange.req);
    this.respond(exchange, { status: known.status, body: known.toBody(), headers: { ...known.headers } });
  }

  /** Never answers: waits until the client goes away (or the emulator closes), then drops. */
  private async hold(exchange: Exchange): Promise<void> {
    if (exchange.entry) exchange.entry.held = true;
    await new Promise<void>((resolve) => {
      if (exchange.res.destroyed || this.closing.signal.aborted) return resolve();
      exchange.res.once("close", () => resolve());
      this.closing.signal.addEventListener("abort", () => resolve(), { once: true });
    });
    this.drop(exchange);
  }

  /** Ends the connection without an answer, as a crash or a network cut would. */
  private drop(exchange: Exchange): void {
    this.finish(exchange, 0);
    exchange.req.socket.destroy();
  }

  /** Marks the exchange answered and logs it (for /v1 requests). */
  private finish(exchange: Exchange, status: number): void {
    if (exchange.answered) return;
    exchange.answered = true;
    if (exchange.entry === undefined) return;
    this.open.delete(exchange.entry);
    exchange.entry.status = status;
    const byStatus = this.counts[exchange.entry.route] ?? {};
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    this.counts[exchange.entry.route] = byStatus;
    this.log.push(exchange.entry);
    if (this.log.length > LOG_MAX_ENTRIES) this.log.splice(0, this.log.length - LOG_MAX_ENTRIES);
  }
}

/** What the request log keeps of a multipart form: text fields as sent, files by name and size. */
function formSummary(parts: readonly FormPart[]): Record<string, unknown> {
  return Object.fromEntries(parts.map((p) => [p.name, p.filename === undefined ? p.data.toString("utf8") : { filename: p.filename, bytes: p.data.length }]));
}
