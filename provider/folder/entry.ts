import * as path from "node:path";
import { jsonEqual } from "../../api";
import { ASSET_SIG, SIG_KEY } from "../engine/markers";
import { folderEntryUrn } from "../engine/urns";
import type { DeclaredInputs } from "../file/schema";
import { walkedSource } from "../file/source";
import { ownValues } from "./inputs";
import { FILE_FIELDS, type FolderInputs, type StoredFolderState } from "./schema";
import { type FileValues, type FolderEntry, manifestEntries } from "./walk";

/** What one entry of a folder is as a StoredFile: its inputs, its secret input names, its URN. */

const isFileField = (field: string): field is keyof FileValues => (FILE_FIELDS as readonly string[]).includes(field);

/** The entries `inputs` declare, by their content's hash. */
export function entriesByHash(inputs: FolderInputs | StoredFolderState): Map<string, FolderEntry<unknown>> {
  return new Map(manifestEntries(inputs).map((e) => [e.hash, e]));
}

/** An entry's inputs, as a StoredFile declares them: its values, and its first path's content as the source (`walked`: as the walk just found it). */
export function entryInputs(inputs: FolderInputs, entry: FolderEntry<unknown>, walked = false): DeclaredInputs {
  const declared = FILE_FIELDS.filter((field) => entry.values[field] !== undefined && entry.values[field] !== null).map((field) => [
    field,
    entry.values[field],
  ]);
  const source = { [SIG_KEY]: ASSET_SIG, path: path.join(String(inputs.path), entry.paths[0]), hash: entry.hash };
  return { ...Object.fromEntries(declared), source: walked ? walkedSource(source) : source } as DeclaredInputs;
}

/**
 * An entry's secret input names. A non-secret shared value stays shown, since masking e.g.
 * `retentionEpochs: 2` would garble every number in a message.
 */
export function entrySecrets(secretInputs: readonly string[], inputs: FolderInputs | StoredFolderState, entry: FolderEntry<unknown>): string[] {
  // A shared secret value is the entry's unless a path's own (plain) value took its place (a later end, an override).
  const shared: FileValues = inputs;
  const names = new Set(secretInputs.filter((f) => isFileField(f) && (secretInputs.includes("files") || jsonEqual(entry.values[f], shared[f]))));
  if (secretInputs.includes("files")) {
    for (const rel of entry.paths) for (const f of Object.keys(ownValues(inputs, rel) ?? {})) if (isFileField(f)) names.add(f);
  }
  // An entry's source is a file under the folder's path: its messages must not show a secret one.
  if (secretInputs.includes("path")) names.add("source");
  return [...names];
}

export function entryUrn(urn: string | undefined, entry: FolderEntry<unknown>): string | undefined {
  return urn ? folderEntryUrn(urn, entry.hash) : undefined;
}
