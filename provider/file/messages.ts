import { isPlainObject, jsonEqual } from "../../api";
import { TuskrApiError, isTuskrApiError, redactStrings, secretMask } from "../client/errors";
import { resourceUrnOf, urnName } from "../engine/urns";
import type { StoredFileState } from "./schema";

/**
 * What a user reads when a StoredFile step fails or warns: the file named, what went wrong, what
 * to run next; and never the value of an input declared secret.
 */

/**
 * Every string inside the named inputs' values: what must never appear in a message. Keys are
 * data in metadata and `files` (a folder's paths) only; elsewhere (an asset, keepAlive, a path's
 * own values) they are the schema's field names, which masked would garble every message's wording.
 */
function secretTexts(values: Record<string, unknown> | undefined, secretNames: Iterable<string>): string[] {
  const out: string[] = [];
  const walk = (v: unknown, keysAreData: boolean): void => {
    if (typeof v === "string") out.push(v);
    else if (typeof v === "number") out.push(String(v));
    else if (v && typeof v === "object")
      for (const [k, x] of Object.entries(v)) {
        if (keysAreData && !Array.isArray(v)) out.push(k);
        walk(x, keysAreData);
      }
  };
  const input = (field: string, v: unknown): void => {
    if (field !== "files" || !isPlainObject(v)) {
      walk(v, field === "metadata");
      return;
    }
    for (const [rel, own] of Object.entries(v)) {
      out.push(rel);
      if (isPlainObject(own)) for (const [f, x] of Object.entries(own)) input(f, x);
      else walk(own, false);
    }
  };
  for (const field of secretNames) input(field, values?.[field]);
  return out;
}

/** How a file is named in messages: its managed name if any, else its blobId. */
export const label = (state: Pick<StoredFileState, "name">, blobId: string): string =>
  state.name ? `${JSON.stringify(state.name)} (${blobId})` : JSON.stringify(blobId);

/**
 * How a message names a file: a folder's entry (its URN the folder's plus the content's hash) as
 * its folder and path, as the folder's own messages do; any other as the StoredFile it is.
 */
export function subject(state: Pick<StoredFileState, "name">, blobId: string, urn?: string, path?: string): string {
  const resource = urn === undefined ? undefined : resourceUrnOf(urn);
  if (resource === undefined || resource === urn) return `StoredFile ${label(state, blobId)}`;
  return `StoredFolder ${JSON.stringify(urnName(resource))} (its file ${path === undefined ? label(state, blobId) : JSON.stringify(path)})`;
}

/** A value as a message shows it: JSON, cut short. */
export function shown(value: unknown): string {
  const text = value === undefined ? "(none)" : JSON.stringify(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * Masks every value of the named secret inputs in a message, including the recorded old value of an
 * input that was or is secret, since a message may show both. The masking is worked out on first
 * use: a folder makes one for each of thousands of entries, and most say nothing.
 */
export function redactor(values: Record<string, unknown>, secretNames: Iterable<string>, recorded?: StoredFileState): (text: string) => string {
  const names = [...secretNames];
  const old = recorded as Record<string, unknown> | undefined;
  const changed = [...new Set([...names, ...(recorded?.secretInputs ?? [])])].filter((f) => old !== undefined && !jsonEqual(old[f], values[f]));
  const texts = [...secretTexts(values, names), ...secretTexts(old, changed)];
  if (texts.length === 0) return (text) => text;
  let mask: ((text: string) => string) | undefined;
  return (text) => {
    mask ??= secretMask(texts);
    return mask(text);
  };
}

/** The same error, its message, reasons and the service's answer it carries masked. */
export function masked<E extends Error>(error: E, redact: (text: string) => string): E {
  error.message = redact(error.message);
  const reasons = (error as { reasons?: string[] }).reasons;
  if (Array.isArray(reasons)) (error as { reasons?: string[] }).reasons = reasons.map(redact);
  const detail = (error as { detail?: unknown }).detail;
  if (typeof detail === "string") (error as { detail?: string }).detail = redact(detail);
  const body = (error as { responseBody?: unknown }).responseBody;
  if (body !== undefined) Object.assign(error, { responseBody: redactStrings(body, redact) });
  return error;
}

/** Turns an API failure into a message that names the file and says what to do. */
export function describe(error: unknown, blobId: string, action: string): TuskrApiError {
  if (!isTuskrApiError(error)) {
    const detail = `${action} failed: ${String((error as Error)?.message ?? error)}`;
    return new TuskrApiError({ code: "INTERNAL_ERROR", message: `StoredFile ${JSON.stringify(blobId)}: ${detail}`, detail });
  }
  const detail = `${action} failed: ${hint(error, blobId)}`;
  return new TuskrApiError({
    code: error.code,
    status: error.status,
    method: error.method,
    path: error.path,
    retryable: error.retryable,
    responseBody: error.responseBody,
    mayHaveBeenApplied: error.mayHaveBeenApplied,
    notSent: error.notSent,
    message: `StoredFile ${JSON.stringify(blobId)}: ${detail}`,
    detail,
  });
}

function hint(error: TuskrApiError, blobId: string): string {
  if (error.isGone) {
    return error.status === 410
      ? `the file with blobId ${JSON.stringify(blobId)} has expired: an expired blob cannot be updated or renewed; upload it again`
      : `no file with blobId ${JSON.stringify(blobId)} exists on the service (unknown blobId): upload it first and declare the blobId the upload returns`;
  }
  switch (error.status) {
    case 402:
      return `the service refused to sell epochs: the prepaid balance is short (402 ${error.code}); nothing was bought. Top up the account, then run \`pulumi up\``;
    case 401:
      return "the service rejected the API key (401 UNAUTHORIZED): check the secret `tuskr:apiKey` (or TUSKR_API_KEY)";
    case 403:
      return "the API key is not allowed to change this file (403 FORBIDDEN)";
    default:
      return error.message;
  }
}
