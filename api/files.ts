import { z } from "zod";
import { LIMITS, limitText, textLimitProblem } from "./limits";

/**
 * The wire shapes of the file routes, named once. Types derive from these schemas; the emulator
 * answers exactly these shapes, and the client reads them (leniently where the service
 * documents nothing, see provider/client).
 */

const JsonObjectSchema = z.record(z.string(), z.json());

/**
 * A string of at most `max`, counted as the service counts (`textLength`), with a message that
 * names the field and the limit. Used for request bodies here and for the service's answers.
 */
export function boundedText(field: string, max: number) {
  return z.string({ error: `${field} must be a string` }).check((ctx) => {
    const problem = textLimitProblem(field, ctx.value, max);
    if (problem) ctx.issues.push({ code: "custom", input: ctx.value, params: { max }, message: limitText(problem) });
  });
}

/**
 * A file's index entry: `GET /v1/files/:blobId` (documented, camelCase), and the answer of
 * PATCH (assumed). `metadata` and `mimeType` are not in the documented example.
 */
export const FileRecordSchema = z.object({
  blobId: z.string(),
  url: z.string(),
  name: z.string().nullable(),
  tag: z.string().nullable(),
  metadata: JsonObjectSchema,
  size: z.number().int().nonnegative(),
  mimeType: z.string(),
  createdAt: z.string(),
  expiresAt: z.string(),
});
export type FileRecord = z.infer<typeof FileRecordSchema>;

/** `POST …/renew` answers the updated record plus what was bought (assumed, after Tusky's `extend`). */
export const RenewRecordSchema = FileRecordSchema.extend({ epochsAdded: z.number().int().positive() });
export type RenewRecord = z.infer<typeof RenewRecordSchema>;

/** `POST /v1/files` answers snake_case (documented). */
export const UploadRecordSchema = z.object({
  id: z.string(),
  blob_id: z.string(),
  url: z.string(),
  size: z.number().int().nonnegative(),
  mime_type: z.string(),
  tag: z.string().nullable(),
  category: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string(),
});
export type UploadRecord = z.infer<typeof UploadRecordSchema>;

/** Fields Update File can change; each is optional in the body. */
export const PATCH_FIELDS = ["name", "tag", "metadata"] as const;
export type PatchField = (typeof PATCH_FIELDS)[number];

/**
 * Update File's body: only the fields that change. Under merge-patch semantics `null` clears a
 * field and, inside `metadata`, removes a key.
 */
export const UpdateFileBodySchema = z
  .object({
    name: boundedText("name", LIMITS.nameMaxLength).nullable().optional(),
    tag: boundedText("tag", LIMITS.tagMaxLength).nullable().optional(),
    metadata: JsonObjectSchema.nullable().optional(),
  })
  .strict();
export type UpdateFileBody = z.infer<typeof UpdateFileBodySchema>;

/** Fields of Epoch Renewal's body. */
export const RENEW_FIELDS = ["epochs"] as const;
export const RenewBodySchema = z.object({ epochs: z.number().int().min(1).max(LIMITS.renewMaxEpochs) }).strict();
export type RenewBody = z.infer<typeof RenewBodySchema>;

/** Form fields of the upload (multipart/form-data); `file` is required, `epochs` defaults to 1. */
export const UPLOAD_FIELDS = ["file", "name", "tag", "category", "epochs"] as const;

/** The header that makes a renew (and, in this project's assumption, an upload) idempotent. */
export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
