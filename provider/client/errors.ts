import type { ErrorCode } from "../../api";

/**
 * The API client's one error type, so callers handle one shape. It holds no headers, axios config
 * or `cause` because those carry the `Authorization` header, and every string is redacted in case a
 * server echoes the key.
 */
/** The service's catalogue (api/errors.ts), and the client's own codes for what no answer says. */
export type TuskrErrorCode =
  | ErrorCode
  | "HTTP_ERROR"
  | "NETWORK_ERROR"
  | "TIMEOUT"
  | "INVALID_RESPONSE"
  | "RENEW_OUTCOME_UNKNOWN"
  | "UPLOAD_OUTCOME_UNKNOWN"
  | "CONTENT_CHANGED"
  | "CONFIG_ERROR";

export interface TuskrApiErrorInit {
  code: TuskrErrorCode | string;
  message: string;
  status?: number;
  method?: string;
  path?: string;
  retryable?: boolean;
  responseBody?: unknown;
  /** Seconds the server asked us to wait (Retry-After / X-RateLimit-Reset), if any. */
  retryAfterSeconds?: number;
  /** True when the request may have been applied although it failed (timeout, reset, 5xx). */
  mayHaveBeenApplied?: boolean;
  /** The file the service said does not exist or has expired (its 404/410 envelope named it). */
  goneBlobId?: string;
}

export class TuskrApiError extends Error {
  override readonly name = "TuskrApiError";
  readonly code: string;
  readonly status?: number;
  readonly method?: string;
  readonly path?: string;
  readonly retryable: boolean;
  readonly responseBody?: unknown;
  readonly retryAfterSeconds?: number;
  readonly mayHaveBeenApplied: boolean;
  readonly goneBlobId?: string;

  constructor(init: TuskrApiErrorInit) {
    super(init.message);
    this.code = init.code;
    this.status = init.status;
    this.method = init.method;
    this.path = init.path;
    this.retryable = init.retryable ?? false;
    this.responseBody = init.responseBody;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.mayHaveBeenApplied = init.mayHaveBeenApplied ?? false;
    this.goneBlobId = init.goneBlobId;
  }

  /**
   * True only when the service's own envelope says that blobId is gone (404 NOT_FOUND or 410
   * FILE_EXPIRED); any other 404, such as a wrong base URL, says nothing about the file.
   */
  get isGone(): boolean {
    return this.goneBlobId !== undefined;
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      status: this.status,
      method: this.method,
      path: this.path,
      retryable: this.retryable,
      responseBody: this.responseBody,
    };
  }
}

export function isTuskrApiError(e: unknown): e is TuskrApiError {
  return e instanceof TuskrApiError || (typeof e === "object" && e !== null && (e as { name?: unknown }).name === "TuskrApiError");
}

const MASK = "[REDACTED]";

/** The forms a secret can take in a message: as written, JSON-escaped (also with \\u escapes), percent- and form-encoded. */
function secretForms(secret: string): string[] {
  const json = JSON.stringify(secret).slice(1, -1);
  const percent = encodeURIComponent(secret);
  return [
    secret,
    json,
    json.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
    percent,
    percent.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()),
    new URLSearchParams({ s: secret }).toString().slice(2),
  ];
}

/**
 * Redacts every form of each secret and any `Bearer` token in one left-to-right pass, so a mask is
 * never searched again; no regex is built from a secret, whatever its size or characters.
 */
export function redactString(text: string, secrets: readonly string[]): string {
  const forms = [...new Set(secrets.filter(Boolean).flatMap(secretForms))].filter(Boolean).sort((a, b) => b.length - a.length);
  let out = "";
  let at = 0;
  while (forms.length > 0) {
    let next = -1;
    let form = "";
    for (const f of forms) {
      const i = text.indexOf(f, at);
      if (i >= 0 && (next < 0 || i < next)) {
        next = i;
        form = f;
      }
    }
    if (next < 0) break;
    out += text.slice(at, next) + MASK;
    at = next + form.length;
  }
  out += text.slice(at);
  return out.replace(/Bearer\s+[^\s"',;]+/gi, `Bearer ${MASK}`);
}

/** Deep-redacts a JSON-like value (response bodies are echoed into errors). */
export function redactValue(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === "string") return redactString(value, secrets);
  if (Array.isArray(value)) return value.map((v) => redactValue(v, secrets));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[redactString(k, secrets)] = redactValue(v, secrets);
    return out;
  }
  return value;
}
