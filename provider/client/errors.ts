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

/** An upload whose answer named an entry not shown to hold the bytes sent: what the next `up` checks again. */
export interface UploadedClaim {
  blobId: string;
  /** Answered as a new entry (201, not a replay). */
  created: boolean;
  size: number;
  filename: string;
  /** When it was sent (ms since the epoch). */
  sentAt: number;
  sha256?: string;
}

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
  /** An upload sent, perhaps bought, whose answer named an entry not shown to hold its bytes. */
  uploaded?: UploadedClaim;
  /** Not sent at all: an earlier request showed the service refusing every request, or not answering. */
  notSent?: boolean;
  /** The failure without the file's name in front: what a folder says under the file's path. */
  detail?: string;
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
  readonly uploaded?: UploadedClaim;
  readonly notSent: boolean;
  detail?: string;

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
    this.uploaded = init.uploaded;
    this.notSent = init.notSent ?? false;
    this.detail = init.detail;
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

/**
 * Secret forms this long or longer are masked wherever any run of this many of their characters
 * appears, so a secret cut short, trimmed or embedded is caught; shorter ones only whole (a run of
 * fewer characters would match ordinary wording too often).
 */
const RUN = 8;

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
 * A long secret also as a service may store it normalised (Unicode NFC, NFKC, NFD or NFKD, spaces
 * collapsed), where runs of the text as written would not be found: macOS file systems and some
 * services store text decomposed (NFD), so a composed secret would come back in other code units.
 */
function normalisedForms(secret: string): string[] {
  const collapsed = (text: string) => text.replace(/\s+/g, " ").trim();
  const forms = [
    secret.normalize("NFC"),
    secret.normalize("NFKC"),
    secret.normalize("NFD"),
    secret.normalize("NFKD"),
    collapsed(secret),
    collapsed(secret.normalize("NFKC")),
  ];
  return [secret, ...new Set(forms.filter((f) => f.length >= RUN && f !== secret))];
}

/** An ASCII capital letter's code folded to lower case, which keeps every index in place (full case mapping may not). */
const fold = (code: number): number => (code >= 65 && code <= 90 ? code + 32 : code);

/** The rolling hash of a run, mod 2^32: its multiplier, and that to the power RUN - 1 (the weight of the character leaving it). */
const BASE = 0x01000193;
const LEAVING = Array.from({ length: RUN - 1 }).reduce<number>((p) => Math.imul(p, BASE), 1);

/**
 * Where each run of the secrets' forms begins, by the run's rolling hash, and a bit per hash's low
 * 16 bits: most runs of a text are no secret's, and the bit tells so without a map lookup.
 */
type FormRuns = Map<number, Array<{ form: string; at: number }>> & { bits?: Uint32Array };

/** Calls `visit` with each run of `RUN` characters of `text`: its rolling hash (of the folded characters) and where it starts. */
function eachRun(text: string, visit: (hash: number, start: number) => void): void {
  let h = 0;
  for (let i = 0; i < text.length; i++) {
    h = (Math.imul(h, BASE) + fold(text.charCodeAt(i))) | 0;
    if (i < RUN - 1) continue;
    const start = i - RUN + 1;
    visit(h, start);
    h = (h - Math.imul(fold(text.charCodeAt(start)), LEAVING)) | 0;
  }
}

/** Indexes every run of `RUN` characters of `forms`, folded, by its hash: once per redactor. */
function indexRuns(forms: readonly string[]): FormRuns {
  const runs: FormRuns = new Map();
  const bits = new Uint32Array(2048);
  runs.bits = bits;
  for (const form of forms) {
    eachRun(form, (h, at) => {
      bits[(h & 0xffff) >>> 5] |= 1 << (h & 31);
      const starts = runs.get(h);
      if (starts) starts.push({ form, at });
      else runs.set(h, [{ form, at }]);
    });
  }
  return runs;
}

/** Whether the run of `text` at `i` is the run of `form` at `at`, both folded. */
function sameRun(text: string, i: number, form: string, at: number): boolean {
  for (let k = 0; k < RUN; k++) if (fold(text.charCodeAt(i + k)) !== fold(form.charCodeAt(at + k))) return false;
  return true;
}

