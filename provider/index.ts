export { StoredFile, type StoredFileArgs, type StoredFileOutputs } from "./stored-file";
export { StoredFolder, type StoredFolderArgs } from "./stored-folder";
export { getFile, getFileOutput, type GetFileArgs } from "./get-file-program";
export type { GetFileResult } from "./get-file";
export { TuskrClient, type TuskrClientOptions, type ReceivedFile, DEFAULT_BASE_URL } from "./client/client";
export { TuskrApiError, type TuskrErrorCode } from "./client/errors";
export { LIMITS, type FileRecord } from "../api";
