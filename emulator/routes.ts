import { API_PREFIX, LIMITS, PATHS, UPLOAD_FIELDS } from "../api";
import type { FormPart } from "./body";
import { ERRORS, emulatorError } from "./errors";
import type { FaultInjector, FaultRoute } from "./faults";
import type { FileStore } from "./store";
import { type FileService, type UploadInput, requireObject } from "./service";

/**
 * The emulator's one route table: a line per route, with its method, path pattern, body kind,
 * what a read-only key may not do there, and its handler. The server derives the rest from it:
 * the name a /v1 request is logged under, the `Allow` header of a 405, the 403 for read-only
 * keys, which body to read (once) and whether faults and the rate limit apply.
 */

type BodyKind = "none" | "json" | "multipart";
type RouteName = FaultRoute | "cdn" | "health" | "reset" | "advance" | "requests" | "requestCounts" | "clearRequests" | "files" | "faults" | "setFaults";

/** An answer: JSON by default, or raw bytes (the CDN). */
export interface Reply {
  status: number;
  body?: unknown;
  bytes?: { contentType: string; data: Buffer };
  headers?: Record<string, string>;
}

/** What a handler gets: the path's parameters and the body, parsed once by the route's kind. */
interface RouteRequest {
  blobId: string;
  /** Who calls: the API key's digest (the key itself is never kept). */
  account: string;
  /** The parsed JSON body; throws the parse error (400) if it did not parse. */
  json(): unknown;
  /** The parsed multipart form; likewise. */
  form(): FormPart[];
  header(name: string): string | undefined;
}

export interface Route {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  pattern: string;
  name: RouteName;
  body: BodyKind;
  /** Whether the route needs a key. */
  auth: boolean;
  /** For the 403 a read-only key gets on any method but GET. */
  refusal: string;
  handle(request: RouteRequest): Promise<Reply> | Reply;
}

/** What the handlers work with. */
export interface RouteDeps {
  service: FileService;
  store: FileStore;
  faults: FaultInjector;
  reset(): Promise<void>;
  requests(): unknown;
  requestCounts(): unknown;
  clearRequests(): number;
  /** The CDN serves a file's bytes only with a key, as a gateway in front of the service may. */
  cdnWantsKey: boolean;
}

const ok = (body: unknown): Reply => ({ status: 200, body });
const ADMIN = "change the emulator's state";

export function routeTable(d: RouteDeps): Route[] {
  const route = (method: Route["method"], pattern: string, name: RouteName, body: BodyKind, refusal: string, handle: Route["handle"]): Route => ({
    method,
    pattern,
    name,
    body,
    // Health needs no key, and the CDN none unless it stands for a gateway that wants one.
    auth: name !== "health" && (name !== "cdn" || d.cdnWantsKey),
    refusal,
    handle,
  });
  return [
    route("POST", PATHS.files, "upload", "multipart", "upload files", async (r) => {
      const result = await d.service.upload(uploadInput(r.form()), r.header("idempotency-key"));
      return { status: result.status, body: result.body, headers: keyHeaders(result) };
    }),
    route("GET", PATHS.file, "get", "none", ADMIN, (r) => ok(d.service.get(r.blobId))),
    route("PATCH", PATHS.file, "patch", "json", "update files", async (r) => ok(await d.service.patch(r.blobId, r.json()))),
    route("POST", PATHS.renew, "renew", "json", "renew files", async (r) => {
      const result = await d.service.renew(r.blobId, r.json(), r.header("idempotency-key"), r.account);
      return { status: 200, body: result.body, headers: keyHeaders(result) };
    }),
    route("GET", "/cdn/:blobId", "cdn", "none", ADMIN, async (r) => {
      const file = d.service.liveFile(r.blobId);
      const data = await d.store.readBlob(file.blobId);
      if (data === undefined) throw emulatorError(ERRORS.fileNotFound, r.blobId);
      return { status: 200, bytes: { contentType: file.mimeType, data } };
    }),
    route("GET", "/_emulator/health", "health", "none", ADMIN, () => {
      const clock = d.store.clock;
      return ok({ status: "ok", epoch: clock.currentEpoch(), epochSeconds: clock.epochSeconds, advancedEpochs: clock.advancedEpochs });
    }),
    route("POST", "/_emulator/reset", "reset", "none", ADMIN, async () => {
      await d.reset();
      return ok({ status: "reset", epoch: d.store.clock.currentEpoch() });
    }),
    route("POST", "/_emulator/advance", "advance", "json", ADMIN, async (r) => {
      const epochs = advanceEpochs(r.json());
      await d.store.advance(epochs);
      return ok({ epoch: d.store.clock.currentEpoch(), advancedEpochs: d.store.clock.advancedEpochs });
    }),
    route("GET", "/_emulator/requests", "requests", "none", ADMIN, () => ok(d.requests())),
    route("GET", "/_emulator/request-counts", "requestCounts", "none", ADMIN, () => ok(d.requestCounts())),
    route("DELETE", "/_emulator/requests", "clearRequests", "none", ADMIN, () => ok({ cleared: d.clearRequests() })),
    route("GET", "/_emulator/files", "files", "none", ADMIN, () => ok(d.service.dump())),
    route("GET", "/_emulator/faults", "faults", "none", ADMIN, () => ok(d.faults.view())),
    route("POST", "/_emulator/faults", "setFaults", "json", ADMIN, (r) => {
      d.faults.set(r.json());
      return ok(d.faults.view());
    }),
  ];
}

