import { LIMITS, type ErrorCode } from "../api";

/**
 * The one error catalogue of the emulator: every error it can answer is an entry here, with its
 * status, its code from the contract's catalogue (api/errors.ts), and the builder of its message. Routes raise
 * entries, never ad-hoc statuses, and the tests assert against these same entries.
 *
 * Messages name the field and the limit involved. They never contain an API key: nothing here is
 * ever given the Authorization header.
 */
export interface ErrorEntry<A extends unknown[] = never[]> {
  readonly status: number;
  readonly code: ErrorCode;
  readonly message: (...args: A) => string;
  /** The envelope's `details`, when the entry has any (the file a 404 or 410 is about). */
  readonly details?: (...args: A) => Record<string, unknown>;
}

function entry<A extends unknown[]>(
  status: number,
  code: ErrorCode,
  message: (...args: A) => string,
  details?: (...args: A) => Record<string, unknown>,
): ErrorEntry<A> {
  return { status, code, message, details };
}

/** Quotes caller-supplied text for a message, cut short so a huge input never makes a huge message. */
function quote(text: string, max = 80): string {
  return JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);
}

/** How a JSON value is named in messages ("got number"). */
export function jsonKind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

export const ERRORS = {
  // 400: the request cannot be read at all.
  malformedJson: entry(400, "BAD_REQUEST", (detail: string) => `request body is not valid JSON: ${detail}`),
  bodyNotObject: entry(400, "BAD_REQUEST", (got: string) => `request body must be a JSON object, got ${got}`),
  malformedMultipart: entry(400, "BAD_REQUEST", (detail: string) => `request body is not valid multipart/form-data: ${detail}`),
  malformedPath: entry(400, "BAD_REQUEST", () => "request path contains invalid percent-encoding"),
  // 405 and 415 keep the BAD_REQUEST code: the shared catalogue has no code of their own.
  methodNotAllowed: entry(
    405,
    "BAD_REQUEST",
    (method: string, allowed: readonly string[]) => `method ${method} is not allowed on this path; allowed: ${allowed.join(", ")}`,
  ),
  unsupportedMediaType: entry(
    415,
    "BAD_REQUEST",
    (expected: string, got: string | undefined) => `Content-Type must be ${expected}, got ${got === undefined ? "no Content-Type" : quote(got)}`,
  ),

  // 401 / 403
  missingApiKey: entry(401, "UNAUTHORIZED", () => "missing API key: send the header 'Authorization: Bearer <API key>'"),
  malformedAuthorization: entry(401, "UNAUTHORIZED", () => "the Authorization header must use the Bearer scheme: 'Authorization: Bearer <API key>'"),
  invalidApiKey: entry(401, "UNAUTHORIZED", () => "the API key is not valid"),
  readOnlyApiKey: entry(403, "FORBIDDEN", (action: string) => `this API key is read-only and cannot ${action}`),

  // 402
  insufficientBalance: entry(
    402,
    "INSUFFICIENT_BALANCE",
    (epochs: number, balance: number) =>
      `the prepaid balance is short: renewing by ${epochs} epochs costs ${epochs}, the balance is ${balance}; nothing was bought`,
  ),

  // 404 / 410
  routeNotFound: entry(404, "NOT_FOUND", (method: string, path: string) => `no route for ${method} ${quote(path, 200)}`),
  fileNotFound: entry(
    404,
    "NOT_FOUND",
    (blobId: string) => `no file with blobId ${quote(blobId)}`,
    (blobId: string) => ({ blobId }),
  ),
  blobIdTooLong: entry(
    404,
    "NOT_FOUND",
    (length: number) => `no file can have this blobId: it is ${length} characters long and a blobId is at most ${LIMITS.blobIdMaxLength}`,
  ),
  fileExpired: entry(
    410,
    "FILE_EXPIRED",
    (blobId: string, endEpoch: number, currentEpoch: number) =>
      `file ${quote(blobId)} expired when epoch ${endEpoch} began (current epoch ${currentEpoch}); ` + "an expired file cannot be read, updated or renewed",
    (blobId: string) => ({ blobId }),
  ),

  // 413
  payloadTooLarge: entry(413, "PAYLOAD_TOO_LARGE", (limit: number) => `request body is larger than ${limit} bytes, the most this route accepts`),

  // 422: the request is readable but its content is not acceptable.
  unknownField: entry(
    422,
    "VALIDATION_ERROR",
    (field: string, allowed: readonly string[]) => `unknown field ${quote(field)}; allowed fields: ${allowed.join(", ")}`,
  ),
  duplicateField: entry(422, "VALIDATION_ERROR", (field: string) => `field ${quote(field)} is given more than once`),
  requiredField: entry(422, "VALIDATION_ERROR", (field: string) => `field "${field}" is required`),
  wrongType: entry(422, "VALIDATION_ERROR", (field: string, expected: string, got: string) => `field "${field}" must be ${expected}, got ${got}`),
  tooLong: entry(
    422,
    "VALIDATION_ERROR",
    (field: string, length: number, max: number) => `field "${field}" is ${length} characters long; at most ${max} characters are allowed`,
  ),
  metadataTooManyKeys: entry(
    422,
    "VALIDATION_ERROR",
    (count: number) => `field "metadata" would have ${count} keys after the merge; at most ${LIMITS.metadataMaxKeys} keys are allowed`,
  ),
  metadataTooLarge: entry(
    422,
    "VALIDATION_ERROR",
    (bytes: number) => `field "metadata" would be ${bytes} bytes as JSON after the merge; at most ${LIMITS.metadataMaxBytes} bytes are allowed`,
  ),
  metadataTooDeep: entry(422, "VALIDATION_ERROR", () => `field "metadata" must be nested at most ${LIMITS.metadataMaxDepth} levels deep`),
  integerOutOfRange: entry(
    422,
    "VALIDATION_ERROR",
    (field: string, value: string, min: number, max: number) => `field "${field}" must be an integer from ${min} to ${max}, got ${value}`,
  ),
  renewBeyondHorizon: entry(
    422,
    "VALIDATION_ERROR",
    (epochs: number, ahead: number, currentEpoch: number, endEpoch: number) =>
      `field "epochs": renewing by ${epochs} would end ${ahead} epochs ahead of the current epoch ${currentEpoch}; ` +
      `at most ${LIMITS.maxEpochsAhead} epochs ahead can be bought (the file now ends at epoch ${endEpoch})`,
  ),
  idempotencyKeyInvalid: entry(
    422,
    "VALIDATION_ERROR",
    (length: number) => `header "Idempotency-Key" must be 1 to 255 visible ASCII characters, got ${length} characters`,
  ),
  alreadyStored: entry(
    409,
    "ALREADY_STORED",
    (blobId: string) => `this content is already stored as blobId ${quote(blobId)}; it was not uploaded again`,
    (blobId: string) => ({ blobId }),
  ),
  idempotencyKeyReused: entry(
    422,
    "IDEMPOTENCY_KEY_REUSED",
    (blobId: string, epochs: number) =>
      `header "Idempotency-Key" was already used to renew ${quote(blobId)} by ${epochs} epochs; ` + "a different request needs a new key",
  ),
  invalidFaultConfig: entry(422, "VALIDATION_ERROR", (detail: string) => `invalid fault configuration: ${detail}`),

  // 429 / 5xx
  rateLimited: entry(429, "RATE_LIMIT_EXCEEDED", (retryAfterSeconds: number) => `rate limit exceeded; retry after ${retryAfterSeconds} s`),
  internal: entry(500, "INTERNAL_ERROR", (detail: string) => `internal emulator error: ${detail}`),
  injectedInternal: entry(500, "INTERNAL_ERROR", () => "internal error (injected by the emulator's fault configuration)"),
  injectedUnavailable: entry(503, "SERVICE_UNAVAILABLE", () => "service unavailable (injected by the emulator's fault configuration)"),
} as const;

/** An error answered with the envelope `{"error":{"code","message","details"?}}`. */
export class EmulatorError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly headers: Readonly<Record<string, string>>;
  readonly details?: Readonly<Record<string, unknown>>;

  constructor(status: number, code: ErrorCode, message: string, headers: Record<string, string> = {}, details?: Record<string, unknown>) {
    super(message);
    this.name = "EmulatorError";
    this.status = status;
    this.code = code;
    this.headers = headers;
    this.details = details;
  }

  toBody(): { error: { code: ErrorCode; message: string; details?: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: { ...this.details } } : {}) } };
  }
}

/** Builds the error of a catalogue entry. */
export function emulatorError<A extends unknown[]>(e: ErrorEntry<A>, ...args: A): EmulatorError {
  return new EmulatorError(e.status, e.code, e.message(...args), {}, e.details?.(...args));
}

/** Same as `emulatorError`, with response headers (Allow, Retry-After, ...). */
export function emulatorErrorWithHeaders<A extends unknown[]>(e: ErrorEntry<A>, headers: Record<string, string>, ...args: A): EmulatorError {
  return new EmulatorError(e.status, e.code, e.message(...args), headers, e.details?.(...args));
}
