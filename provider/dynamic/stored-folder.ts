import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { earliestOf, fromOutputTexts, OUTPUT_TEXTS, pathMap } from "../folder/entries";
import { byContent, folderEntries, folderFiles, noFileWarning } from "../folder/walk";
import { STORED_FOLDER_TYPES, contentResourceName } from "../engine/urns";
import type { StoredFolderArgs } from "../folder/args";
import { StoredFolderInputsSchema } from "../folder/schema";
import { StoredFile, identityOf, protoKeysNamed, refusePlaintextApiKey, secretFieldsOf } from "./stored-file";
import { validateInputs } from "../file/validate";
import storedFolderProviderStub from "../stored-folder-stub";
import { inert } from "../engine/inert";
import { inertError, noticeText } from "../engine/notice";

export type { StoredFolderArgs } from "../folder/args";

/** What one file of a folder declares (shared values and its own). */
type FileValues = NonNullable<StoredFolderArgs["files"]>[string];

/**
 * The folder's one resource (`oneResource: true`): its outputs by path, recorded as texts
 * (folder/entries.ts, `withOutputTexts`); the maps are what the releases before recorded.
 */
class StoredFolderResource extends pulumi.dynamic.Resource {
  /** A text, or a long one gzipped in parts (folder/entries.ts). */
  declare readonly blobIdsText: pulumi.Output<string | string[] | undefined>;
  declare readonly urlsText: pulumi.Output<string | string[] | undefined>;
  declare readonly urlBase: pulumi.Output<string | undefined>;
  declare readonly blobIds: pulumi.Output<Record<string, string> | undefined>;
  declare readonly urls: pulumi.Output<Record<string, string> | undefined>;
  declare readonly earliestExpiresAt: pulumi.Output<string | undefined>;
  /** The count of parts before it last changed (folder/parts.ts): which parts may take contents from which. */
  declare readonly partsBefore: pulumi.Output<number | undefined>;

  /** The outputs by path: the texts read back, else the maps a release before recorded (until the next change rewrites them). */
  byPath(): pulumi.Output<{ blobIds: Record<string, string>; urls: Record<string, string> }> {
    const { blobIdsText, urlsText, urlBase, blobIds, urls } = this;
    const recorded: Record<string, pulumi.Output<unknown>> = { blobIdsText, urlsText, urlBase, blobIds, urls };
    return pulumi.all(recorded).apply((values) => {
      const read = fromOutputTexts(values);
      return { blobIds: pathMap(read.blobIds), urls: pathMap(read.urls) };
    });
  }
}

/**
 * A directory kept on Tuskr, one StoredFile per content: identical files share an entry, and naming
 * it after the content (not a path) makes a move or rename one PATCH, not a new upload.
 */
export class StoredFolder extends pulumi.ComponentResource {
  /** The StoredFile of each file, by path relative to the folder (identical files share one); empty with `oneResource`. */
  readonly files: Readonly<Record<string, StoredFile>>;
  /** Each file's blobId, by relative path. */
  readonly blobIds: pulumi.Output<Record<string, string>>;

  /** Each file's url, by relative path (with `oneResource`; otherwise each StoredFile's `url`). */
  readonly urls: pulumi.Output<Record<string, string>>;

  /** When the first of the folder's files stops being stored (the soonest `expiresAt`), as of the last read or write; undefined while any is unknown. */
  readonly earliestExpiresAt: pulumi.Output<string | undefined>;

  constructor(name: string, args: StoredFolderArgs, opts?: pulumi.ComponentResourceOptions) {
    super("tuskr:index:StoredFolder", name, {}, opts);
    const named = protoKeysNamed(args);
    if (named.parts !== undefined && named.oneResource === false) {
      throw new Error(`StoredFolder ${name}: parts keeps the folder as that many resources, which oneResource: false refuses; declare one of them`);
    }
    const oneResource = named.oneResource === true || named.parts !== undefined;
    const outputs = oneResource ? this.oneResource(name, named) : this.perContent(name, named);
    this.files = outputs.files;
    this.blobIds = outputs.blobIds;
    this.urls = outputs.urls;
    this.earliestExpiresAt = outputs.earliestExpiresAt;
    // With one resource the outputs are its own: recorded on the component too, its per-path maps
    // would be two more maps of every path for the engine to carry, log and write at each step.
    this.registerOutputs(oneResource ? {} : { blobIds: this.blobIds });
  }

