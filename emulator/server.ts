import { createHash, timingSafeEqual } from "node:crypto";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { LIMITS } from "../provider/limits";
import { ERRORS, EmulatorError, emulatorError, emulatorErrorWithHeaders } from "./errors";
import type { FaultInjector, FaultKind, FaultRoute } from "./faults";
import { multipartBoundary, parseMultipart, type MultipartPart } from "./multipart";
import { FileService, requireObject, type UploadInput } from "./service";
import type { EmulatorStore } from "./store";

/** The largest upload body accepted (the emulator's own limit; the service publishes none). */
export const UPLOAD_MAX_BYTES = 32 * 1024 * 1024;
/** The log keeps this many entries, dropping the oldest. */
const LOG_MAX_ENTRIES = 10_000;
/** After a 413, this much more of the body is read and discarded before the connection is cut. */
const DISCARD_MAX_BYTES = 8 * 1024 * 1024;
const UPLOAD_FIELDS = ["file", "name", "tag", "category", "epochs"] as const;

export type LoggedRoute = FaultRoute | "unknown";

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
  /** Parsed JSON body of PATCH and renew requests, when it parsed. */
  requestBody?: unknown;
  idempotencyKey?: string;
  /** The fault injected into this request, if any. */
  fault?: FaultKind;
}

export interface ServerConfig {
  store: EmulatorStore;
  faults: FaultInjector;
  apiKeys: readonly string[];
  readOnlyApiKeys: readonly string[];
  rateLimit?: { requestsPerSecond: number };
}

type Match =
  | { kind: "upload" | "health" | "reset" | "advance" | "requests" | "files" | "faults"; allowed: readonly string[] }
  | { kind: "file" | "renew" | "cdn"; blobId: string; allowed: readonly string[] }
  | { kind: "none" }
  | { kind: "badPath" };

const ADMIN_ROUTES: Record<string, readonly string[]> = {
  health: ["GET"],
  reset: ["POST"],
  advance: ["POST"],
  requests: ["GET", "DELETE"],
  files: ["GET"],
  faults: ["GET", "POST"],
};

/**
 * Routes by path segment. The blobId is exactly one segment, percent-decoded once, so `%2F`
 * inside it stays part of the id; a `..` is an ordinary segment (nothing normalizes paths) and
 * extra segments match no route.
 */
export function matchPath(rawPath: string): Match {
  let segments: string[];
  try {
    segments = rawPath.split("/").slice(1).map((segment) => decodeURIComponent(segment));
  } catch {
    return { kind: "badPath" };
  }
  const [first, second, third, fourth] = segments;
  if (first === "v1" && second === "files") {
    if (segments.length === 2) return { kind: "upload", allowed: ["POST"] };
    if (third === "") return { kind: "none" };
    if (segments.length === 3) return { kind: "file", blobId: third, allowed: ["GET", "PATCH"] };
    if (segments.length === 4 && fourth === "renew") return { kind: "renew", blobId: third, allowed: ["POST"] };
    return { kind: "none" };
  }
  if (segments.length === 2 && first === "cdn" && second !== "") return { kind: "cdn", blobId: second, allowed: ["GET"] };
  if (segments.length === 2 && first === "_emulator" && Object.hasOwn(ADMIN_ROUTES, second)) {
    return { kind: second as "health", allowed: ADMIN_ROUTES[second] };
  }
  return { kind: "none" };
}

function loggedRoute(match: Match, method: string): LoggedRoute {
  if (match.kind === "upload" && method === "POST") return "upload";
  if (match.kind === "file" && method === "GET") return "get";
  if (match.kind === "file" && method === "PATCH") return "patch";
  if (match.kind === "renew" && method === "POST") return "renew";
  return "unknown";
}

/** One request in flight and what has been done about its response. */
interface Exchange {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  entry?: RequestLogEntry;
  answered: boolean;
}

interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** A token bucket holding one second's worth of requests. */
class TokenBucket {
  private tokens: number;
  private last = Date.now();
  private readonly capacity: number;

  constructor(readonly rate: number) {
    this.capacity = Math.max(1, rate);
    this.tokens = this.capacity;
  }

  /** Takes a token; when none is left, returns how many milliseconds until one is. */
  take(): number | undefined {
    const now = Date.now();
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return undefined;
    }
    return ((1 - this.tokens) / this.rate) * 1000;
  }
}

