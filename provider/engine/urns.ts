/**
 * A URN's parts: `urn:pulumi:<stack>::<project>::<parent types$type>::<name>`. The one place a
 * URN is taken apart; a name may itself hold `::`.
 */
export interface ParsedUrn {
  stack: string;
  project: string;
  /** The resource's own type token (the last of the qualified type's `$`-separated parts). */
  type: string;
  name: string;
}

export function parseUrn(urn: string): ParsedUrn | undefined {
  const parts = urn.split("::");
  if (parts.length < 4 || !parts[0].startsWith("urn:pulumi:")) return undefined;
  const [head, project, qualifiedType, ...name] = parts;
  return { stack: head.slice("urn:pulumi:".length), project, type: qualifiedType.split("$").pop() ?? qualifiedType, name: name.join("::") };
}

/** The URN of `name` of `type` in a stack: the one place a URN is put together. */
export const formatUrn = (urn: Omit<ParsedUrn, "type"> & { type: string }): string => `urn:pulumi:${urn.stack}::${urn.project}::${urn.type}::${urn.name}`;

/** A resource's name in its URN, or the text itself when it is not a URN. */
export const urnName = (urn: string): string => parseUrn(urn)?.name ?? urn;

/**
 * The type tokens a StoredFile can have in a stack, one per front door. Everything that recognises
 * a StoredFile asks here.
 */
export const STORED_FILE_TYPES = {
  dynamic: "pulumi-nodejs:dynamic/tuskr:StoredFile",
  plugin: "tuskr:index:StoredFile",
} as const;

export type StoredFileType = (typeof STORED_FILE_TYPES)[keyof typeof STORED_FILE_TYPES];

export const isStoredFileType = (type: unknown): type is StoredFileType => type === STORED_FILE_TYPES.dynamic || type === STORED_FILE_TYPES.plugin;

/** The type tokens of a StoredFolder kept as one resource, one per front door. */
export const STORED_FOLDER_TYPES = {
  dynamic: "pulumi-nodejs:dynamic/tuskr:StoredFolder",
  plugin: "tuskr:index:StoredFolder",
} as const;

/**
 * The URN a one-resource folder's entry uses inside the provider (purchase keys, message origin).
 * The engine knows only the folder, so `resourceUrnOf` maps it back.
 */
export const folderEntryUrn = (folderUrn: string, hash: string): string => `${folderUrn}/sha256:${hash}`;

/** The URN the engine knows: a folder entry's folder, any other URN as it is. */
export const resourceUrnOf = (urn: string): string => urn.replace(/\/sha256:[0-9a-f]{64}$/, "");

/** The name of a folder's content kept as a StoredFile of its own (one StoredFile per content): the folder's name and the content's hash. */
export const contentResourceName = (folder: string, hash: string): string => `${folder}/sha256:${hash.slice(0, 32)}`;

/** The folder's name in such a name, or undefined when it is not one. */
export const folderOfContentResource = (name: string): string | undefined => /^(.*)\/sha256:[0-9a-f]{32}$/.exec(name)?.[1];

export const isStoredFolderType = (type: unknown): boolean => type === STORED_FOLDER_TYPES.dynamic || type === STORED_FOLDER_TYPES.plugin;
