/**
 * The file service's contract as this project assumes it: limits and how they are counted,
 * error codes, paths and the blobId rule, wire shapes, JSON Merge Patch. The provider and the
 * emulator both import this folder; it imports neither.
 */
export {
  DEFAULT_EPOCH_SECONDS,
  LIMITS,
  jsonBytes,
  limitText,
  metadataLimitProblem,
  textLength,
  textLimitProblem,
  tooDeepAt,
  type LimitProblem,
} from "./limits";
export { ERROR_CODES, ErrorEnvelopeSchema, errorCodeForStatus, type ErrorCode, type ErrorEnvelope } from "./errors";
export { API_PREFIX, PATHS, blobIdLimitProblem, blobIdProblem, filePath } from "./paths";
export {
  FileRecordSchema,
  boundedText,
  IDEMPOTENCY_KEY_HEADER,
  PATCH_FIELDS,
  RENEW_FIELDS,
  RenewBodySchema,
  RenewRecordSchema,
  UPLOAD_FIELDS,
  UpdateFileBodySchema,
  UploadRecordSchema,
  type FileRecord,
  type PatchField,
  type RenewBody,
  type RenewRecord,
  type UpdateFileBody,
  type UploadRecord,
} from "./files";
export { applyMergePatch, isPlainObject, jsonEqual, mergePatchBetween, ownValue, type JsonObject, type JsonValue } from "./json";