function rateLimitedError(waitSeconds: number, limit?: number): EmulatorError {
  const retryAfter = Math.max(1, Math.ceil(waitSeconds));
  const headers: Record<string, string> = {
    "Retry-After": String(retryAfter),
    "X-RateLimit-Reset": String(Math.ceil(Date.now() / 1000 + waitSeconds)),
  };
  if (limit !== undefined) {
    headers["X-RateLimit-Limit"] = String(limit);
    headers["X-RateLimit-Remaining"] = "0";
  }
  return emulatorErrorWithHeaders(ERRORS.rateLimited, headers, retryAfter);
}

const sha256 = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest();

export class EmulatorServer {
  readonly http: http.Server;
  private service: FileService | undefined;
  private log: RequestLogEntry[] = [];
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
    this.service = new FileService(this.config.store, url);
    return url;
  }

  get files(): FileService {
    if (this.service === undefined) throw new Error("the emulator is not listening");
    return this.service;
  }

  requests(): RequestLogEntry[] {
    return structuredClone(this.log).sort((a, b) => a.seq - b.seq);
  }

  clearRequests(): number {
    const count = this.log.length;
    this.log = [];
    this.seq = 0;
    return count;
  }

  async reset(): Promise<void> {
    await this.config.store.reset();
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
    const match = matchPath(rawPath);

    const exchange: Exchange = { req, res, answered: false };
    if (rawPath === "/v1" || rawPath.startsWith("/v1/")) {
      const idempotencyKey = req.headers["idempotency-key"];
      exchange.entry = {
        seq: ++this.seq,
        time: new Date().toISOString(),
        method,
        path: rawPath,
        route: loggedRoute(match, method),
        ...("blobId" in match ? { blobId: match.blobId } : {}),
        status: 0,
        ...(typeof idempotencyKey === "string" ? { idempotencyKey } : {}),
      };
    }
    // A client that goes away before the answer still leaves its entry in the log.
    res.on("close", () => {
      if (!exchange.answered) this.finish(exchange, 0);
    });

    try {
      if (match.kind === "health" && method === "GET") {
        const clock = this.config.store.clock;
        return this.respond(exchange, {
          status: 200,
          body: { status: "ok", epoch: clock.currentEpoch(), epochSeconds: clock.epochSeconds, advancedEpochs: clock.advancedEpochs },
        });
      }
      const readOnly = this.authenticate(req);
      if (match.kind === "badPath") throw emulatorError(ERRORS.malformedPath);
      if (match.kind === "none") throw emulatorError(ERRORS.routeNotFound, method, rawPath);
      if (!match.allowed.includes(method)) {
        throw emulatorErrorWithHeaders(ERRORS.methodNotAllowed, { Allow: match.allowed.join(", ") }, method, match.allowed);
      }
      if (readOnly && method !== "GET") {
        const action = { upload: "upload files", file: "update files", renew: "renew files" }[match.kind as string];
        throw emulatorError(ERRORS.readOnlyApiKey, action ?? "change the emulator's state");
      }

      switch (match.kind) {
        case "upload":
          return await this.v1(exchange, "upload");
        case "file":
          return await this.v1(exchange, method === "GET" ? "get" : "patch", match.blobId);
        case "renew":
          return await this.v1(exchange, "renew", match.blobId);
        case "cdn":
          return await this.cdn(exchange, match.blobId);
        default:
          return this.respond(exchange, await this.admin(exchange, match.kind, method));
      }
    } catch (error) {
      this.fail(exchange, error);
    }
  }

  /** Returns whether the key is read-only; throws 401 for a missing or unknown key. */
  private authenticate(req: http.IncomingMessage): boolean {
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
    return found.readOnly;
  }

  private async v1(exchange: Exchange, route: FaultRoute, blobId?: string): Promise<void> {
    const { req } = exchange;
    if (this.limiter !== undefined) {
      const waitMs = this.limiter.take();
      if (waitMs !== undefined) throw rateLimitedError(waitMs / 1000, this.limiter.rate);
    }

    // The body is read before any fault strikes, so the log shows what each attempt carried.
    let body: Buffer | undefined;
    let boundary: string | undefined;
    if (route === "patch" || route === "renew") {
      body = await readJsonBody(req);
      const parsed = tryParseJson(body);
      if (parsed.ok && exchange.entry) exchange.entry.requestBody = parsed.value;
    } else if (route === "upload") {
      boundary = multipartBoundary(req.headers["content-type"]);
      if (boundary === undefined) {
        throw emulatorError(ERRORS.unsupportedMediaType, "multipart/form-data with a boundary", req.headers["content-type"]);
      }
      body = await readBody(req, UPLOAD_MAX_BYTES);
    }

    const fault = this.config.faults.decide(route);
    if (fault !== undefined && exchange.entry) exchange.entry.fault = fault.kind;
    if (fault !== undefined && fault.latencyMs > 0) await sleep(fault.latencyMs, undefined, { signal: this.closing.signal });
    if (fault?.kind === "reset") return this.drop(exchange);
    if (fault?.kind === "5xx") throw emulatorError(fault.status === 500 ? ERRORS.injectedInternal : ERRORS.injectedUnavailable);
    if (fault?.kind === "429") throw rateLimitedError(fault.retryAfterSeconds ?? 1);

    let reply: Reply;
    try {
      reply = await this.apply(route, blobId, body, boundary, req);
    } catch (error) {
      if (fault?.kind === "apply-then-drop") return this.drop(exchange);
      throw error;
    }
    if (fault?.kind === "apply-then-drop") return this.drop(exchange); // applied and persisted; the answer is lost
    this.respond(exchange, reply);
  }

  private async apply(
    route: FaultRoute,
    blobId: string | undefined,
    body: Buffer | undefined,
    boundary: string | undefined,
    req: http.IncomingMessage,
  ): Promise<Reply> {
    const files = this.files;
    switch (route) {
      case "get":
        return { status: 200, body: files.get(blobId as string) };
      case "patch":
        return { status: 200, body: await files.patch(blobId as string, parseJson(body as Buffer)) };
      case "renew": {
        const header = req.headers["idempotency-key"];
        const key = typeof header === "string" ? header : undefined;
        const result = await files.renew(blobId as string, parseJson(body as Buffer), key);
        return { status: 200, body: result.body, headers: result.replayed ? { "Idempotent-Replayed": "true" } : undefined };
      }
      case "upload": {
        const input = uploadInput(parseMultipart(body as Buffer, boundary as string));
        const result = await files.upload(input);
        return { status: result.created ? 201 : 200, body: files.uploadView(result.file) };
      }
    }
  }

  private async cdn(exchange: Exchange, blobId: string): Promise<void> {
    const file = this.files.liveFile(blobId);
    const content = await this.config.store.readBlob(file.blobId);
    if (content === undefined) throw emulatorError(ERRORS.fileNotFound, blobId);
    exchange.answered = true;
    exchange.res.writeHead(200, { "Content-Type": file.mimeType, "Content-Length": content.length, "Cache-Control": "no-store" });
    exchange.res.end(content);
  }

  private async admin(exchange: Exchange, kind: string, method: string): Promise<Reply> {
    const { store, faults } = this.config;
    switch (kind) {
      case "reset":
        await this.reset();
        return { status: 200, body: { status: "reset", epoch: store.clock.currentEpoch() } };
      case "advance": {
        const object = requireObject(parseJson(await readJsonBody(exchange.req)), ["epochs"]);
        const epochs = object.epochs;
        if (!Number.isSafeInteger(epochs) || (epochs as number) < 0 || (epochs as number) > 1_000_000) {
          throw emulatorError(ERRORS.integerOutOfRange, "epochs", JSON.stringify(epochs) ?? "nothing", 0, 1_000_000);
        }
        await store.advance(epochs as number);
        return { status: 200, body: { epoch: store.clock.currentEpoch(), advancedEpochs: store.clock.advancedEpochs } };
      }
      case "requests":
        if (method === "DELETE") return { status: 200, body: { cleared: this.clearRequests() } };
        return { status: 200, body: this.requests() };
      case "files":
        return { status: 200, body: this.files.dump() };
      case "faults":
        if (method === "POST") faults.set(parseJson(await readJsonBody(exchange.req)));
        return { status: 200, body: faults.view() };
      default:
        throw emulatorError(ERRORS.routeNotFound, method, kind);
    }
  }

  // ---------------------------------------------------------------------------------------------

  private respond(exchange: Exchange, reply: Reply): void {
    if (exchange.answered) return;
    this.finish(exchange, reply.status);
    const { res } = exchange;
    if (res.destroyed) return;
    const text = JSON.stringify(reply.body);
    res.writeHead(reply.status, {
      "Content-Type": "application/json; charset=utf-8",
      "Content-Length": Buffer.byteLength(text),
      "Cache-Control": "no-store",
      ...reply.headers,
    });
    res.end(text);
  }

  private fail(exchange: Exchange, error: unknown): void {
    const known =
      error instanceof EmulatorError
        ? error
        : emulatorError(ERRORS.internal, this.closing.signal.aborted ? "the emulator is shutting down" : String((error as Error)?.message ?? error));
    if (known.status === 413) discardRest(exchange.req);
    this.respond(exchange, { status: known.status, body: known.toBody(), headers: { ...known.headers } });
  }

  /** Ends the connection without an answer, as a crash or a network cut would. */
  private drop(exchange: Exchange): void {
    this.finish(exchange, 0);
    exchange.req.socket.destroy();
  }

  /** Marks the exchange answered and logs it (for /v1 requests). */
  private finish(exchange: Exchange, status: number): void {
    exchange.answered = true;
    if (exchange.entry === undefined) return;
    exchange.entry.status = status;
    this.log.push(exchange.entry);
    if (this.log.length > LOG_MAX_ENTRIES) this.log.splice(0, this.log.length - LOG_MAX_ENTRIES);
  }
}

