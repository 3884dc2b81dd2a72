import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import picomatch from "picomatch";
import { globSync } from "tinyglobby";
import { StoredFile, type StoredFileArgs } from "./stored-file";
import { retainUntilMs } from "./stored-file-schema";

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
}

/**
 * A directory kept on Tuskr, one entry per content: the service addresses a file by a blobId
 * derived from its bytes, so identical files (copies of a LICENSE, empty `__init__.py` or
 * `.gitkeep` files) are one entry, bought once, and every path of them maps to its blobId. The
 * entry is named by its first path in sorted order (`files[path].name` overrides it); it takes
 * that path's tag and metadata, and the latest end any of its paths declares (`retentionEpochs`,
 * `retainUntil`).
 * Each content is one StoredFile, named after the content (not a path), so a file moved or
 * renamed keeps its entry: one PATCH of the name, nothing uploaded or bought. A file edited is a
 * new content (a new upload; the old entry keeps its period); a file removed is no longer
 * managed (no request); an unchanged folder sends nothing.
 */
export class StoredFolder extends pulumi.ComponentResource {
  /** The StoredFile of each file, by path relative to the folder (identical files share one). */
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
    for (const [hash, paths] of byContent(dir, relatives)) {
      const first = paths[0];
      const values: FileValues = { name: first, ...shared, ...overrides[first] };
      // The latest end any path declares (an unresolved Output is taken as the first path declares it).
      const declared = paths.map((rel) => ({ ...shared, ...overrides[rel] }));
      const epochs = latest(
        declared.map((v) => v.retentionEpochs),
        (e) => (typeof e === "number" ? e : undefined),
      );
      if (epochs !== undefined) values.retentionEpochs = epochs;
      const until = latest(
        declared.map((v) => v.retainUntil),
        retainUntilMs,
      );
      if (until !== undefined) values.retainUntil = until;
      for (const rel of paths.slice(1)) {
        const own = overrides[rel];
        const notApplied = (["name", "tag", "metadata", "contentType", "keepAlive"] as const).filter((f) => own?.[f] !== undefined);
        if (notApplied.length > 0) {
          pulumi.log.warn(
            `StoredFolder ${name}: ${rel} has the same content as ${first}: one entry, named and tagged as ${first} declares; its files[${JSON.stringify(rel)}] values (${notApplied.join(", ")}) are not applied`,
            this,
          );
        }
      }
      const file = new StoredFile(
        `${name}/sha256:${hash.slice(0, 32)}`,
        { ...values, source: new pulumi.asset.FileAsset(path.join(dir, first)) },
        // Stacks of earlier releases named each file's resource by its path: taken over in place.
        { parent: this, aliases: paths.map((rel) => ({ name: `${name}/${rel}` })) },
      );
      for (const rel of paths) files[rel] = file;
    }
    this.files = files;
    this.blobIds = pulumi.output(Object.fromEntries(Object.entries(files).map(([rel, f]) => [rel, f.blobId])));
    this.registerOutputs({ blobIds: this.blobIds });
  }
}

/**
 * Of the values the paths of one content declare, the one that ends latest (by `at`); undefined
 * when none is declared or one is not known yet (an Output: the first path's value then stands).
 */
function latest<T>(values: ReadonlyArray<pulumi.Input<T> | undefined>, at: (v: unknown) => number | undefined): T | undefined {
  const given = values.filter((v) => v !== undefined);
  if (given.length === 0 || given.some((v) => at(v) === undefined)) return undefined;
  return given.reduce((a, b) => (at(b)! > at(a)! ? b : a)) as T;
}

/** The folder's files grouped by content (SHA-256, hex), each group's paths sorted, groups in order of their first path. */
function byContent(dir: string, relatives: string[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const rel of [...relatives].sort()) {
    const hash = hashFileSync(path.join(dir, rel));
    const paths = groups.get(hash);
    if (paths) paths.push(rel);
    else groups.set(hash, [rel]);
  }
  return groups;
}

/** A file's SHA-256 (hex), read in chunks (never held whole). */
function hashFileSync(file: string): string {
  const hash = createHash("sha256");
  const buffer = Buffer.allocUnsafe(1024 * 1024);
  const fd = fs.openSync(file, "r");
  try {
    for (let n = fs.readSync(fd, buffer); n > 0; n = fs.readSync(fd, buffer)) hash.update(buffer.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
  return hash.digest("hex");
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
