import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import picomatch from "picomatch";
import { globSync } from "tinyglobby";
import { StoredFile, type StoredFileArgs } from "./stored-file";

/** What every file of a folder shares, and what a file may set for itself. */
type FileValues = Omit<StoredFileArgs, "blobId" | "source">;

export interface StoredFolderArgs extends Omit<FileValues, "name"> {
  /** The directory whose files are kept, relative to the program's directory. */
  path: string;
  /** Globs of the files to keep, relative to `path` (default every file; dot files only if named). */
  include?: string[];
  /** Globs of files to leave out. */
  exclude?: string[];
  /** Per-file values over the shared ones (name, tag, metadata, retentionEpochs, keepAlive), by relative path. */
  files?: Record<string, FileValues>;
}

/**
 * A directory kept on Tuskr: one StoredFile per file, uploaded from `source`, named by its path
 * relative to the folder (`docs/guide.md`), sharing `tag`, `metadata`, `retentionEpochs` and
 * `keepAlive`, with per-file overrides. A file added is one upload; a file edited is that file
 * replaced (a new blob; the old one is left as it is); a file removed is no longer managed (no
 * request: it keeps its period); an unchanged folder sends nothing.
 */
export class StoredFolder extends pulumi.ComponentResource {
  /** The StoredFile of each file, by path relative to the folder. */
  readonly files: Readonly<Record<string, StoredFile>>;
  /** Each file's blobId, by relative path. */
  readonly blobIds: pulumi.Output<Record<string, string>>;

  constructor(name: string, args: StoredFolderArgs, opts?: pulumi.ComponentResourceOptions) {
    super("tuskr:index:StoredFolder", name, {}, opts);
    const { path: dir, include, exclude, files: overrides = {}, ...shared } = args;
    const relatives = folderFiles(name, dir, include, exclude);
    // An override for a file that is not (or no longer) there is likely a typo or a leftover: said, not fatal.
    for (const rel of Object.keys(overrides).filter((r) => !relatives.includes(r))) {
      pulumi.log.warn(`StoredFolder ${name}: files[${JSON.stringify(rel)}] names no file of ${dir} that the globs match; it is ignored`, this);
    }
    const files: Record<string, StoredFile> = {};
    for (const rel of relatives) {
      files[rel] = new StoredFile(
        `${name}/${rel}`,
        { name: rel, ...shared, ...overrides[rel], source: new pulumi.asset.FileAsset(path.join(dir, rel)) },
        { parent: this },
      );
    }
    this.files = files;
    this.blobIds = pulumi.output(Object.fromEntries(Object.entries(files).map(([rel, f]) => [rel, f.blobId])));
    this.registerOutputs({ blobIds: this.blobIds });
  }
}

/**
 * The folder's regular files matching the globs, as sorted POSIX paths relative to it. The walk
 * never follows a symbolic link, so it never leaves the folder; a link or a special file (FIFO,
 * socket, device) that the globs match is refused, naming it: uploading what a link points to
 * could upload any file of the machine that runs `pulumi up`.
 */
function folderFiles(name: string, dir: string, include: string[] = ["**/*"], exclude: string[] = []): string[] {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dir);
  } catch {
    throw new Error(`StoredFolder ${name}: path ${dir} does not exist (paths are relative to the program's directory, ${process.cwd()})`);
  }
  if (!stat.isDirectory()) throw new Error(`StoredFolder ${name}: path ${dir} is not a directory`);
  // Globs are relative to the folder and stay in it: `..` or an absolute path would reach files outside.
  for (const glob of [...include, ...exclude]) {
    if (path.isAbsolute(glob) || glob.split(/[\\/]/).includes("..")) {
      throw new Error(`StoredFolder ${name}: the glob ${JSON.stringify(glob)} leaves the folder; globs are relative to ${dir} and stay inside it`);
    }
  }
  const included = picomatch(include);
  const excludedPath = exclude.length > 0 ? picomatch(exclude) : () => false;
  // Excluding a directory excludes what is under it (as the glob walk does).
  const excluded = (rel: string) =>
    rel.split("/").some((_, i, parts) => excludedPath(parts.slice(0, i + 1).join("/")) || excludedPath(`${parts.slice(0, i + 1).join("/")}/`));
  for (const entry of notRegularFiles(dir)) {
    if (!included(entry.rel) || excluded(entry.rel)) continue;
    throw new Error(
      `StoredFolder ${name}: ${path.join(dir, entry.rel)} is ${entry.what}: a folder uploads regular files only, and never follows ` +
        `a link out of itself; leave it out (exclude: [${JSON.stringify(entry.rel)}]) or put the file itself there`,
    );
  }
  return globSync(include, { cwd: dir, ignore: exclude, onlyFiles: true, expandDirectories: false, followSymbolicLinks: false }).sort();
}

/** Every entry under `dir` that is neither a regular file nor a directory, found without following links. */
function notRegularFiles(dir: string): Array<{ rel: string; what: string }> {
  const found: Array<{ rel: string; what: string }> = [];
  const pending = [""];
  for (let relDir = pending.pop(); relDir !== undefined; relDir = pending.pop()) {
    for (const entry of fs.readdirSync(path.join(dir, relDir), { withFileTypes: true })) {
      const rel = relDir ? `${relDir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) pending.push(rel);
      else if (entry.isSymbolicLink()) found.push({ rel, what: `a symbolic link (to ${JSON.stringify(fs.readlinkSync(path.join(dir, rel)))})` });
      else if (!entry.isFile()) found.push({ rel, what: "not a regular file (a FIFO, socket or device)" });
    }
  }
  return found;
}
