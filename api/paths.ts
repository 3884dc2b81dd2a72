import { LIMITS, type LimitProblem, limitText, textLength } from "./limits";

/** Both operations, and the upload, live under this version prefix. */
export const API_PREFIX = "/v1";

/** The routes of the service that this project uses, as path patterns. */
export const PATHS = {
  /** `POST`: upload (multipart/form-data). */
  files: `${API_PREFIX}/files`,
  /** `GET` the index entry, `PATCH` it (Update File). */
  file: `${API_PREFIX}/files/:blobId`,
  /** `POST` Epoch Renewal. */
  renew: `${API_PREFIX}/files/:blobId/renew`,
} as const;

/**
 * What is wrong with a blobId, or undefined. Any string is accepted (Walrus ids are 43-character
 * base64url, the docs show `0x…` hex too) within the length limit, except those that cannot be
 * one path segment safely: empty, `.` and `..` (dot segments survive percent-encoding, URL
 * parsers treat `%2E%2E` as `..`), and control characters.
 */
export function blobIdLimitProblem(blobId: unknown): LimitProblem | undefined {
  if (typeof blobId !== "string") return { rule: "must be a string" };
  if (blobId.length === 0) return { rule: "must not be empty" };
  const length = textLength(blobId);
  if (length > LIMITS.blobIdMaxLength) return { rule: `must be at most ${LIMITS.blobIdMaxLength} characters`, found: `got ${length}` };
  if (blobId === "." || blobId === "..") return { rule: "must not be '.' or '..'" };
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused here.
  if (/[\u0000-\u001f\u007f]/.test(blobId)) return { rule: "must not contain control characters" };
  return undefined;
}

/** The same problem as one text. */
export function blobIdProblem(blobId: unknown): string | undefined {
  const problem = blobIdLimitProblem(blobId);
  return problem && limitText(problem);
}

/** A file's path: the pattern with the blobId as one percent-encoded segment. */
export function filePath(blobId: string, route: "file" | "renew" = "file"): string {
  return PATHS[route].replace(":blobId", encodeURIComponent(blobId));
}
