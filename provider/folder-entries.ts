import { isPlainObject } from "../api";
import type { StoredFileState } from "./stored-file-schema";
import { parseState } from "./stored-file-state";

/**
 * How a folder's entries are recorded: one JSON text in its state, written small, because the
 * engine carries, logs and (at every checkpoint) writes the whole state, so at 10,000 files
 * every byte of an entry costs 10,000 times on every step. An entry records only what no other
 * part of the state says:
 *   - its content's hash is its key (`sourceHash`), and its blobId and url are the folder's
 *     `blobIds` and `urls` outputs at its first path;
 *   - a value every entry holds alike (tag, retentionEpochs, a common size or type, …) is
 *     written once, under `shared`.
 * Entries recorded by the release before this format (each entry whole, keyed by hash) are read
 * as they are.
 *
 * The manifest (each path → its content's sha256) is recorded among the outputs the same way, as
 * one text (`manifestText`), not as a map: the inputs hold the map the preview compares, and a
 * second map of 10,000 keys among the outputs cost an unchanged preview of 10,000 files more
 * than a third of its time in the engine (bench/FINDINGS.md). The first one-resource folders'
 * map (`manifest` among the outputs) is still read.
 */

type Props = Record<string, unknown>;

/** The recorded text's format. */
const FORMAT = 2;

/** Where an entry's blobId and url are said once more: the folder's outputs at its first path. */
export interface EntryOutputs {
  manifest: Record<string, string>;
  blobIds: Record<string, string>;
  urls: Record<string, string>;
}

/** What the rest of the state says of the entry of `hash` (its first path's outputs, its content). */
function derivedOf(outputs: EntryOutputs): (hash: string) => Props {
  const firstPath = new Map<string, string>();
  for (const rel of Object.keys(outputs.manifest).sort()) {
    const hash = outputs.manifest[rel];
    if (!firstPath.has(hash)) firstPath.set(hash, rel);
  }
  return (hash) => {
    const rel = firstPath.get(hash);
    return { sourceHash: hash, blobId: rel === undefined ? undefined : outputs.blobIds[rel], url: rel === undefined ? undefined : outputs.urls[rel] };
  };
}

/** A map of paths as the outputs record it: one JSON text, one path per line (a refresh that drops a path shows that line). */
export function pathText(byPath: Readonly<Record<string, string>>): string {
  const lines = Object.keys(byPath)
    .sort()
    .map((rel) => `${JSON.stringify(rel)}:${JSON.stringify(byPath[rel])}`);
  return lines.length === 0 ? "{}" : `{\n${lines.join(",\n")}\n}`;
}

const isPathMap = (value: unknown): value is Record<string, string> => isPlainObject(value) && Object.values(value).every((v) => typeof v === "string");

/** A recorded map of paths: its text read back, else the map itself; anything unreadable is nothing recorded. */
export function pathMap(recorded: unknown): Record<string, string> {
  let parsed: unknown = recorded;
  if (typeof recorded === "string") {
    try {
      parsed = JSON.parse(recorded);
    } catch {
      return {};
    }
  }
  return isPathMap(parsed) ? parsed : {};
}

/**
 * The manifest a state records: its text, else the map the first one-resource folders recorded;
 * anything unreadable is nothing recorded (each path is then a file to send, answered with its entry).
 */
export function recordedManifest(state: { manifestText?: unknown; manifest?: unknown }): Record<string, string> {
  return pathMap(typeof state.manifestText === "string" ? state.manifestText : state.manifest);
}

const same = (a: unknown, b: unknown) => a === b || (typeof a === "object" && a !== null && JSON.stringify(a) === JSON.stringify(b));

/** The entries as the recorded text (without the asset, which the manifest says, and without derived counts). */
export function packEntries(entries: ReadonlyMap<string, StoredFileState>, outputs: EntryOutputs): string {
  const whole = [...entries].map(([hash, { source: _asset, remainingEpochs: _derived, ...entry }]) => [hash, entry as Props] as const);
  // A value every entry holds alike (two entries at least: one alone has nothing to share).
  const shared: Props = {};
  if (whole.length > 1) {
    for (const [field, value] of Object.entries(whole[0][1])) {
      if (value !== undefined && whole.every(([, e]) => same(e[field], value))) shared[field] = value;
    }
  }
  const derived = derivedOf(outputs);
  const packed: Record<string, Props> = {};
  for (const [hash, entry] of whole) {
    const known = derived(hash);
    const own: Props = {};
    for (const [field, value] of Object.entries(entry)) {
      if (value === undefined || field in shared) continue;
      if (known[field] !== undefined && same(known[field], value)) continue;
      own[field] = value;
    }
    packed[hash] = own;
  }
  return JSON.stringify({ format: FORMAT, shared, entries: packed });
}

/** The recorded entries, by content hash, each read leniently (an unreadable text: none recorded, each is found again by its upload). */
export function unpackEntries(recorded: unknown, outputs: EntryOutputs): Map<string, StoredFileState> {
  let parsed: unknown = recorded;
  if (typeof recorded === "string") {
    try {
      parsed = JSON.parse(recorded);
    } catch {
      parsed = undefined;
    }
  }
  if (!isPlainObject(parsed)) return new Map();
  // The release before: each entry whole, keyed by hash.
  if (parsed.format === undefined) return new Map(Object.entries(parsed).map(([hash, entry]) => [hash, parseState(isPlainObject(entry) ? entry : {})]));
  if (parsed.format !== FORMAT || !isPlainObject(parsed.entries)) return new Map();
  const shared = isPlainObject(parsed.shared) ? parsed.shared : {};
  const derived = derivedOf(outputs);
  return new Map(
    Object.entries(parsed.entries).map(([hash, own]) => {
      const known = Object.fromEntries(Object.entries(derived(hash)).filter(([, v]) => v !== undefined));
      return [hash, parseState({ ...known, ...shared, ...(isPlainObject(own) ? own : {}) })];
    }),
  );
}

/**
 * The dynamic resource's outputs by path, `blobIds` and `urls`, are recorded as two texts
 * (`blobIdsText`, `urlsText`: JSON objects, one path per line) rather than two maps: the engine
 * hands a dynamic resource's outputs back to the program whole at every step, and the Node.js
 * SDK also prints that answer into a debug message, so at 10,000 files the two maps cost an
 * unchanged preview about a second (bench/FINDINGS.md). The TypeScript `StoredFolder` parses
 * them into its `blobIds` and `urls` outputs. The plugin's resource keeps the maps its schema
 * declares, for every language.
 */
export const OUTPUT_TEXTS = { blobIds: "blobIdsText", urls: "urlsText" } as const;

/** A state as the dynamic resource records it: the outputs by path as texts. */
export function withOutputTexts(state: Props): Props {
  const { blobIds, urls, ...out } = state;
  if (isPlainObject(blobIds)) out[OUTPUT_TEXTS.blobIds] = pathText(blobIds as Record<string, string>);
  if (isPlainObject(urls)) out[OUTPUT_TEXTS.urls] = pathText(urls as Record<string, string>);
  return out;
}

/**
 * The recorded state from what the dynamic resource's outputs hold: its texts read back into the
 * maps the core keeps; the maps of the release before (no texts) read as they are.
 */
export function fromOutputTexts(props: Props): Props {
  const { [OUTPUT_TEXTS.blobIds]: blobIdsText, [OUTPUT_TEXTS.urls]: urlsText, ...rest } = props;
  if (typeof blobIdsText === "string") rest.blobIds = pathMap(blobIdsText);
  if (typeof urlsText === "string") rest.urls = pathMap(urlsText);
  return rest;
}