  /**
   * The folder as one resource, or as `parts` of them (the first named as the folder, so that a
   * lone resource becomes its first part): walked and hashed by the provider's check (bad input
   * reported there, with the file it is about).
   */
  private oneResource(name: string, named: StoredFolderArgs): FolderOutputs {
    refusePlaintextApiKey();
    const { oneResource: _, ...declared } = named;
    // A count the check refuses is sent as it is, to one resource, for the check to say so.
    const parsed = StoredFolderInputsSchema.shape.parts.safeParse(declared.parts);
    const count = parsed.success && parsed.data !== undefined ? parsed.data : 1;
    const part = (i: number, dependsOn?: Promise<StoredFolderResource[]>) =>
      this.part(i === 0 ? name : `${name}-part${i}`, count > 1 ? { ...declared, part: i } : declared, dependsOn);
    const first = part(0);
    const parts = [first];
    if (count === 1 || pulumi.runtime.isDryRun()) {
      for (let i = 1; i < count; i++) parts.push(part(i));
      return merged(parts);
    }
    // In an `up`, the others are sent once the first is stepped. If the folder's count ever changed
    // (the first part's `partsBefore`), each part also steps after the one before, so that one
    // taking contents records their entries instead of uploading them (folder/moves.ts): contents
    // move only to higher parts, and any part may still hold some, if an earlier change was cut
    // short. Otherwise nothing moves: the others step together. A preview moves nothing. They are
    // declared now, while the first part's check walks the folder: each costs the program some 8 ms.
    const stepped = steppedValue(first.partsBefore);
    // A first part that failed (or, with --continue-on-error, was left unknown) holds them back as
    // it would hold back a part depending on it.
    const after = (before: StoredFolderResource) =>
      stepped.then(
        (value) => (value === undefined ? [first] : typeof value.partsBefore === "number" ? [before] : []),
        () => [first],
      );
    for (let i = 1; i < count; i++) parts.push(part(i, after(parts[i - 1])));
    return merged(parts);
  }

  /** One resource of the folder (all of it, or one of its parts). */
  private part(
    name: string,
    declared: Omit<StoredFolderArgs, "oneResource"> & { part?: number },
    dependsOn?: Promise<StoredFolderResource[]>,
  ): StoredFolderResource {
    return new StoredFolderResource(
      storedFolderProviderStub,
      name,
      {
        ...declared,
        manifest: undefined,
        ...Object.fromEntries(OUTPUT_TEXTS.map((name) => [name, undefined])),
        blobIds: undefined,
        urls: undefined,
        earliestExpiresAt: undefined,
        partsBefore: undefined,
        __urn: identityOf(name, this, STORED_FOLDER_TYPES.dynamic),
        __secretInputs: secretFieldsOf(declared),
      },
      // Each entry's state holds its values (tag, metadata, …): kept encrypted, as a secret input's are.
      { parent: this, additionalSecretOutputs: ["entries", "handedOver", "resting"], ...(dependsOn ? { dependsOn } : {}) },
      "tuskr",
      "StoredFolder",
    );
  }

  /** One StoredFile per content, walked here; each problem said once with the paths it is about. */
  private perContent(name: string, named: StoredFolderArgs): FolderOutputs {
    const { path: dir, include, exclude, files: overrides = {}, oneResource: _, ...shared } = named;
    // What the program says quotes paths from the disk: inert, as the provider's messages are.
    let relatives: string[];
    let contents: ReturnType<typeof byContent>;
    try {
      relatives = folderFiles(name, dir, include, exclude);
      contents = byContent(dir, relatives);
    } catch (e) {
      throw inertError(e);
    }
    if (relatives.length === 0) pulumi.log.warn(noticeText(noFileWarning(name, dir, include, exclude)), this);
    if (relatives.length > ONE_RESOURCE_ADVISED) pulumi.log.warn(inert(oneResourceAdvice(name, relatives.length, contents.size)), this);
    // An override for a file that is not (or no longer) there is likely a typo or a leftover: said, not fatal.
    for (const rel of Object.keys(overrides).filter((r) => !relatives.includes(r))) {
      pulumi.log.warn(inert(`StoredFolder ${name}: files[${JSON.stringify(rel)}] names no file of ${dir} that the globs match; it is ignored`), this);
    }
    const files: Record<string, StoredFile> = {};
    // Each problem once, with the paths it is about (a shared value is every file's).
    const problems = new Map<string, string[]>();
    for (const entry of folderEntries<unknown>(contents, shared, overrides)) {
      const first = entry.paths[0];
      for (const { path: rel, fields } of entry.notApplied) {
        pulumi.log.warn(
          inert(
            `StoredFolder ${name}: ${rel} has the same content as ${first}: one entry, named and tagged as ${first} declares; its files[${JSON.stringify(rel)}] values (${fields.join(", ")}) are not applied`,
          ),
          this,
        );
      }
      for (const reason of entryProblems(entry.values as Record<string, unknown>)) problems.set(reason, [...(problems.get(reason) ?? []), ...entry.paths]);
      const file = new StoredFile(
        contentResourceName(name, entry.hash),
        { ...(entry.values as FileValues), source: new pulumi.asset.FileAsset(path.join(dir, first)) },
        // Stacks of earlier releases named each file's resource by its path: taken over in place.
        { parent: this, aliases: entry.paths.map((rel) => ({ name: `${name}/${rel}` })) },
      );
      for (const rel of entry.paths) files[rel] = file;
    }
    for (const [reason, paths] of problems) {
      const quoted = paths.slice(0, 3).map((rel) => JSON.stringify(rel));
      pulumi.log.error(inert(`StoredFolder ${name}: ${quoted.join(", ")}${paths.length > 3 ? ` and ${paths.length - 3} more file(s)` : ""}: ${reason}`), this);
    }
    return {
      files,
      blobIds: pulumi.output(Object.fromEntries(Object.entries(files).map(([rel, f]) => [rel, f.blobId]))),
      urls: pulumi.output(Object.fromEntries(Object.entries(files).map(([rel, f]) => [rel, f.url]))) as pulumi.Output<Record<string, string>>,
      earliestExpiresAt: pulumi.all([...new Set(Object.values(files))].map((f) => f.expiresAt)).apply(earliestOf),
    };
  }
}

