import { type Notice, warning } from "../engine/notice";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import picomatch from "picomatch";
import { globSync } from "tinyglobby";
import { isPlainObject, ownValue } from "../../api";
import { type Reason, reasonText, shows } from "../file/reason";
import { retainUntilMs } from "../file/schema";
import { FILE_FIELDS, SHARED_FIELDS } from "./schema";

/**
 * A folder's files and the rule that makes them entries (one per content, named by first sorted
 * path), shared by both StoredFolder designs through `folderEntries`.
 */

/** The values a file of a folder may declare (shared ones, or a path's own). */
export type FileValues<V = unknown> = Partial<Record<(typeof FILE_FIELDS)[number], V>>;

/** The values that set an entry's end: the latest any of its paths declares is taken. */
const END_FIELDS: readonly string[] = ["retentionEpochs", "retainUntil"];
/** The values that name and describe an entry: taken from its first path alone. */
const FIRST_PATH_FIELDS = FILE_FIELDS.filter((f) => !END_FIELDS.includes(f));

/** One content of a folder: its SHA-256 (hex), its paths (sorted), the values its entry declares. */
export interface FolderEntry<V> {
  hash: string;
  paths: string[];
  values: FileValues<V>;
  /** Values a later path declares that its entry does not take (said to the user, not fatal). */
  notApplied: Array<{ path: string; fields: string[] }>;
}

/**
 * A folder's entries: each is named by its first path unless that path names it, and takes the
 * latest end any of its paths declares (an unknown Output keeps the first path's value).
 */
export function folderEntries<V>(groups: Map<string, string[]>, shared: FileValues<V>, own: Record<string, FileValues<V> | undefined>): Array<FolderEntry<V>> {
  const entries: Array<FolderEntry<V>> = [];
  const ownOf = (rel: string) => ownValue(own, rel);
  for (const [hash, paths] of groups) {
    const first = paths[0];
    // Most files declare nothing of their own: their entry takes the shared values as they are.
    if (paths.every((rel) => ownOf(rel) === undefined)) {
      entries.push({ hash, paths, values: { name: first as V, ...shared }, notApplied: [] });
      continue;
    }
    const values: FileValues<V> = { name: first as V, ...shared, ...ownOf(first) };
    const declared = paths.map((rel) => ({ ...shared, ...ownOf(rel) }));
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
    const notApplied = paths
      .slice(1)
      .map((rel) => ({ path: rel, fields: FIRST_PATH_FIELDS.filter((f) => ownOf(rel)?.[f] !== undefined) }))
      .filter((n) => n.fields.length > 0);
    entries.push({ hash, paths, values, notApplied });
  }
  return entries;
}

/**
 * The entries a folder's inputs declare: its `manifest` (path → SHA-256, as `check` computed it)
 * grouped by content, with the shared values and `files`' own.
 */
export function manifestEntries(inputs: FileValues & { manifest?: unknown; files?: unknown }): Array<FolderEntry<unknown>> {
  const groups = new Map<string, string[]>();
  for (const [rel, hash] of Object.entries((inputs.manifest ?? {}) as Record<string, string>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const paths = groups.get(hash);
    if (paths) paths.push(rel);
    else groups.set(hash, [rel]);
  }
  const shared: FileValues = {};
  for (const field of SHARED_FIELDS) if (inputs[field] !== undefined && inputs[field] !== null) shared[field] = inputs[field];
  return folderEntries(groups, shared, (isPlainObject(inputs.files) ? inputs.files : {}) as Record<string, FileValues>);
}

/** Of the values the paths of one content declare, the one that ends latest (by `at`); undefined when none is declared or one is not known yet. */
function latest<V>(values: ReadonlyArray<V | undefined>, at: (v: unknown) => number | undefined): V | undefined {
  const given = values.filter((v): v is V => v !== undefined);
  if (given.length === 0 || given.some((v) => at(v) === undefined)) return undefined;
  return given.reduce((a, b) => (at(b)! > at(a)! ? b : a));
}

/**
 * The folder's files grouped by content (SHA-256, hex), each group's paths sorted, groups in order
 * of their first path. With `maxBytes`, a file longer than that fails the walk, naming each such
 * file and the limit (its reading stops there).
 */
export function byContent(dir: string, relatives: string[], maxBytes?: number): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  const tooLong: Reason[] = [];
  for (const rel of [...relatives].sort()) {
    const file = path.join(dir, rel);
    const { hash, bytes } = hashFileSync(file, maxBytes);
    if (hash === undefined) {
      tooLong.push([`${rel}: source file `, shows(`${file} `), `is ${bytes} bytes; an upload is at most ${maxBytes} bytes`]);
      continue;
    }
    const paths = groups.get(hash);
    if (paths) paths.push(rel);
    else groups.set(hash, [rel]);
  }
  if (tooLong.length > 0) {
    const said = tooLong.slice(0, 3).flatMap((reason, i) => (i === 0 ? reason : ["; ", ...reason]));
    throw new FolderInputError("path", tooLong.length > 3 ? [...said, ` (and ${tooLong.length - 3} more)`] : said);
  }
  return groups;
}