/**
 * Hides every run of `RUN` characters of `text` (folded) that occurs in the forms `runs` indexes.
 * One pass, nothing allocated: every answer's strings pass here, so the work grows with the text
 * alone; each hash hit is compared in full.
 */
function markRuns(text: string, runs: FormRuns, hide: (from: number, to: number) => void): void {
  const bits = runs.bits;
  eachRun(text, (h, start) => {
    if (bits && (bits[(h & 0xffff) >>> 5] & (1 << (h & 31))) === 0) return;
    if (runs.get(h)?.some(({ form, at }) => sameRun(text, start, form, at))) hide(start, start + RUN);
  });
}

/**
 * A redactor for `secrets`, their forms worked out once. Every form of a secret of `RUN`
 * characters or more is masked by its runs, so no part of it long enough to mean something
 * survives a message that cut, trimmed or embedded it; a shorter secret only where a form appears
 * whole. Overlapping and adjacent hits merge into one mask, never searched again; `Bearer` tokens
 * are masked too in messages (`bearer`), never in data, where "Bearer bonds" is a user's value.
 */
export function secretMask(secrets: readonly string[], bearer = true): (text: string) => string {
  const given = [...new Set(secrets.filter(Boolean))];
  const whole = [...new Set(given.filter((s) => s.length < RUN).flatMap(secretForms))].filter(Boolean);
  const runs = indexRuns([
    ...new Set(
      given
        .filter((s) => s.length >= RUN)
        .flatMap(normalisedForms)
        .flatMap(secretForms),
    ),
  ]);
  return (text) => {
    // Made at the first hit: most texts hold no secret and are returned as they are.
    let hidden: Uint8Array | undefined;
    const hide = (from: number, to: number) => {
      hidden ??= new Uint8Array(text.length);
      hidden.fill(1, from, to);
    };
    for (const form of whole) for (let i = text.indexOf(form); i >= 0; i = text.indexOf(form, i + form.length)) hide(i, i + form.length);
    if (runs.size > 0 && text.length >= RUN) markRuns(text, runs, hide);
    if (!hidden) return bearer ? text.replace(/Bearer\s+[^\s"',;]+/gi, `Bearer ${MASK}`) : text;
    let out = "";
    for (let i = 0, j = 0; i < text.length; i = j) {
      while (j < text.length && hidden[j] === hidden[i]) j++;
      out += hidden[i] ? MASK : text.slice(i, j);
    }
    return bearer ? out.replace(/Bearer\s+[^\s"',;]+/gi, `Bearer ${MASK}`) : out;
  };
}

/** `text` with every secret masked (see `secretMask`). */
export function redactString(text: string, secrets: readonly string[]): string {
  return secretMask(secrets)(text);
}

/**
 * Every string in a JSON value (keys too) passed through `redact`: the value itself where nothing
 * in it changes (every answer passes here; copying each cost more than reading it). Other objects
 * (a Map, a Date) are not JSON, and are not walked.
 */
export function redactStrings(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === "string") return redact(value);
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v = redactStrings(value[i], redact);
      if (!out && v !== value[i]) out = value.slice(0, i);
      out?.push(v);
    }
    return out ?? value;
  }
  if (value && typeof value === "object") {
    const source = value as Record<string, unknown>;
    const keys = Object.keys(source);
    let pairs: Array<[string, unknown]> | undefined;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      const v = source[k];
      const rk = redact(k);
      const rv = redactStrings(v, redact);
      if (!pairs && (rk !== k || rv !== v)) pairs = keys.slice(0, i).map((key) => [key, source[key]]);
      pairs?.push([rk, rv]);
    }
    // Own entries made by fromEntries: a key named `__proto__` (a service's metadata may hold one)
    // stays a key rather than setting the copy's prototype.
    return pairs ? Object.fromEntries(pairs) : value;
  }
  return value;
}

/** Deep-redacts a JSON-like value (response bodies are echoed into errors). */
export function redactValue(value: unknown, secrets: readonly string[]): unknown {
  return redactStrings(value, secretMask(secrets));
}
