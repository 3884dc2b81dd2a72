import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { lookup } from "mime-types";
import { LIMITS } from "../../api";
import { ARCHIVE_SIG, ASSET_SIG, SIG_KEY } from "../engine/markers";
import { type Reason, reasonText, shows } from "./reason";

/**
 * `source`: a Pulumi asset as it arrives on the wire, with the `hash` the engine computed, so a
 * content change is known at preview without reading the file here.
 */

export interface WireAsset {
  path?: string;
  text?: string;
  uri?: string;
  hash?: string;
}

/** The asset's wire form, or undefined when the value is not an asset at all. */
export function wireAsset(value: unknown): WireAsset | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (v[SIG_KEY] !== ASSET_SIG) return undefined;
  const str = (k: string) => (typeof v[k] === "string" ? (v[k] as string) : undefined);
  return { path: str("path"), text: str("text"), uri: str("uri"), hash: str("hash") };
}

/**
 * What a program passes instead of a bad `source`, for `check` to report. Rejecting the input
 * promise instead would hang an inline Automation API preview forever; a check failure fails at
 * once, naming the resource.
 */
const SOURCE_PROBLEM_KEY = "tuskrSourceProblem";
export const sourceProblemMarker = (problem: string): Record<string, string> => ({ [SOURCE_PROBLEM_KEY]: problem });

/**
 * Sources a folder walk has already checked (regular, inside the folder, within the limit). Kept by
 * identity so only the folder core can mark them, and not checked again.
 */
const walkedSources = new WeakSet<object>();
export function walkedSource<T extends object>(source: T): T {
  walkedSources.add(source);
  return source;
}

/** What is wrong with a `source` value, naming the path and the limit; undefined when it can be uploaded. */
export function sourceProblem(value: unknown): Reason | undefined {
  if (typeof value === "object" && value !== null && walkedSources.has(value)) return undefined;
  const found = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[SOURCE_PROBLEM_KEY] : undefined;
  // The program's own check, in its words: they name the path.
  if (typeof found === "string") return [shows(found, "source cannot be uploaded (the program's check refused it)")];
  if (typeof value === "object" && value !== null && (value as Record<string, unknown>)[SIG_KEY] === ARCHIVE_SIG) {
    return ["source must be a single file (pulumi.asset.FileAsset or StringAsset), not an archive: use StoredFolder for a directory"];
  }
  const asset = wireAsset(value);
  if (!asset) return ["source must be a pulumi.asset.FileAsset or pulumi.asset.StringAsset"];
  if (asset.uri !== undefined) return ["source must be a local file or text, not a remote asset", shows(` (${asset.uri})`)];
  const tooLarge = `; an upload is at most ${LIMITS.uploadMaxBytes} bytes`;
  if (asset.text !== undefined) {
    const bytes = Buffer.byteLength(asset.text, "utf8");
    return bytes > LIMITS.uploadMaxBytes ? [shows(`source text is ${bytes} bytes`, "source text is too large"), tooLarge] : undefined;
  }
  if (asset.path === undefined) return ["source has neither a path nor text"];
  const file = shows(` ${asset.path}`);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(asset.path);
  } catch {
    return ["source file", file, ` does not exist (paths are relative to the program's directory, ${process.cwd()})`];
  }
  if (stat.isDirectory()) return ["source", file, " is a directory, not a file: use StoredFolder for a directory"];
  if (!stat.isFile()) return ["source", file, " is not a regular file"];
  if (stat.size > LIMITS.uploadMaxBytes) return ["source file", file, " is ", shows(`${stat.size} bytes`, "too large"), tooLarge];
  try {
    fs.accessSync(asset.path, fs.constants.R_OK);
  } catch {
    return ["source file", file, " cannot be read"];
  }
  return undefined;
}

/**
 * The same checks on the asset a program passes, before the engine sees it: the engine itself
 * refuses a missing file or a directory, but in its own words (and only the first such file).
 */
export async function assetProblem(
  asset: { path?: Promise<string> | string; text?: Promise<string> | string; uri?: Promise<string> | string },
  isArchive: boolean,
): Promise<string | undefined> {
  const wire = async () => {
    const [path, text, uri] = await Promise.all([asset.path, asset.text, asset.uri]);
    return { [SIG_KEY]: ASSET_SIG, path, text, uri };
  };
  const problem = sourceProblem(isArchive ? { [SIG_KEY]: ARCHIVE_SIG } : await wire());
  // The program holds the value anyway: its message shows it.
  return problem && reasonText(problem, false);
}

/**
 * Files up to this size are held in memory for their upload (a folder of thousands of small files
 * would otherwise pay a temporary copy each); larger ones are copied, streamed, to a private file
 * and never held whole.
 */
const IN_MEMORY_MAX_BYTES = 64 * 1024;

