import { expect } from "vitest";

const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;
const STEP = /^\.([A-Za-z_][A-Za-z0-9_]*)|^\[("(?:[^"\\]|\\.)*")\]/;

/**
 * An engine property path (`metadata.team`, `files["a.html"].name`) read back into its top-level
 * name and the keys below it. Only tests read a key back: the provider writes each one from its
 * change's field, and this checks that it did.
 */
export function readPropertyPath(key: string): { field: string; below: string[] } | undefined {
  const head = NAME.exec(key);
  if (!head) return undefined;
  const below: string[] = [];
  let rest = key.slice(head[0].length);
  while (rest) {
    const step = STEP.exec(rest);
    if (!step) return undefined;
    below.push(step[1] ?? JSON.parse(step[2]));
    rest = rest.slice(step[0].length);
  }
  return { field: head[0], below };
}

/** Each key of a detailed diff is a property path under the field its change names. */
export function expectKeysAgree(detailedDiff: Record<string, { field: string }>): void {
  for (const [key, change] of Object.entries(detailedDiff)) expect(readPropertyPath(key)?.field, key).toBe(change.field);
}
