export { StoredFile, type StoredFileArgs } from "./stored-file";
export { TuskrClient, type TuskrClientOptions, type FileRecord, DEFAULT_BASE_URL } from "./client/client";
export { TuskrApiError, type TuskrErrorCode } from "./client/errors";
export { LIMITS } from "./limits";
