import { gunzipSync, gzipSync } from "node:zlib";
import { isPlainObject, ownValue } from "../../api";
import type { StoredFileState } from "../file/schema";
import { stateReader } from "../file/state";
import { canonicalJson } from "../engine/fingerprint";

/**
 * A folder's entries and manifest are JSON texts that repeat no other state field: the engine
 * carries, logs and checkpoints the whole state every step, so at 10,000 files each entry byte
 * counts 10,000 times. Older formats stay readable.
 */

type Props = Record<string, unknown>;

/** The recorded text's format (2: by hash, each name written; 3: by first path, a name that is that path left out, the retention start as a time). */
const FORMAT = 3;

/** Where an entry's blobId and url are said once more: the folder's outputs at its first path. */
export interface EntryOutputs {
  manifest: Record<string, string>;
  blobIds: Record<string, string>;
  urls: Record<string, string>;
}

/** The soonest of the files' ends (`expiresAt`), or undefined when there is none or any is unknown (unknown is not later). */
export function earliestOf(ends: ReadonlyArray<unknown>): string | undefined {
  if (ends.length === 0 || !ends.every((at) => typeof at === "string" && Number.isFinite(Date.parse(at)))) return undefined;
  return (ends as string[]).reduce((soonest, at) => (Date.parse(at) < Date.parse(soonest) ? at : soonest));
}

/** Each content's first path in sorted order (the path that names its entry), by hash. */
export function firstPaths(manifest: Record<string, string>): Map<string, string> {
  const first = new Map<string, string>();
  for (const rel of Object.keys(manifest).sort()) {
    const hash = manifest[rel];
    if (!first.has(hash)) first.set(hash, rel);
  }
  return first;
}

/** What the rest of the state says of the entry of `hash` (its first path's outputs, its content; from format 3 its name). */
function derivedOf(outputs: EntryOutputs, firstPath: Map<string, string>, format = FORMAT): (hash: string) => Props {
  // Only what the outputs hold (an undefined value would hide a shared or own one when spread).
  return (hash) => {
    const known: Props = { sourceHash: hash };
    const rel = firstPath.get(hash);
    if (rel === undefined) return known;
    if (format >= 3) known.name = rel;
    const blobId = ownValue(outputs.blobIds, rel);
    const url = ownValue(outputs.urls, rel);
    if (blobId !== undefined) known.blobId = blobId;
    if (url !== undefined) known.url = url;
    return known;
  };
}

/** A createdAt that names its time zone (`Z` or an offset): read alike on every machine. */
const ZONED = /(?:Z|[+-]\d{2}:?\d{2})$/i;

/**
 * Format 3 records the retention start as a time so files uploaded in one epoch share it under
 * `shared`. Only from a zoned createdAt: an unzoned one is read in each machine's local zone.
 */
function startAsTime(entry: Props): Props {
  const created = typeof entry.createdAt === "string" && ZONED.test(entry.createdAt) ? Date.parse(entry.createdAt) : Number.NaN;
  const after = entry.retentionStartAfterCreated;
  if (!Number.isInteger(created) || typeof after !== "number" || !Number.isInteger(after)) return entry;
  const { retentionStartAfterCreated: _after, ...rest } = entry;
  return { ...rest, retentionStartMs: created + after };
}
function startAfterCreated(props: Props): Props {
  if (typeof props.retentionStartMs !== "number") return props;
  const { retentionStartMs: start, ...rest } = props;
  const created = typeof rest.createdAt === "string" ? Date.parse(rest.createdAt) : Number.NaN;
  if (Number.isInteger(created)) rest.retentionStartAfterCreated = start - created;
  return rest;
}

/** A recorded value that is a JSON text or the value itself, as an object; undefined when it is neither. */
function recordedObject(recorded: unknown): Record<string, unknown> | undefined {
  if (isParts(recorded)) return partsObject(Object.values(recorded));
  let parsed: unknown = recorded;
  if (typeof recorded === "string") {
    try {
      parsed = JSON.parse(recorded);
    } catch {
      return undefined;
    }
  }
  return isPlainObject(parsed) ? parsed : undefined;
}