/** A key the service took is echoed back (as Stripe does): the client's proof that it counts. */
function keyHeaders(result: { key?: string; replayed: boolean }): Record<string, string> {
  const headers: Record<string, string> = {};
  if (result.key !== undefined) headers["Idempotency-Key"] = result.key;
  if (result.replayed) headers["Idempotent-Replayed"] = "true";
  return headers;
}

/** Whether a route is one of the service's own (/v1): logged, rate-limited, subject to faults. */
export const isServiceRoute = (route: Route): route is Route & { name: FaultRoute } => route.pattern.startsWith(`${API_PREFIX}/`);

export type Match =
  | { kind: "route"; route: Route; blobId: string }
  /** The path is known, the method is not: 405 with these methods in `Allow`. */
  | { kind: "method"; allowed: string[]; blobId?: string }
  | { kind: "none" }
  /** Invalid percent-encoding. */
  | { kind: "badPath" };

/**
 * Finds the route of a request. The path is split into segments, each percent-decoded once, so
 * `%2F` inside a blobId stays part of it; `:blobId` matches exactly one non-empty segment;
 * nothing normalizes the path (`..` is an ordinary segment) and extra segments match nothing.
 */
export function matchRoute(routes: readonly Route[], method: string, rawPath: string): Match {
  let segments: string[];
  try {
    segments = rawPath
      .split("/")
      .slice(1)
      .map((segment) => decodeURIComponent(segment));
  } catch {
    return { kind: "badPath" };
  }
  const onPath: Array<{ route: Route; blobId: string }> = [];
  for (const route of routes) {
    const pattern = route.pattern.split("/").slice(1);
    if (pattern.length !== segments.length) continue;
    let blobId = "";
    const fits = pattern.every((part, i) => {
      if (part !== ":blobId") return part === segments[i];
      blobId = segments[i];
      return blobId !== "";
    });
    if (fits) onPath.push({ route, blobId });
  }
  const exact = onPath.find((m) => m.route.method === method);
  if (exact) return { kind: "route", ...exact };
  if (onPath.length > 0) return { kind: "method", allowed: onPath.map((m) => m.route.method), blobId: onPath[0].blobId || undefined };
  return { kind: "none" };
}

/** The upload form: `file` required; `name`, `tag`, `category`, `epochs` optional text fields. */
function uploadInput(parts: FormPart[]): UploadInput {
  const seen = new Map<string, FormPart>();
  for (const part of parts) {
    if (!(UPLOAD_FIELDS as readonly string[]).includes(part.name)) throw emulatorError(ERRORS.unknownField, part.name, UPLOAD_FIELDS);
    if (seen.has(part.name)) throw emulatorError(ERRORS.duplicateField, part.name);
    seen.set(part.name, part);
  }
  const file = seen.get("file");
  if (file === undefined) throw emulatorError(ERRORS.requiredField, "file");
  const text = (name: string): string | undefined => seen.get(name)?.data.toString("utf8");
  const input: UploadInput = { content: file.data, filename: file.filename, mimeType: file.contentType };
  for (const field of ["name", "tag", "category"] as const) {
    const value = text(field);
    if (value !== undefined) input[field] = value;
  }
  const epochs = text("epochs");
  if (epochs !== undefined) input.epochs = epochsField(epochs);
  return input;
}

function epochsField(raw: string): number {
  if (!/^[0-9]{1,9}$/.test(raw.trim())) throw emulatorError(ERRORS.integerOutOfRange, "epochs", JSON.stringify(raw.slice(0, 40)), 1, LIMITS.maxEpochsAhead);
  return Number(raw.trim());
}

/** `POST /_emulator/advance` body: `{epochs}`, an integer from 0 to 1,000,000. */
function advanceEpochs(body: unknown): number {
  const { epochs } = requireObject(body, ["epochs"]);
  if (!Number.isSafeInteger(epochs) || (epochs as number) < 0 || (epochs as number) > 1_000_000) {
    throw emulatorError(ERRORS.integerOutOfRange, "epochs", JSON.stringify(epochs) ?? "nothing", 0, 1_000_000);
  }
  return epochs as number;
}
