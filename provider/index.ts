export { StoredFile, type StoredFileArgs, type StoredFileOutputs } from "./stored-file";
export { TuskrClient, type TuskrClientOptions, type ReceivedFile, DEFAULT_BASE_URL } from "./client/client";
export { TuskrApiError, type TuskrErrorCode } from "./client/errors";
export { LIMITS, type FileRecord } from "../api";
