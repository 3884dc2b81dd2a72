/**
 * What crosses the wire: the answers' schemas (minimal, held to the contract's limits) and the
 * calls' request and result types.
 */
import { z } from "zod";
import { FileRecordSchema, LIMITS, boundedText, isPlainObject, limitText, metadataLimitProblem } from "../../api";
import { TuskrApiError, isTuskrApiError } from "./errors";

// ---------------------------------------------------------------------------------------------
// Response schemas: minimal ("only what is needed") and held to the contract's limits, since a
// value the service answers goes into state: unknown fields are dropped, absent ones stay
// absent, and a body that does not match becomes a TuskrApiError(INVALID_RESPONSE).
// ---------------------------------------------------------------------------------------------

const timestamp = (field: string) =>
  z
    .string()
    .max(64, { error: `${field} is longer than a timestamp` })
    .refine((v) => !Number.isNaN(Date.parse(v)), { error: `${field} is not a time` });

/**
 * `schema`'s check, handing on the value as it came: zod builds a parsed record by assignment,
 * which drops an own key named `__proto__` without a word, and a metadata key the provider never
 * saw is one its PATCH never removes.
 */
export function asReceived<T extends z.ZodType>(schema: T) {
  return z.custom<z.output<T>>().check((ctx) => {
    const parsed = schema.safeParse(ctx.value);
    if (!parsed.success)
      for (const issue of parsed.error.issues) ctx.issues.push({ code: "custom", input: ctx.value, path: issue.path, message: issue.message });
  });
}

/** The upload's documented snake_case names, and the GET's camelCase for each. */
const SNAKE_CASE = { blob_id: "blobId", mime_type: "mimeType", created_at: "createdAt", expires_at: "expiresAt" } as const;
const SNAKE_PAIRS = Object.entries(SNAKE_CASE);

/**
 * A record in either of the service's documented spellings (GET's camelCase, the upload's
 * snake_case) as camelCase, so every answer is read by one schema. A camelCase field wins.
 */
function camelRecord(value: unknown): unknown {
  if (!isPlainObject(value)) return value;
  // A record already in camelCase (every GET's) is read as it is: no copy.
  let out: Record<string, unknown> | undefined;
  for (const [snake, camel] of SNAKE_PAIRS) {
    if (!Object.hasOwn(value, snake)) continue;
    out ??= { ...value };
    if (out[camel] === undefined && out[snake] !== undefined) out[camel] = out[snake];
    delete out[snake];
  }
  return out ?? value;
}

/**
 * A file record as the client takes it: the contract's shape (api/files.ts), every field allowed
 * to be missing or null (the service documents only part of it; a GET's id is its path's), and
 * every value within the same limits as the inputs. Fields the client does not know are dropped.
 */
const RecordShape = z.object({
  blobId: FileRecordSchema.shape.blobId.optional(),
  url: boundedText("url", LIMITS.urlMaxLength).nullish(),
  name: boundedText("name", LIMITS.nameMaxLength).nullish(),
  tag: boundedText("tag", LIMITS.tagMaxLength).nullish(),
  metadata: asReceived(
    z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
      const problem = metadataLimitProblem(value);
      if (problem) ctx.addIssue({ code: "custom", message: limitText(problem) });
    }),
  ).nullish(),
  size: FileRecordSchema.shape.size.nullish(),
  mimeType: boundedText("mimeType", 255).nullish(),
  createdAt: timestamp("createdAt").nullish(),
  expiresAt: timestamp("expiresAt").nullish(),
});
export const ReceivedFileSchema = z.preprocess(camelRecord, RecordShape);

/**
 * A GET's record: when the file was created and when it expires are what every count of its epochs
 * starts from, so a record without them is refused, never counted on a guess.
 */
export const ReadFileSchema = z.preprocess(camelRecord, RecordShape.extend({ createdAt: timestamp("createdAt"), expiresAt: timestamp("expiresAt") }));
export type ReceivedFile = z.infer<typeof RecordShape> & { blobId: string };

/** The upload's answer (documented snake_case, or camelCase): the blobId it names is required, as every later request goes to it. */
export const UploadAnswerSchema = z.preprocess(camelRecord, RecordShape.extend({ blobId: FileRecordSchema.shape.blobId }));

/**
 * An answer read for what it says of the file when it is a record, and as an empty answer (the
 * record is then read) when it is not: PATCH's and renew's shapes are not documented.
 */