/**
 * The file's bytes when it holds at most IN_MEMORY_MAX_BYTES, read through one descriptor into a
 * buffer one byte larger than its size; undefined when it is larger, or grows while read (the
 * buffer fills): such a file is copied instead.
 */
function readIfSmall(file: string): Buffer | undefined {
  // Synchronous on purpose: at most 64 KiB, and the promise API's per-call cost dominated a
  // folder of thousands of small files.
  const fd = fs.openSync(file, "r");
  try {
    const { size } = fs.fstatSync(fd);
    if (size > IN_MEMORY_MAX_BYTES) return undefined;
    const buffer = Buffer.allocUnsafe(size + 1);
    let length = 0;
    for (let n = fs.readSync(fd, buffer, 0, buffer.length, null); n > 0; n = fs.readSync(fd, buffer, length, buffer.length - length, null)) {
      length += n;
      if (length === buffer.length) return undefined;
    }
    return buffer.subarray(0, length);
  } finally {
    fs.closeSync(fd);
  }
}

/** The content as it is sent: where to read it (a copy, a text or the bytes), its SHA-256 (hex) and size, and how to let go of it. */
export interface ContentSnapshot {
  path?: string;
  text?: string;
  bytes?: Buffer;
  hash: string;
  size: number;
  /** `path` is the file itself, not a copy: the upload must check that it reads `hash` (else CONTENT_CHANGED, nothing stored). */
  unverified?: boolean;
  release(): Promise<void>;
}

/**
 * The content fixed for one upload, so the recorded hash and size match the bytes sent even if the
 * file changes during `up` (held, streamed and verified, or copied to a private temp file).
 */
export async function snapshotContent(asset: WireAsset, options: { copy?: boolean } = {}): Promise<ContentSnapshot> {
  const hash = createHash("sha256");
  if (asset.text !== undefined) {
    return { text: asset.text, hash: hash.update(asset.text, "utf8").digest("hex"), size: Buffer.byteLength(asset.text, "utf8"), release: async () => {} };
  }
  // A small file is read whole, once: the bytes hashed are the bytes sent (no copy on disk).
  const small = readIfSmall(asset.path!);
  if (small) return { bytes: small, hash: hash.update(small).digest("hex"), size: small.length, release: async () => {} };
  // A larger one whose content is known (the engine hashed it): sent from where it is, the upload
  // checking as it reads that it is that content (one read, nothing written), unless a copy is asked for.
  if (asset.hash && !options.copy) {
    const stat = await fs.promises.stat(asset.path!);
    if (!stat.isFile()) throw new Error(`source ${asset.path} is not a regular file`);
    const { size } = stat;
    if (size > LIMITS.uploadMaxBytes) throw new Error(`source file ${asset.path} grew past ${LIMITS.uploadMaxBytes} bytes, the most an upload can be`);
    return { path: asset.path, hash: asset.hash, size, unverified: true, release: async () => {} };
  }
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), "tuskr-upload-"));
  const copy = path.join(dir, "content");
  const release = () => fs.promises.rm(dir, { recursive: true, force: true });
  let size = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      if (size > LIMITS.uploadMaxBytes) return done(new Error(`source file ${asset.path} grew past ${LIMITS.uploadMaxBytes} bytes, the most an upload can be`));
      hash.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(fs.createReadStream(asset.path!), counted, fs.createWriteStream(copy, { flags: "wx", mode: 0o600 }));
  } catch (e) {
    await release();
    throw e;
  }
  return { path: copy, hash: hash.digest("hex"), size, release };
}

/** The file name an upload carries (the service takes it as the file's name). */
export function sourceFilename(asset: WireAsset, declaredName: unknown): string {
  if (typeof declaredName === "string" && declaredName !== "") return declaredName;
  return asset.path !== undefined ? path.basename(asset.path) : "file.txt";
}

/** What a file whose type nothing tells is served as. */
const DEFAULT_CONTENT_TYPE = "application/octet-stream";

/**
 * The type an upload carries: the declared one, else the one the file's name tells (its
 * extension, by the `mime-types` database), else the source path's, else a generic binary type.
 */
export function uploadContentType(asset: WireAsset, declaredName: unknown, declaredType: unknown): string {
  if (typeof declaredType === "string") return declaredType;
  const byName = typeof declaredName === "string" ? lookup(declaredName) : false;
  const byPath = asset.path !== undefined ? lookup(asset.path) : false;
  return byName || byPath || DEFAULT_CONTENT_TYPE;
}

/** Whether two content types name the same media type (parameters aside, case-insensitively: a service may drop `; charset=…`). */
export function sameMediaType(a: string, b: string): boolean {
  const media = (t: string) => t.split(";")[0].trim().toLowerCase();
  return media(a) === media(b);
}
