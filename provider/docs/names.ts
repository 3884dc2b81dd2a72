/**
 * A property's name in each language's SDK, made from the package schema's name as Pulumi's code
 * generators make it: TypeScript, YAML and Java keep it (camelCase); Python makes it snake_case;
 * Go capitalises it. The reference tables of docs/ show them (`npm run docs`), and the SDK test
 * (test/e2e/plugin/sdks.e2e.test.ts) checks each against what `pulumi package gen-sdk` writes.
 */

/** Python's keywords: a name that is one gets a trailing `_`, as the generator gives it. */
const PYTHON_KEYWORDS = new Set(
  (
    "False None True and as assert async await break class continue def del elif else except finally for from global if import in is " +
    "lambda nonlocal not or pass raise return try while with yield"
  ).split(" "),
);

/**
 * snake_case: a word starts at a capital after a lower-case letter or a digit, and at the last
 * capital of an acronym followed by a lower-case word (`blobURLList` → `blob_url_list`); an
 * acronym keeps its digits and a plural `s` (`IPs` → `ips`).
 */
export function pythonName(name: string): string {
  const snake = name
    .replace(/[^A-Za-z0-9_]/g, "_")
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z])([A-Z][a-rt-z])/g, "$1_$2")
    .toLowerCase();
  const safe = /^[0-9]/.test(snake) ? `_${snake}` : snake;
  return PYTHON_KEYWORDS.has(safe) ? `${safe}_` : safe;
}

/** Go's exported name: the first letter capitalised (`blobId` → `BlobId`). */
export const goName = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1);