// -----------------------------------------------------------------------------------------------
// Bodies.
// -----------------------------------------------------------------------------------------------

/** Reads a JSON route's body: application/json only, at most LIMITS.jsonBodyMaxBytes. */
async function readJsonBody(req: http.IncomingMessage): Promise<Buffer> {
  const type = req.headers["content-type"];
  const media = type?.split(";")[0].trim().toLowerCase();
  if (media !== "application/json" && !(media?.startsWith("application/") && media.endsWith("+json"))) {
    throw emulatorError(ERRORS.unsupportedMediaType, "application/json", type);
  }
  return readBody(req, LIMITS.jsonBodyMaxBytes);
}

/**
 * Reads the whole body, refusing (413) as soon as it is known to be over `limit`: from
 * Content-Length before reading anything, or when the bytes read pass the limit. Nothing past
 * the limit is kept.
 */
function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(emulatorError(ERRORS.payloadTooLarge, limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        reject(emulatorError(ERRORS.payloadTooLarge, limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}

/**
 * After a 413 the rest of the body is read and thrown away, so the client can finish sending
 * and read the answer; a client that keeps sending past DISCARD_MAX_BYTES is cut off.
 */
function discardRest(req: http.IncomingMessage): void {
  if (req.complete) return;
  let discarded = 0;
  req.on("data", (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DISCARD_MAX_BYTES) req.socket.destroy();
  });
  req.on("error", () => undefined);
  req.resume();
}

function tryParseJson(body: Buffer): { ok: true; value: unknown } | { ok: false; detail: string } {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(body);
  } catch {
    return { ok: false, detail: "the body is not valid UTF-8" };
  }
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    const detail = (error as Error).message;
    return { ok: false, detail: detail.length > 200 ? `${detail.slice(0, 200)}…` : detail };
  }
}