/** The chunk files are hashed through: one for the process (a walk is synchronous), not one per file. */
let chunk: Buffer | undefined;

/**
 * A file's SHA-256 (hex) and length, read in chunks (never held whole); past `maxBytes` the
 * reading stops and there is no hash (the length is then the file's size, from its descriptor).
 */
function hashFileSync(file: string, maxBytes = Number.POSITIVE_INFINITY): { hash?: string; bytes: number } {
  const hash = createHash("sha256");
  chunk ??= Buffer.allocUnsafe(1024 * 1024);
  const buffer = chunk;
  const fd = fs.openSync(file, "r");
  try {
    let bytes = 0;
    for (let n = fs.readSync(fd, buffer); n > 0; n = fs.readSync(fd, buffer)) {
      bytes += n;
      if (bytes > maxBytes) return { bytes: Math.max(bytes, fs.fstatSync(fd).size) };
      hash.update(buffer.subarray(0, n));
    }
    return { hash: hash.digest("hex"), bytes };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The warning for a folder that keeps no file: an empty directory, or globs that match nothing
 * there (a typo in one would otherwise stop managing every file without a word).
 */
export function noFileWarning(name: string, dir: string, include: unknown, exclude: unknown): Notice {
  const globs = [include !== undefined && `include ${JSON.stringify(include)}`, exclude !== undefined && `exclude ${JSON.stringify(exclude)}`].filter(Boolean);
  return warning(
    globs.length > 0
      ? `StoredFolder ${name}: no file of ${dir} matches ${globs.join(" and ")}: the folder keeps no file`
      : `StoredFolder ${name}: ${dir} has no file to keep (it is empty, or has only dot files, which an include must name)`,
  );
}

/**
 * A refusal of one of the folder's inputs, with the input it is about and the reason in parts: a
 * check failure names that field, and leaves out the parts that show its value when it is secret.
 */
export class FolderInputError extends Error {
  constructor(
    readonly field: "path" | "include" | "exclude",
    readonly reason: Reason,
  ) {
    super(reasonText(reason, false));
  }
}

/** A file of the folder as a message names it: its path, or where it is in the folder when the path is secret. */
const inFolder = (dir: string, rel: string): Reason[number] => shows(path.join(dir, rel), `${rel} in the folder`);

const LINK = "a symbolic link";

/** What a link points to, said only when the folder's path is not secret (an absolute target may hold it). */
const linkTarget = (dir: string, rel: string): Reason[number] => shows(` (to ${JSON.stringify(fs.readlinkSync(path.join(dir, rel)))})`, "");

/**
 * Globs are relative to the folder and stay in it: `..` or an absolute path would reach files
 * outside. The refusal names the glob but not the folder, whose path may be secret when it is not.
 */
function refuseGlobsLeaving(name: string, include: readonly string[], exclude: readonly string[]): void {
  for (const [field, globs] of [
    ["include", include],
    ["exclude", exclude],
  ] as const) {
    for (const glob of globs) {
      if (path.isAbsolute(glob) || glob.split(/[\\/]/).includes("..")) {
        throw new FolderInputError(field, [
          `StoredFolder ${name}: the ${field} glob `,
          shows(`${JSON.stringify(glob)} `),
          "leaves the folder; globs are relative to the folder's path and stay inside it",
        ]);
      }
    }
  }
}

/**
 * A glob that names a path through a linked directory (`etc/*` where `etc` links to /etc) is
 * walked through it by the glob library: every directory on a matched path is checked too. A path
 * the crawl found as a regular file (`regular`) was reached through real directories: not looked
 * at again (at 100,000 files, 100,000 lstat calls).
 */
function refuseLinksOnPaths(name: string, dir: string, matched: readonly string[], regular: ReadonlySet<string>): void {
  const checked = new Set<string>();
  for (const rel of matched) {
    // A glob can still reach out after the check above (braces: `..{,}/*` is `../*`): what it matched must be inside.
    if (path.isAbsolute(rel) || rel.split("/").includes("..")) {
      // Only an include matches (an exclude only takes away).
      throw new FolderInputError("include", [
        `StoredFolder ${name}: the include globs match `,
        shows(`${JSON.stringify(rel)}, `),
        "outside the folder; globs are relative to the folder's path and stay inside it",
      ]);
    }
    if (regular.has(rel)) continue;
    const parts = rel.split("/");
    for (let i = 1; i <= parts.length; i++) {
      const prefix = parts.slice(0, i).join("/");
      if (checked.has(prefix)) continue;
      checked.add(prefix);
      const stat = fs.lstatSync(path.join(dir, prefix));
      if (stat.isSymbolicLink() || (i === parts.length && !stat.isFile())) {
        throw new FolderInputError("path", [
          `StoredFolder ${name}: `,
          inFolder(dir, prefix),
          ...(stat.isSymbolicLink() ? [` is ${LINK}`, linkTarget(dir, prefix)] : [" is not a regular file"]),
          `, and the globs match ${rel} through it: a folder follows no link; exclude it (exclude: [${JSON.stringify(prefix)}]) or put the files there`,
        ]);
      }
    }
  }
}

/**
 * The folder's regular files matching the globs, as sorted relative POSIX paths. Links and special
 * files are refused rather than followed: following a link could upload any file on the machine
 * running `pulumi up`.
 */
export function folderFiles(name: string, dir: string, include: string[] = ["**/*"], exclude: string[] = []): string[] {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dir);
  } catch {
    throw new FolderInputError("path", [
      `StoredFolder ${name}: `,
      shows(`path ${dir}`, "the folder"),
      ` does not exist (paths are relative to the program's directory, ${process.cwd()})`,
    ]);
  }
  if (!stat.isDirectory()) throw new FolderInputError("path", [`StoredFolder ${name}: `, shows(`path ${dir}`, "the folder's path"), " is not a directory"]);
  refuseGlobsLeaving(name, include, exclude);
  const included = picomatch(include);
  const excludedPath = exclude.length > 0 ? picomatch(exclude) : () => false;
  // Excluding a directory excludes what is under it (as the glob walk does).
  const excluded = (rel: string) =>
    rel.split("/").some((_, i, parts) => excludedPath(parts.slice(0, i + 1).join("/")) || excludedPath(`${parts.slice(0, i + 1).join("/")}/`));
  const { regular, others } = crawled(dir);
  for (const entry of others) {
    if (!included(entry.rel) || excluded(entry.rel)) continue;
    throw new FolderInputError("path", [
      `StoredFolder ${name}: `,
      inFolder(dir, entry.rel),
      ` is ${entry.what}`,
      ...(entry.what === LINK ? [linkTarget(dir, entry.rel)] : []),
      `: a folder uploads regular files only, following no link; exclude it (exclude: [${JSON.stringify(entry.rel)}]) or put the file there`,
    ]);
  }
  const matched = globSync(include, { cwd: dir, ignore: exclude, onlyFiles: true, expandDirectories: false, followSymbolicLinks: false }).sort();
  refuseLinksOnPaths(name, dir, matched, regular);
  // The folder's paths are keys of maps (the manifest, blobIds, urls): a JavaScript object, and so
  // Pulumi's SDK decoding a property map, takes this one key as its prototype and drops it.
  if (matched.includes("__proto__")) {
    throw new FolderInputError("path", [
      `StoredFolder ${name}: `,
      inFolder(dir, "__proto__"),
      `: a top-level file named "__proto__" cannot be a key of the folder's maps (Pulumi drops that key); exclude it (exclude: ["__proto__"]) or rename it`,
    ]);
  }
  return matched;
}

/**
 * Every entry under `dir`, found without following links: the regular files, and the entries that
 * are neither a regular file nor a directory.
 */
function crawled(dir: string): { regular: Set<string>; others: Array<{ rel: string; what: string }> } {
  const regular = new Set<string>();
  const others: Array<{ rel: string; what: string }> = [];
  const pending = [""];
  for (let relDir = pending.pop(); relDir !== undefined; relDir = pending.pop()) {
    for (const entry of fs.readdirSync(path.join(dir, relDir), { withFileTypes: true })) {
      const rel = relDir ? `${relDir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) pending.push(rel);
      else if (entry.isFile()) regular.add(rel);
      else if (entry.isSymbolicLink()) others.push({ rel, what: LINK });
      else others.push({ rel, what: "not a regular file (a FIFO, socket or device)" });
    }
  }
  return { regular, others };
}