/**
 * Parts of a map of paths (`pathParts`): an object with a value that is a JSON object's text (a
 * map's values are hashes, never that); then any other value makes the whole unreadable.
 */
function isParts(recorded: unknown): recorded is Record<string, unknown> {
  if (!isPlainObject(recorded)) return false;
  for (const key in recorded) {
    const part = recorded[key];
    if (typeof part === "string" && part.startsWith("{")) return true;
  }
  return false;
}

/** A map recorded in parts, as one object; any part unreadable, undefined. */
function partsObject(parts: readonly unknown[]): Record<string, unknown> | undefined {
  const whole: Record<string, unknown> = {};
  for (const part of parts) {
    const read = typeof part === "string" ? recordedObject(part) : undefined;
    if (!read) return undefined;
    for (const rel in read) {
      // (Defined, not set: a key "__proto__" set on an object would become its prototype.)
      if (rel === "__proto__") Object.defineProperty(whole, rel, { value: read[rel], enumerable: true, writable: true, configurable: true });
      else whole[rel] = read[rel];
    }
  }
  return whole;
}

/** A path's line in the texts of a map of paths. */
const lineOf = (byPath: Readonly<Record<string, string>>, rel: string) => `${JSON.stringify(rel)}:${JSON.stringify(byPath[rel])}`;
const asText = (lines: readonly string[]) => (lines.length === 0 ? "{}" : `{\n${lines.join(",\n")}\n}`);

/** A map of paths as the outputs record it: one JSON text, one path per line (a refresh that drops a path shows that line). */
export function pathText(byPath: Readonly<Record<string, string>>): string {
  return asText(
    Object.keys(byPath)
      .sort()
      .map((rel) => lineOf(byPath, rel)),
  );
}

/** One in this many paths ends a part of `pathParts`, chosen by its own hash. */
const PART_PATHS = 512;
/** A part ends at these sizes whatever its paths: a bound, rarely reached. */
const PART_MAX_PATHS = 8 * PART_PATHS;
const PART_MAX_CHARS = 1024 * 1024;

