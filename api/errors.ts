import { z } from "zod";

/**
 * The service's error catalogue: each code with the status it comes with. Nothing documents
 * it; it is modeled on Tusky's (README "Differences from the real service"). The emulator
 * answers only these codes, and the client names a status that came without an envelope by
 * the code listed for it here.
 */
export const ERROR_CODES = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  /** The prepaid balance is short for a purchase (Tusky documents it for extensions). */
  INSUFFICIENT_BALANCE: 402,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  FILE_EXPIRED: 410,
  PAYLOAD_TOO_LARGE: 413,
  VALIDATION_ERROR: 422,
  /** An Idempotency-Key already used for another request (another file, or another number of epochs). */
  IDEMPOTENCY_KEY_REUSED: 422,
  /**
   * An upload of content the service already stores, refused (one of the behaviours a service may
   * have; `details.blobId` names the entry it already has).
   */
  ALREADY_STORED: 409,
  RATE_LIMIT_EXCEEDED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The code the catalogue lists for a status, if any. */
export function errorCodeForStatus(status: number): ErrorCode | undefined {
  return (Object.keys(ERROR_CODES) as ErrorCode[]).find((code) => ERROR_CODES[code] === status);
}

/**
 * Every error answer: `{"error":{"code":"...","message":"...","details":{...}}}`. An answer that a
 * file does not exist (404 `NOT_FOUND`) or has expired (410 `FILE_EXPIRED`) names the file in
 * `details.blobId` (assumed, after Tusky's `details`): that is what tells it from a 404 for a
 * path the service does not have (a wrong base URL), which must never drop a file from a stack.
 */
export const ErrorEnvelopeSchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string().optional().default(""),
    details: z.object({ blobId: z.string().optional() }).loose().optional().catch(undefined),
  }),
});
export type ErrorEnvelope = z.infer<typeof ErrorEnvelopeSchema>;
