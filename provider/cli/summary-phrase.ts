/**
 * The words a row or a notice says, with the user's values kept apart from them: the model
 * builds phrases, and only the render step turns a value into Markdown (a code span).
 */

/** A value the user or the service supplied (a name, tag, key, path, blobId): never Markdown. */
export interface Value {
  readonly value: unknown;
}
export type Part = string | Value;
export type Phrase = readonly Part[];

export const value = (v: unknown): Value => ({ value: v });

/** Words with values: `` say`tag ${value(old)} → ${value(tag)}` ``; a string or number interpolated is the summary's own words. */
export function say(strings: TemplateStringsArray, ...parts: Array<Part | Phrase | number>): Phrase {
  const out: Part[] = [strings[0]];
  parts.forEach((part, i) => {
    if (Array.isArray(part)) out.push(...part);
    else out.push(typeof part === "number" ? String(part) : (part as Part));
    out.push(strings[i + 1]);
  });
  return out;
}

/** Phrases one after another, `separator` between them. */
export function joined(phrases: readonly Phrase[], separator: string): Phrase {
  return phrases.flatMap((p, i) => (i === 0 ? [...p] : [separator, ...p]));
}

/** Values one after another, `separator` between them. */
export const values = (vs: readonly unknown[], separator = ", "): Phrase =>
  joined(
    vs.map((v) => [value(v)]),
    separator,
  );
