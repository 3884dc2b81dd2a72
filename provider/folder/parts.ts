/**
 * A folder kept as several resources (`parts`): each content belongs to one part, by its sha256,
 * so a path stays in its part as the folder grows, and identical files stay one entry in one part.
 */

/** At most this many resources one folder is kept as. */
export const MAX_PARTS = 64;

/**
 * About this many files to a part: a one-file change then costs about an unchanged preview (at
 * 100,000 files, BENCHMARKS.md). A lone resource of over twice as many is told so.
 */
export const FILES_PER_PART = 5_000;

/** The part (0 to parts − 1) that keeps the content of `hash`, a sha256 in hex. */
export const partOf = (hash: string, parts: number): number => (parts > 1 ? Number.parseInt(hash.slice(0, 8), 16) % parts : 0);

/** The part a folder's inputs declare, and how many there are (a lone resource: part 0 of 1). */
export function partOfInputs(inputs: { parts?: unknown; part?: unknown }): { part: number; parts: number } {
  const parts = typeof inputs.parts === "number" ? inputs.parts : 1;
  return { parts, part: typeof inputs.part === "number" && parts > 1 ? inputs.part : 0 };
}