/**
 * Past this many files, a folder kept as one resource per content is told that `oneResource: true`
 * keeps it as one: the engine's cost is per resource (at 1,000 files, 20 times the one resource's
 * first `up` and 50 times its destroy, BENCHMARKS.md).
 */
const ONE_RESOURCE_ADVISED = 300;

/** The warning a large folder of one resource per content gets at every preview. */
function oneResourceAdvice(name: string, files: number, contents: number): string {
  return (
    `StoredFolder ${name}: ${files} files are ${contents} resources; \`oneResource: true\` keeps them as one, ` +
    "about 20× faster at 1,000 files. Switching uploads each content once more (docs/stored-folder.md)"
  );
}

/** What a StoredFolder gives its program, however it is declared. */
interface FolderOutputs {
  files: Readonly<Record<string, StoredFile>>;
  blobIds: pulumi.Output<Record<string, string>>;
  urls: pulumi.Output<Record<string, string>>;
  earliestExpiresAt: pulumi.Output<string | undefined>;
}

/** The values of a folder's outputs (its maps by path, its soonest end). */
type FolderValues = { blobIds: Record<string, string>; urls: Record<string, string>; earliestExpiresAt: string | undefined };

/** A folder's outputs from its resources: their maps by path joined, and the soonest end among those keeping a file. */
function mergedParts(parts: StoredFolderResource[]): pulumi.Output<FolderValues> {
  return pulumi.all(parts.map((p) => pulumi.all([p.byPath(), p.earliestExpiresAt]))).apply((each) => ({
    blobIds: Object.assign({}, ...each.map(([m]) => m.blobIds)) as Record<string, string>,
    urls: Object.assign({}, ...each.map(([m]) => m.urls)) as Record<string, string>,
    // A part that keeps no file has no end: the folder's is the soonest of the others'.
    earliestExpiresAt: earliestOf(each.filter(([m]) => Object.keys(m.blobIds).length > 0).map(([, end]) => end)),
  }));
}

/**
 * The first part's `partsBefore` once it is stepped; undefined if its step left it unknown (a
 * failure under --continue-on-error), and rejected if its step failed. (The SDK's own `isKnown` and
 * `promise()`, which it awaits for an output given as `dependsOn`: `apply` never runs on either.)
 */
async function steppedValue(output: pulumi.Output<number | undefined>): Promise<{ partsBefore: number | undefined } | undefined> {
  const inside = output as unknown as { isKnown: Promise<boolean>; promise(): Promise<number | undefined> };
  return (await inside.isKnown) ? { partsBefore: await inside.promise() } : undefined;
}

/** The same, as the outputs a StoredFolder gives. */
function merged(parts: StoredFolderResource[]): FolderOutputs {
  if (parts.length === 1) {
    const byPath = parts[0].byPath();
    return { files: {}, blobIds: byPath.blobIds, urls: byPath.urls, earliestExpiresAt: parts[0].earliestExpiresAt };
  }
  const all = mergedParts(parts);
  return { files: {}, blobIds: all.blobIds, urls: all.urls, earliestExpiresAt: all.earliestExpiresAt };
}

/** A value known now, as JSON holds it: no output, promise or other object inside (a plain object's prototype is Object's). */
function known(v: unknown): boolean {
  if (v === null || ["string", "number", "boolean"].includes(typeof v)) return true;
  if (Array.isArray(v)) return v.every(known);
  if (typeof v !== "object") return false;
  const proto = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) && Object.values(v as object).every(known);
}

/**
 * What a content's StoredFile will refuse at check, found here too so the error names the folder's
 * paths rather than a hash. Unknown values are left to that check.
 */
function entryProblems(values: Record<string, unknown>): string[] {
  const plain = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined && known(v)));
  // Not how far retentionEpochs may rise at once: that depends on what the state holds, which the StoredFile's check knows.
  return validateInputs(plain)
    .failures.filter((f) => f.property !== "blobId" && f.property !== "source")
    .map((f) => f.reason);
}
