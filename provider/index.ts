export { StoredFile, type StoredFileArgs, type StoredFileOutputs } from "./dynamic/stored-file";
export { StoredFolder, type StoredFolderArgs } from "./dynamic/stored-folder";
export { getFile, getFileOutput, type GetFileArgs } from "./dynamic/get-file";
export type { GetFileResult } from "./file/get-file";
export { TuskrClient, type TuskrClientOptions, type ReceivedFile, DEFAULT_BASE_URL } from "./client/client";
export { TuskrApiError, type TuskrErrorCode } from "./client/errors";
export { LIMITS, type FileRecord } from "../api";