/** FNV-1a of a path's UTF-16 code units: a fixed function, since the parts a state records depend on it. */
function pathHash(rel: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < rel.length; i++) hash = Math.imul(hash ^ rel.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** The key of a part that ends at `rel`: never "__…", which Pulumi's display hides at every depth. */
const partKey = (rel: string) => `to ${rel}`;

/**
 * A map of paths as the dynamic resource's inputs record it, at any size: parts, each a JSON text
 * of consecutive paths. The SDK's protobuf writer holds a single long string 25 times over (at
 * 100,000 paths, some 200 MB). A part ends after a path picked by its own hash and is keyed
 * "to <that path>" (the last part by ""): Pulumi shows an object's change key by key, so a path
 * added or removed shows as a change of its part (and a part added or removed when that path ends
 * one), never as every part after it. One format at every size: a change of format shows the whole
 * manifest as removed and added.
 */
export function pathParts(byPath: Readonly<Record<string, string>>): Record<string, string> {
  const paths = Object.keys(byPath).sort();
  const lines = paths.map((rel) => lineOf(byPath, rel));
  const parts: Record<string, string> = {};
  let from = 0;
  let partChars = 0;
  for (let i = 0; i < lines.length; i++) {
    partChars += lines[i].length + 2;
    if (i === lines.length - 1) break;
    if (pathHash(paths[i]) % PART_PATHS === 0 || i + 1 - from >= PART_MAX_PATHS || partChars >= PART_MAX_CHARS) {
      parts[partKey(paths[i])] = asText(lines.slice(from, i + 1));
      from = i + 1;
      partChars = 0;
    }
  }
  parts[""] = asText(lines.slice(from));
  return parts;
}

/**
 * A recorded map of paths: its text read back, else the map itself; anything unreadable is nothing
 * recorded, and a path whose value is not a text is that path unrecorded (not the whole map).
 */
export function pathMap(recorded: unknown): Record<string, string> {
  const parsed = recordedObject(recorded);
  if (!parsed) return {};
  // Copied only when a path must go: no copy of 100,000 paths (no caller changes the map it gets).
  let whole = true;
  for (const rel in parsed) if (typeof parsed[rel] !== "string") whole = false;
  if (whole) return parsed as Record<string, string>;
  return Object.fromEntries(Object.entries(parsed).filter((pair): pair is [string, string] => typeof pair[1] === "string"));
}

/**
 * The manifest a state records: its text, else the map the first one-resource folders recorded;
 * anything unreadable is nothing recorded (each path is then a file to send, answered with its entry).
 */
export function recordedManifest(state: { manifestText?: unknown; manifest?: unknown }): Record<string, string> {
  return pathMap(typeof state.manifestText === "string" ? state.manifestText : state.manifest);
}

const same = (a: unknown, b: unknown) => a === b || (typeof a === "object" && a !== null && JSON.stringify(a) === JSON.stringify(b));

/** An entry as the text records it: without its asset and its derived count, its retention start as a time. */
const recordedEntry = ({ source: _asset, remainingEpochs: _derived, ...entry }: StoredFileState): Props => startAsTime(entry as Props);

/**
 * The entries as the recorded text, without what the manifest or derived counts already say; each
 * entry under its first path, or its hash when no path names it. Written entry by entry: at
 * 100,000 entries, no copy of them all is held.
 */
export function packEntries(entries: ReadonlyMap<string, StoredFileState>, outputs: EntryOutputs): string {
  // A value every entry holds alike (two entries at least: one alone has nothing to share).
  const shared: Props = {};
  if (entries.size > 1) {
    let first = true;
    for (const state of entries.values()) {
      const entry = recordedEntry(state);
      if (first) {
        for (const [field, value] of Object.entries(entry)) if (value !== undefined) shared[field] = value;
        first = false;
      } else for (const field of Object.keys(shared)) if (!same(entry[field], shared[field])) delete shared[field];
    }
  }
  const firstPath = firstPaths(outputs.manifest);
  const derived = derivedOf(outputs, firstPath);
  const byPath: string[] = [];
  const byHash: string[] = [];
  for (const [hash, state] of entries) {
    const entry = recordedEntry(state);
    const known = derived(hash);
    const own: Props = {};
    for (const [field, value] of Object.entries(entry)) {
      if (value === undefined || field in shared) continue;
      if (known[field] !== undefined && same(known[field], value)) continue;
      own[field] = value;
    }
    // What the rest of the state would say and the entry does not hold: written as null, read back as absent.
    for (const field of Object.keys(known)) if (entry[field] === undefined && !(field in shared)) own[field] = null;
    const rel = firstPath.get(hash);
    (rel === undefined ? byHash : byPath).push(`${JSON.stringify(rel ?? hash)}:${canonicalJson(own)}`);
  }
  // The same entries make the same text, whatever order they were stored or read in (folder/resting.ts).
  byPath.sort();
  byHash.sort();
  return `{"format":${FORMAT},"shared":${canonicalJson(shared)},"byPath":{${byPath.join(",")}},"byHash":{${byHash.join(",")}}}`;
}

/** The entries a part handed over when `parts` last changed (folder/moves.ts): each under its hash, holding its own blobId and url. */
export function handedOverEntries(recorded: { handedOver?: unknown }): Map<string, StoredFileState> {
  return typeof recorded.handedOver === "string" ? unpackEntries(recorded.handedOver, NO_OUTPUTS) : new Map();
}

/** As the handed-over entries are packed: no path names them. */
export function packHandedOver(entries: ReadonlyMap<string, StoredFileState>): string {
  return packEntries(entries, NO_OUTPUTS);
}

/**
 * The contents a part handed over, by sha256, one a line (`handedOverContents`): not secret, as
 * the manifest shows them, so that a preview sees which contents it offers when `handedOver` is.
 */
export function handedOverText(hashes: Iterable<string>): string {
  return [...hashes].join("\n");
}

/** The contents a part recorded as handed over (`handedOverContents`), each a sha256; undefined if it recorded none. */
export function handedOverHashes(recorded: { handedOverContents?: unknown }): string[] | undefined {
  if (typeof recorded.handedOverContents !== "string") return undefined;
  return recorded.handedOverContents.split("\n").filter((hash) => /^[0-9a-f]{64}$/.test(hash));
}

const NO_OUTPUTS: EntryOutputs = { manifest: {}, blobIds: {}, urls: {} };

/**
 * How many entries the recorded text holds, without reading them (undefined if not such a text), so
 * the expiry alarm can tell whether `unpackEntries` read them all.
 */
export function recordedEntryCount(recorded: unknown): number | undefined {
  const parsed = recordedObject(recorded);
  if (!parsed) return undefined;
  const keys = (v: unknown) => (isPlainObject(v) ? Object.keys(v).length : 0);
  if (parsed.format === undefined) return Object.keys(parsed).length;
  if (parsed.format === 2) return keys(parsed.entries);
  if (parsed.format === FORMAT) return keys(parsed.byPath) + keys(parsed.byHash);
  return undefined;
}

/** The recorded entries, by content hash, each read leniently (an unreadable text: none recorded, each is found again by its upload). */
export function unpackEntries(recorded: unknown, outputs: EntryOutputs): Map<string, StoredFileState> {
  const parsed = recordedObject(recorded);
  if (!parsed) return new Map();
  const entries = new Map<string, StoredFileState>();
  const parseState = stateReader();
  // An entry without a blobId is skipped, so its content is found again by upload rather than
  // requests going to a made-up blobId.
  const keep = (hash: string, entry: StoredFileState) => {
    if (typeof entry.blobId === "string" && entry.blobId !== "") entries.set(hash, entry);
  };
  // The release before: each entry whole, keyed by hash.
  if (parsed.format === undefined) {
    for (const [hash, entry] of Object.entries(parsed)) keep(hash, parseState(isPlainObject(entry) ? entry : {}));
    return entries;
  }
  const shared = isPlainObject(parsed.shared) ? parsed.shared : {};
  const firstPath = firstPaths(outputs.manifest);
  if (parsed.format === 2 && isPlainObject(parsed.entries)) {
    // Format 2: keyed by hash, every name written.
    const derived = derivedOf(outputs, firstPath, 2);
    for (const [hash, own] of Object.entries(parsed.entries)) keep(hash, parseState({ ...derived(hash), ...shared, ...(isPlainObject(own) ? own : {}) }));
    return entries;
  }
  if (parsed.format !== FORMAT) return entries;
  const derived = derivedOf(outputs, firstPath);
  const read = (hash: string, own: unknown) => {
    const known = derived(hash);
    const props = startAfterCreated(Object.assign({}, known, shared, isPlainObject(own) ? own : {}));
    for (const field of Object.keys(known)) if (props[field] === null) delete props[field];
    keep(hash, parseState(props));
  };
  // An entry under a path the manifest does not name is not read (its content is found again by its upload).
  for (const [rel, own] of Object.entries(isPlainObject(parsed.byPath) ? parsed.byPath : {})) {
    const hash = ownValue(outputs.manifest, rel);
    if (typeof hash === "string" && firstPath.get(hash) === rel) read(hash, own);
  }
  for (const [hash, own] of Object.entries(isPlainObject(parsed.byHash) ? parsed.byHash : {})) if (!entries.has(hash)) read(hash, own);
  return entries;
}

/**
 * A long text among the dynamic resource's outputs is recorded gzipped (base64, after `gzip:`) and
 * in parts: every byte of a response is held about 10 times over while the SDK's protobuf writes
 * it, and once in a part of at most this size (a single 8 MB string: 25 times).
 */
const RECORDED_PART = 64 * 1024;
const GZIPPED = "gzip:";

/** A text as the dynamic resource records it: as it is when short, else gzipped, in parts. */
function recordedText(text: string): string | string[] {
  if (text.length <= RECORDED_PART) return text;
  // Level 1: each step writes the whole text again, and 6 made it some 4 % smaller at twice the time.
  const packed = `${GZIPPED}${gzipSync(text, { level: 1 }).toString("base64")}`;
  const parts: string[] = [];
  for (let at = 0; at < packed.length; at += RECORDED_PART) parts.push(packed.slice(at, at + RECORDED_PART));
  return parts;
}

/** A recorded text read back: its parts joined and unzipped; a value of another shape as it is. */
function readText(recorded: unknown): unknown {
  const text = Array.isArray(recorded) && recorded.every((part) => typeof part === "string") ? recorded.join("") : recorded;
  if (typeof text !== "string" || !text.startsWith(GZIPPED)) return text;
  try {
    return gunzipSync(Buffer.from(text.slice(GZIPPED.length), "base64")).toString("utf8");
  } catch {
    // Unreadable: nothing recorded (each file is then found again, as for any unreadable text).
    return undefined;
  }
}

/** The outputs the dynamic resource records as texts: the manifest, the entries (kept and handed over), and the outputs by path. */
const RECORDED_TEXTS = ["manifestText", "entries", "handedOver", "handedOverContents", "blobIdsText", "urlsText"] as const;

/**
 * The per-path outputs are recorded as texts, not maps, because the SDK decodes and logs a dynamic
 * resource's outputs whole at every step (bench/FINDINGS.md); urls that are `urlBase` plus the
 * blobId are left out. The plugin keeps real maps.
 */
export const OUTPUT_TEXTS = ["blobIdsText", "urlsText", "urlBase"] as const;

/** A state as the dynamic resource records it: the outputs by path as texts. */
export function withOutputTexts(state: Props): Props {
  const { blobIds, urls, ...out } = state;
  const ids = pathMap(blobIds);
  if (isPlainObject(blobIds)) out.blobIdsText = pathText(ids);
  if (isPlainObject(urls)) {
    const all = pathMap(urls);
    // A base only when every path with a blobId has a url (else a url would be made up for it when read).
    const urlOf = (rel: string) => ownValue(all, rel);
    // Loops over the maps, not arrays of their keys or pairs: at 100,000 paths each array is garbage the SDK's copy lands on.
    let first: string | undefined;
    let every = true;
    for (const rel in ids) {
      const url = urlOf(rel);
      if (url === undefined) every = false;
      else if (first === undefined && url.endsWith(ids[rel])) first = rel;
    }
    if (!every) first = undefined;
    const base = first === undefined ? undefined : all[first].slice(0, all[first].length - ids[first].length);
    const apart: Record<string, string> = {};
    for (const rel in all) {
      const url = all[rel];
      if (base === undefined || ownValue(ids, rel) === undefined || url !== base + ids[rel]) apart[rel] = url;
    }
    if (base !== undefined) out.urlBase = base;
    out.urlsText = pathText(apart);
  }
  for (const field of RECORDED_TEXTS) if (typeof out[field] === "string") out[field] = recordedText(out[field] as string);
  return out;
}

/**
 * The recorded state from what the dynamic resource's outputs hold: its texts read back into the
 * maps the core keeps; the maps of the release before (no texts) read as they are.
 */
export function fromOutputTexts(props: Props): Props {
  const read: Props = { ...props };
  for (const field of RECORDED_TEXTS) if (read[field] !== undefined) read[field] = readText(read[field]);
  const { blobIdsText, urlsText, urlBase, ...rest } = read;
  if (typeof blobIdsText === "string") rest.blobIds = pathMap(blobIdsText);
  if (typeof urlsText === "string") {
    const urls: Record<string, string> = {};
    if (typeof urlBase === "string") for (const [rel, blobId] of Object.entries(pathMap(rest.blobIds))) urls[rel] = urlBase + blobId;
    rest.urls = Object.assign(urls, pathMap(urlsText));
  }
  return rest;
}
