/**
 * A folder kept as several resources (`parts`): each content belongs to one part, by its sha256,
 * so a path stays in its part as the folder grows, and identical files stay one entry in one part.
 */

/** At most this many resources one folder is kept as. */
export const MAX_PARTS = 64;

/**
 * About this many files to a part: a one-file change updates at most two parts, and then costs
 * about an unchanged preview from 10,000 files up (BENCHMARKS.md; at 5,000, 1.35 times at 10,000).
 */
export const FILES_PER_PART = 2_000;

/** A folder of more files than this kept as one resource is told the count of parts to declare. */
export const ADVISE_PARTS_FROM = 10_000;

/**
 * The part (0 to parts − 1) that keeps the content of `hash`, a sha256 in hex. A jump over the
 * parts, driven by a random sequence the hash seeds, as in Lamping and Veach's jump consistent
 * hash: going from K to K + 1 parts moves only the contents the new part takes (1 in K + 1), where
 * a remainder would move nearly all of them (each move hands an entry over: folder/moves.ts).
 */
export function partOf(hash: string, parts: number): number {
  if (parts <= 1) return 0;
  // xorshift32, seeded by the hash's first 32 bits (never 0, its one fixed point).
  let x = Number.parseInt(hash.slice(0, 8), 16) >>> 0 || 1;
  let part = 0;
  for (let next = 0; next < parts; ) {
    part = next;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    next = Math.floor((part + 1) / ((x + 1) / 2 ** 32));
  }
  return part;
}

/** What the parts of one folder share, and no other folder: its count of parts, its directory and its globs. */
export function partsKey(inputs: { parts?: unknown; path?: unknown; include?: unknown; exclude?: unknown }): string {
  return JSON.stringify([partOfInputs(inputs).parts, String(inputs.path), inputs.include ?? null, inputs.exclude ?? null]);
}

/** The part a folder's inputs declare, and how many there are (a lone resource: part 0 of 1). */
export function partOfInputs(inputs: { parts?: unknown; part?: unknown }): { part: number; parts: number } {
  const parts = typeof inputs.parts === "number" ? inputs.parts : 1;
  return { parts, part: typeof inputs.part === "number" && parts > 1 ? inputs.part : 0 };
}

/**
 * The count of parts a folder had before its count last changed, recorded by each part: once the
 * first part has one, an `up` steps the parts in order (TypeScript's StoredFolder), since any part
 * may still hold contents a higher one takes, if a change was cut short. Kept while the count
 * stays. None for a part created with its count and never re-counted: its parts step together.
 */
export function partsBefore(recorded: { path?: unknown; parts?: unknown; partsBefore?: unknown }, news: { parts?: unknown }): number | undefined {
  if (recounted(recorded, news)) return partOfInputs(recorded).parts;
  if (recorded.path === undefined) return undefined;
  return typeof recorded.partsBefore === "number" ? recorded.partsBefore : undefined;
}

/** Whether an update from `recorded` to `news` changes a folder's count of parts (a create changes nothing). */
export function recounted(recorded: { path?: unknown; parts?: unknown }, news: { parts?: unknown }): boolean {
  return recorded.path !== undefined && partOfInputs(recorded).parts !== partOfInputs(news).parts;
}
