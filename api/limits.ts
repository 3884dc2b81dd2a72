/**
 * Limits of the file service, and how they are counted. The service publishes none of them:
 * these are the project's documented assumptions (README "Differences from the real service").
 * The emulator enforces exactly these and the provider checks the same ones before any request,
 * so a preview refuses what an apply would.
 */
/** One epoch's length where the service does not say otherwise (about a day; Walrus mainnet's is longer, see service-notes). */
export const DEFAULT_EPOCH_SECONDS = 86_400;

export const LIMITS = {
  /** Maximum length of `name`, counted by `textLength`. */
  nameMaxLength: 256,
  /** Maximum length of `tag`, counted by `textLength`. */
  tagMaxLength: 256,
  /** Maximum number of top-level keys in `metadata`. */
  metadataMaxKeys: 64,
  /** Maximum size of `metadata` serialized as JSON, in bytes (UTF-8), counted by `jsonBytes`. */
  metadataMaxBytes: 16 * 1024,
  /** Maximum nesting depth of `metadata` (the object itself is depth 1). */
  metadataMaxDepth: 32,
  /** Maximum length of a blobId, counted by `textLength`. */
  blobIdMaxLength: 512,
  /** Walrus lets storage be bought at most this many epochs ahead of the current epoch. */
  maxEpochsAhead: 53,
  /** Largest epochs value accepted by one renew request (cannot exceed the horizon anyway). */
  renewMaxEpochs: 53,
  /** Maximum accepted request body, in bytes, for JSON routes. */
  jsonBodyMaxBytes: 64 * 1024,
  /** Largest file an upload accepts, in bytes. */
  uploadMaxBytes: 32 * 1024 * 1024,
  /** Maximum length of a file's `url`, as a client accepts it (a browser-safe URL length). */
  urlMaxLength: 2048,
} as const;

/**
 * The length of a string as the service counts it: UTF-16 code units, which is JavaScript's
 * `length` ("😀" is 2). Every length limit above is counted with this one function, on both
 * sides, so the provider and the emulator can never disagree about a value near a limit.
 */
export function textLength(text: string): number {
  return text.length;
}

/** Size of a value serialized as JSON, in UTF-8 bytes: how `metadataMaxBytes` is counted. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? "", "utf8");
}

/**
 * The path of the first value nested deeper than `max` (the root is depth 1), or undefined.
 * Iterative on purpose: this runs before anything recursive (a merge, a clone, a schema) may
 * touch a value that a hostile caller nested thousands of levels deep.
 */
export function tooDeepAt(root: unknown, max: number, rootName = "metadata"): string | undefined {
  const stack: Array<[unknown, number, string]> = [[root, 1, rootName]];
  while (stack.length > 0) {
    const [value, depth, at] = stack.pop()!;
    if (typeof value !== "object" || value === null) continue;
    if (depth > max) return at;
    for (const key of Object.keys(value)) {
      stack.push([(value as Record<string, unknown>)[key], depth + 1, Array.isArray(value) ? `${at}[${key}]` : `${at}.${key}`]);
    }
  }
  return undefined;
}

/**
 * A limit a value breaks: the rule, and apart from it what the value showed (a length, a count, a
 * path inside it), so a message about a secret value can say the rule alone.
 */
export interface LimitProblem {
  rule: string;
  found?: string;
}

/** The problem as one sentence: the rule, then what was found in parentheses. */
export const limitText = ({ rule, found }: LimitProblem): string => (found === undefined ? rule : `${rule} (${found})`);

/** What is wrong with a text longer than `max` (counted by `textLength`), naming the field and the limit. */
export function textLimitProblem(field: string, text: string, max: number): LimitProblem | undefined {
  const length = textLength(text);
  return length > max ? { rule: `${field} must be at most ${max} characters`, found: `got ${length}` } : undefined;
}

/**
 * What is wrong with a metadata object against the limits (keys, size, depth), naming the limit
 * and the value found; undefined when it is within them. The provider checks declared metadata
 * and metadata the service answers with this; the emulator states the same limits in its own
 * catalogue's words.
 */
export function metadataLimitProblem(metadata: Record<string, unknown>): LimitProblem | undefined {
  const deep = tooDeepAt(metadata, LIMITS.metadataMaxDepth);
  if (deep !== undefined) return { rule: `metadata must be nested at most ${LIMITS.metadataMaxDepth} levels deep`, found: `${deep} is deeper` };
  const keys = Object.keys(metadata).length;
  if (keys > LIMITS.metadataMaxKeys) return { rule: `metadata must have at most ${LIMITS.metadataMaxKeys} keys`, found: `got ${keys}` };
  const bytes = jsonBytes(metadata);
  if (bytes > LIMITS.metadataMaxBytes) return { rule: `metadata must be at most ${LIMITS.metadataMaxBytes} bytes as JSON`, found: `got ${bytes}` };
  return undefined;
}
