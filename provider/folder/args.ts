// The program-facing arguments live with the folder's core, not in a front door, so that dynamic/ and
// plugin/ both import them and neither imports the other.
import type { StoredFileArgs } from "../file/args";

/** What every file of a folder shares, and what a file may set for itself. */
type FileValues = Omit<StoredFileArgs, "blobId" | "source">;

export interface StoredFolderArgs extends Omit<FileValues, "name"> {
  /** The directory whose files are kept, relative to the program's directory. */
  path: string;
  /** Globs of the files to keep, relative to `path` (default every file; dot files only if named). */
  include?: string[];
  /** Globs of files to leave out. */
  exclude?: string[];
  /** Per-file values over the shared ones (name, tag, metadata, contentType, retentionEpochs, retainUntil, keepAlive), by relative path. */
  files?: Record<string, FileValues>;
  /**
   * Keep the whole folder as one resource, so the engine's cost stays that of one resource even at
   * 10,000 files. Default false (one StoredFile per content); switching a stack re-uploads every
   * content, see the README.
   */
  oneResource?: boolean;
  /**
   * Keep the folder as this many resources (1 to 64; implies `oneResource`), each holding the
   * contents whose sha256 falls in it: a one-file change updates one or two parts, not the whole
   * folder. About one part per 2,000 files. Raising it hands each moved content's entry to its new
   * part; lowering it uploads the removed parts' contents again (docs/stored-folder.md).
   */
  parts?: number;
}