const recordIfAny = <S extends z.ZodType>(schema: S) =>
  z.unknown().transform((value): z.output<S> | undefined => {
    const parsed = schema.safeParse(camelRecord(value));
    return parsed.success ? parsed.data : undefined;
  });

/** What an upload sends: a file on disk or a text, and the name the file gets. */
export interface UploadSource {
  path?: string;
  text?: string;
  /** The bytes themselves (a small file read once). */
  bytes?: Buffer;
  /** The SHA-256 (hex) the file at `path` must have: read otherwise, the upload fails with CONTENT_CHANGED and nothing is stored. */
  sha256?: string;
  filename: string;
}

/** The upload form's fields besides the file. */
export interface UploadFields {
  tag?: string;
  /** Initial storage, in epochs (the service's default is 1). */
  epochs?: number;
  /** The file part's type: what the service records and serves the file as. */
  contentType?: string;
}

export interface UploadResult {
  file: Partial<ReceivedFile> & { blobId: string };
  /**
   * What showed the entry holds the bytes sent: a new entry made by this request, their SHA-256 as
   * its url serves them, or only the service's record (its url wants the key, or it has none).
   */
  checkedBy: "created" | "content" | "record";
  /** 201: a new file, the epochs bought; 200: the same content was already stored (nothing bought, nothing set). */
  created: boolean;
  confirmedBy: "response" | "replay";
  /** The entry's creation and expiry as the answer said them: a replay's are its first answer's, before anything bought since. */
  answer?: { createdAt?: string | null; expiresAt?: string | null };
  keyHonoured: boolean;
  resent: boolean;
}

/** PATCH answers the updated record (assumed), 204/empty, or anything else (read as empty). */
export const UpdateFileResponseSchema = recordIfAny(RecordShape);
/** Renew answers the updated record, perhaps with Tusky-like extras; or nothing, or anything else (read as empty). */
export const RenewFileResponseSchema = recordIfAny(RecordShape.extend({ epochsAdded: z.number().nullish() }));

export interface RenewOptions {
  /** Sent as `Idempotency-Key`; reused verbatim on every retry of this purchase. */
  idempotencyKey: string;
  /**
   * The expiry last seen before this renew. The answer must be later, and an ambiguous failure's
   * read-back compares against it (see `readBackVerdict`).
   */
  expiresAtBefore?: string | null;
  /**
   * Length of one epoch, when known. With it, the read-back counts the renew as applied only on an
   * exact move, so a renewal made elsewhere is not mistaken for ours; without it only a renew of
   * one epoch is sent, and its move shows the length.
   */
  epochMs?: number;
  /**
   * The service is known to honour Idempotency-Key (default: this client saw it replay a renew's
   * answer). Then an ambiguous failure is sent again under the same key; otherwise never: the file
   * is read back, a move only this purchase explains is taken, anything else is RENEW_OUTCOME_UNKNOWN.
   */
  keyHonoured?: boolean;
}

export interface RenewResult {
  /** The file after the renew, when the service (or the read-back) told us. */
  file?: Partial<ReceivedFile>;
  /** How we know the epochs were bought: the answer, a replay of an earlier answer, or a read-back. */
  confirmedBy: "response" | "replay" | "read-back";
  /** The service is known to honour Idempotency-Key: this client saw it replay a renew's answer. */
  keyHonoured: boolean;
  /** This call sent the purchase more than once (a replay then answers its own earlier send). */
  resent: boolean;
}

/** The entry a 409 ALREADY_STORED names (`details.blobId`), if `e` is one. */
export function alreadyStoredAs(e: unknown): string | undefined {
  if (!isTuskrApiError(e) || e.status !== 409 || e.code !== "ALREADY_STORED") return undefined;
  const body = e.responseBody as { error?: { details?: { blobId?: unknown } } } | undefined;
  const blobId = body?.error?.details?.blobId;
  return typeof blobId === "string" ? blobId : undefined;
}

/**
 * A request body checked against the contract before it is sent (BAD_REQUEST, nothing sent), and
 * sent as given: a parsed copy would drop a metadata key named `__proto__` (the `null` that
 * removes it included). The contract's body schemas transform nothing.
 */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown, method: string, path: string): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new TuskrApiError({
      code: "BAD_REQUEST",
      message: `${method} ${path}: invalid request body at ${issue?.path.join(".") || "body"}: ${issue?.message}`,
      method,
      path,
      retryable: false,
    });
  }
  return body as z.infer<S>;
}
