/**
 * Limits the service does not publish. The emulator enforces exactly these and the provider
 * checks the same ones before any request, so a bad input fails at preview instead of at apply.
 * See README "Differences from the real service".
 */
export const LIMITS = {
  /** Maximum length of `name`, in characters. */
  nameMaxLength: 256,
  /** Maximum length of `tag`, in characters. */
  tagMaxLength: 256,
  /** Maximum number of top-level keys in `metadata`. */
  metadataMaxKeys: 64,
  /** Maximum size of `metadata` serialized as JSON, in bytes (UTF-8). */
  metadataMaxBytes: 16 * 1024,
  /** Maximum nesting depth of `metadata` (the object itself is depth 1). */
  metadataMaxDepth: 32,
  /** Maximum length of a blobId, in characters. */
  blobIdMaxLength: 512,
  /** Walrus lets storage be bought at most this many epochs ahead of the current epoch. */
  maxEpochsAhead: 53,
  /** Largest epochs value accepted by one renew request (cannot exceed the horizon anyway). */
  renewMaxEpochs: 53,
  /** Maximum accepted request body, in bytes, for JSON routes. */
  jsonBodyMaxBytes: 64 * 1024,
} as const;

/** Error codes of the service's error envelope `{"error":{"code","message"}}`. */
export const ERROR_CODES = {
  badRequest: "BAD_REQUEST",
  unauthorized: "UNAUTHORIZED",
  forbidden: "FORBIDDEN",
  notFound: "NOT_FOUND",
  expired: "FILE_EXPIRED",
  validation: "VALIDATION_ERROR",
  payloadTooLarge: "PAYLOAD_TOO_LARGE",
  rateLimited: "RATE_LIMIT_EXCEEDED",
  internal: "INTERNAL_ERROR",
  unavailable: "SERVICE_UNAVAILABLE",
} as const;

export type ErrorCode = (typeof ERROR_CODES)[keyof typeof ERROR_CODES];
