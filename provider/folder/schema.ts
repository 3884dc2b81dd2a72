import { z } from "zod";
import type { UNKNOWN } from "../engine/markers";
import { StoredFileInputsSchema } from "../file/schema";
import type { FileValues } from "./walk";
import { pathMap } from "./entries";
import { refusal, shows } from "../file/reason";
import { MAX_PARTS } from "./parts";

/**
 * StoredFolder's inputs as one resource. File values reuse StoredFile's field definitions so limits
 * and docs are defined once; the folder adds only where its files are and which it keeps.
 */

/** The values every file of the folder shares (each overridable per file). */
export const SHARED_FIELDS = ["tag", "metadata", "contentType", "retentionEpochs", "retainUntil", "keepAlive"] as const;
/** What one file may declare for itself: the shared values, and the name of its entry. */
export const FILE_FIELDS = ["name", ...SHARED_FIELDS] as const;

const mask = <K extends string>(keys: readonly K[]) => Object.fromEntries(keys.map((k) => [k, true])) as { [P in K]: true };
const shared = StoredFileInputsSchema.pick(mask(SHARED_FIELDS)).shape;
const FolderFileValuesSchema = StoredFileInputsSchema.pick(mask(FILE_FIELDS))
  .strict()
  .meta({ description: "Values one file declares over the folder's shared ones (by its path relative to the folder)." });

const globs = (field: string) =>
  z
    .array(z.string({ error: `${field} must be a list of glob strings` }).min(1, { error: `${field} must not hold an empty glob` }), {
      error: `${field} must be a list of glob strings`,
    })
    .max(1000, { error: `${field} may hold at most 1000 globs` });

/** A whole number from `min` to `max`; the refusal names the limit, the number found said apart. */
const wholeNumber = (field: string, min: number, max: number) =>
  z
    .number({ error: `${field} must be a whole number from ${min} to ${max}` })
    .check((ctx) => {
      const v = ctx.value;
      if (!Number.isSafeInteger(v) || v < min || v > max)
        ctx.issues.push(refusal(v, [`${field} must be a whole number from ${min} to ${max}`, shows(` (got ${String(v)})`)]));
    })
    .int();

export const StoredFolderInputsSchema = z.object({
  path: z
    .string({ error: "path is required: the folder, relative to the program's directory" })
    .min(1, { error: "path must not be empty" })
    .max(4096, { error: "path must be at most 4096 characters" })
    .meta({ description: "The folder whose files are kept, relative to the program's directory." }),
  include: globs("include").optional().meta({ description: "Globs of the files to keep, relative to `path` (default: every file; dot files only if named)." }),
  exclude: globs("exclude").optional().meta({ description: "Globs of files to leave out (a directory excluded leaves out what is under it)." }),
  ...shared,
  files: z
    .record(z.string(), FolderFileValuesSchema, { error: "files must map relative paths to values ({ name, tag, metadata, … })" })
    .optional()
    .meta({ description: "Per-file values over the shared ones, by path relative to the folder." }),
  parts: wholeNumber("parts", 1, MAX_PARTS).optional().meta({
    description:
      "Keep the folder as this many resources, each holding the contents whose sha256 falls in it, so that a change costs only the parts it touches (default 1). TypeScript declares every part; another language declares one resource per `part`.",
  }),
  part: wholeNumber("part", 0, MAX_PARTS - 1)
    .optional()
    .meta({ description: "Which of the `parts` this resource holds, from 0 to parts − 1 (TypeScript's StoredFolder sets it for each part)." }),
});

export const FOLDER_INPUT_FIELDS = StoredFolderInputsSchema.keyof().options;
type FolderInputField = (typeof FOLDER_INPUT_FIELDS)[number];

/** Each kept path (relative to the folder) → its content's sha256, as `check` computes it. */
export type Manifest = Record<string, string>;

/**
 * A folder's inputs as the core takes them: validated fields (or unknown at preview) plus the
 * manifest `check` adds. Front doors build them once (folder/inputs.ts).
 */
export type FolderInputs = {
  [K in Exclude<FolderInputField, "files">]?: z.input<typeof StoredFolderInputsSchema>[K] | typeof UNKNOWN;
} & {
  // Each path's own values (a refresh may hand back a null: a value removed outside the stack).
  files?: Record<string, FileValues> | typeof UNKNOWN;
  manifest?: Manifest;
};

/** What the folder reports, by path. */
const outputShape = {
  blobIds: z.record(z.string(), z.string()).nullish().meta({ description: "Each file's blobId, by path relative to the folder (identical files share one)." }),
  urls: z.record(z.string(), z.string()).nullish().meta({ description: "Where each file is served, by path relative to the folder." }),
  earliestExpiresAt: z.string().nullish().meta({
    description:
      "When the first of the folder's files stops being stored (the soonest end among them), as of the last read or write: the folder is whole until then. Not secret, so an alarm can read it from a stack export even when the entries are.",
  }),
};
export const FOLDER_OUTPUT_SCHEMAS: Readonly<Record<keyof typeof outputShape, z.ZodType>> = outputShape;

const pathsRead = z
  .unknown()
  .transform((recorded) => (recorded === undefined || recorded === null ? undefined : pathMap(recorded)))
  .optional();

/**
 * A folder's recorded state, read leniently (every field optional, unknown ones kept): the
 * inputs as applied, the outputs by path, and each content's entry as a StoredFile records it.
 */
export const StoredFolderStateSchema = z
  .object({
    ...Object.fromEntries(FOLDER_INPUT_FIELDS.map((f) => [f, z.unknown().optional()])),
    ...outputShape,
    /**
     * The manifest (each path → its content's sha256) as recorded: one text among the outputs
     * (`recordedManifest`, entries.ts). `manifest`, the map `check` adds to the inputs for
     * the preview, is also read here: the first one-resource folders recorded it among the outputs.
     */
    manifestText: z.string().nullish(),
    // Read path by path (a value that is not a text is that path unrecorded), not by a rule per path: 100,000 of them.
    blobIds: pathsRead,
    urls: pathsRead,
    manifest: z.unknown().optional(),
    /** Each content's entry (by sha256), as a StoredFile records its state, as one JSON text (each read leniently on its own). */
    entries: z.union([z.string(), z.record(z.string(), z.record(z.string(), z.unknown()))]).nullish(),
    secretInputs: z.array(z.string()).nullish(),
    /** The count of parts before it last changed (folder/parts.ts, `partsBefore`). */
    partsBefore: z.unknown().optional(),
    /**
     * The entries this part dropped when `parts` last changed, offered again at each diff for a day
     * and forgotten by the update after it (folder/moves.ts), as `entries` records them.
     */
    handedOver: z.string().nullish(),
    /** When it dropped them (an ISO date): the day `handedOver` is kept counts from then. */
    handedOverAt: z.string().nullish(),
    /** Their contents' sha256, one a line: not secret, for a preview to see what it offers (entries.ts). */
    handedOverContents: z.string().nullish(),
  })
  .loose();
export type StoredFolderState = z.infer<typeof StoredFolderStateSchema> & Partial<Record<FolderInputField, unknown>>;

/** A recorded state, read leniently: what a front door receives as a folder's state (nothing readable: none). */
export function folderStateOf(props: unknown): StoredFolderState {
  const parsed = StoredFolderStateSchema.safeParse(props);
  return parsed.success ? parsed.data : {};
}