function parseJson(body: Buffer): unknown {
  const parsed = tryParseJson(body);
  if (!parsed.ok) throw emulatorError(ERRORS.malformedJson, parsed.detail);
  return parsed.value;
}

/** The upload form: `file` required; `name`, `tag`, `category`, `epochs` optional text fields. */
function uploadInput(parts: MultipartPart[]): UploadInput {
  const seen = new Map<string, MultipartPart>();
  for (const part of parts) {
    if (!(UPLOAD_FIELDS as readonly string[]).includes(part.name)) throw emulatorError(ERRORS.unknownField, part.name, UPLOAD_FIELDS);
    if (seen.has(part.name)) throw emulatorError(ERRORS.duplicateField, part.name);
    seen.set(part.name, part);
  }
  const file = seen.get("file");
  if (file === undefined) throw emulatorError(ERRORS.requiredField, "file");
  const text = (name: string): string | undefined => seen.get(name)?.data.toString("utf8");

  const input: UploadInput = { content: Buffer.from(file.data), filename: file.filename, mimeType: file.contentType };
  const name = text("name");
  const tag = text("tag");
  const category = text("category");
  const epochs = text("epochs");
  if (name !== undefined) input.name = name;
  if (tag !== undefined) input.tag = tag;
  if (category !== undefined) input.category = category;
  if (epochs !== undefined) {
    if (!/^[0-9]{1,9}$/.test(epochs.trim())) {
      throw emulatorError(ERRORS.integerOutOfRange, "epochs", JSON.stringify(epochs.slice(0, 40)), 1, LIMITS.maxEpochsAhead);
    }
    input.epochs = Number(epochs.trim());
  }
  return input;
}
