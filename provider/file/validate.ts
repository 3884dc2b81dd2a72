import { LIMITS, isPlainObject, tooDeepAt } from "../../api";
import { type Reason, issueReason, limitReason, reasonText, shows } from "./reason";
import { type PlanClock, retainUntilProblem } from "./plan";
import { type DeclaredInputs, INPUT_FIELDS, type InputField, StoredFileInputsSchema, isUnknown } from "./schema";

/**
 * What a program declared, checked: one failure per bad field, naming the field and its limit,
 * a secret input's value in none of them. The schemas these checks run are in schema.ts.
 */

/**
 * A failure of `input` as the engine is told it. A secret input's names no property (the engine
 * prints the named property's value next to the reason, secret or not), and its reason leaves out
 * the parts that show the value.
 */
export function checkFailure(input: string, reason: Reason, secret: boolean): CheckFailure {
  if (!secret) return { property: input, reason: reasonText(reason, false) };
  return { property: "", reason: `${input} (a secret input): ${reasonText(reason, true)}`, input, secret: true };
}

/** The input a failure is about: carried as data, never read back from its reason. */
export const failureInput = (failure: CheckFailure): string => failure.input ?? failure.property;

/**
 * The name a `__proto__` key is renamed to before Pulumi's SDK serializes inputs, which would
 * silently drop it and clear stored metadata. Check refuses either name.
 */
export const PROTO_KEY_STANDIN = "tuskr:__proto__";

/**
 * `value` with every plain object's own `__proto__` key renamed to the standin (the same value
 * when it has none); any other object is handed to `other` (a program's outputs and promises),
 * other values are as they are.
 */
export function withProtoKeysNamed<T>(value: T, other: (v: object) => unknown = (v) => v): T {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) {
      const items = v.map(walk);
      return items.some((item, i) => item !== v[i]) ? items : v;
    }
    if (typeof v !== "object" || v === null) return v;
    if (Object.getPrototypeOf(v) !== Object.prototype) return other(v);
    let changed = false;
    const entries = Object.keys(v).map((key) => {
      const inner = (v as Record<string, unknown>)[key];
      const walked = walk(inner);
      if (key === "__proto__" || walked !== inner) changed = true;
      return [key === "__proto__" ? PROTO_KEY_STANDIN : key, walked] as const;
    });
    return changed ? Object.fromEntries(entries) : v;
  };
  return walk(value) as T;
}

/**
 * Shapes of a metadata value the schema cannot be trusted with: nested deeper than the limit
 * (deep recursion would overflow the stack before a size check ran) and keys named __proto__
 * (an object built from them loses them silently).
 */
function metadataShapeProblem(metadata: Record<string, unknown>): Reason | undefined {
  const deep = tooDeepAt(metadata, LIMITS.metadataMaxDepth);
  if (deep !== undefined) return limitReason({ rule: `metadata must be nested at most ${LIMITS.metadataMaxDepth} levels deep`, found: `${deep} is deeper` });
  const stack: Array<[unknown, string]> = [[metadata, "metadata"]];
  while (stack.length > 0) {
    const [value, at] = stack.pop()!;
    // JSON has no such number (the schema's own message would name neither the key nor the value).
    if (typeof value === "number" && !Number.isFinite(value))
      return [shows(`${at} is ${value}`, "a number in metadata is not finite"), ", not a JSON value: numbers must be finite"];
    if (typeof value !== "object" || value === null) continue;
    for (const key of Object.keys(value)) {
      if (key === "__proto__" || key === PROTO_KEY_STANDIN)
        return [shows(`${at}.__proto__`, "metadata"), ": a key named __proto__ cannot be stored safely (Pulumi's SDKs drop it without a word); rename it"];
      stack.push([(value as Record<string, unknown>)[key], Array.isArray(value) ? `${at}[${key}]` : `${at}.${key}`]);
    }
  }
  return undefined;
}

export interface CheckFailure {
  /** What the engine prints the reason under: empty for a secret input, whose value it would print. */
  property: string;
  reason: string;
  /** The input the failure is about, secret or not (the engine never sees it). */
  input?: string;
  /** Whether that input is secret: then `property` is empty and the reason holds no value. */
  secret?: boolean;
}

/** The inputs schema with every field optional, built once (zod compiles a schema on its first use: a folder checks thousands of entries). */
const PARTIAL_INPUTS = StoredFileInputsSchema.partial();

/** Declared inputs as check judged them: its failures beside them. */
export interface CheckedInputs {
  inputs: DeclaredInputs;
  failures: CheckFailure[];
}

/**
 * What a front door received at check, as the declared inputs (the one place a property bag
 * becomes them). Never throws: returns the cleaned inputs (unknown preview values passed through
 * untouched) and one failure per bad field, each naming the field and the limit.
 */
export function validateInputs(news: Record<string, unknown>, secretNames: readonly string[] = []): CheckedInputs {
  const refused: Array<{ input: string; reason: Reason }> = [];
  const refuse = (input: string, reason: Reason) => void refused.push({ input, reason });
  const inputs: Record<string, unknown> = {};
  const candidate: Record<string, unknown> = {};
  for (const field of INPUT_FIELDS) {
    const value = news?.[field];
    if (value === undefined || value === null) continue;
    if (isUnknown(value)) inputs[field] = value;
    else candidate[field] = value;
  }
  // Shapes the schema cannot be trusted with are refused first.
  const shapeProblem = isPlainObject(candidate.metadata) ? metadataShapeProblem(candidate.metadata) : undefined;
  if (shapeProblem) {
    refuse("metadata", shapeProblem);
    delete candidate.metadata;
  }
  // Unknown values are validated once known (at apply time, check runs again).
  const parsed = PARTIAL_INPUTS.safeParse(candidate);
  if (parsed.success) {
    Object.assign(inputs, parsed.data);
  } else {
    const seen = new Set<string>();
    for (const issue of parsed.error.issues) {
      const property = String(issue.path[0] ?? "");
      if (seen.has(property)) continue;
      seen.add(property);
      refuse(property, issueReason(issue));
    }
    for (const field of INPUT_FIELDS) {
      if (!seen.has(field) && candidate[field] !== undefined) inputs[field] = candidate[field];
    }
  }
  for (const key of Object.keys(news ?? {})) {
    if ((INPUT_FIELDS as readonly string[]).includes(key) || news[key] === undefined) continue;
    refuse(key, [`${key} is not an input of StoredFile (inputs: ${INPUT_FIELDS.join(", ")}); it would be ignored, so it is refused`]);
  }
  const given = (k: string) => news?.[k] !== undefined && news?.[k] !== null;
  if (given("contentType") && given("blobId")) {
    refuse("contentType", ["contentType goes with source: it is what an upload records; an adopted file (blobId) keeps the type it was uploaded with"]);
  }
  if (!given("blobId") && !given("source")) {
    refuse("blobId", ["blobId or source is required: the id of a file already uploaded to the service, or the content to upload"]);
  } else if (given("blobId") && given("source")) {
    refuse("source", ["blobId and source exclude each other: declare blobId to adopt an uploaded file, or source to upload one"]);
  }
  const secrets = new Set(secretNames);
  return { inputs: inputs as DeclaredInputs, failures: refused.map(({ input, reason }) => checkFailure(input, reason, secrets.has(input))) };
}

/** Whether `value` passes `field`'s own rule (a folder judges its entries' shared values once, and each name apart). */
export const fieldAccepts = (field: InputField, value: unknown): boolean => StoredFileInputsSchema.shape[field].safeParse(value).success;

/**
 * Inputs a check has returned already (as the engine hands them back to check, diff, create and
 * update), as the declared inputs: the input fields, as they are (nothing judged again).
 */
export function declaredInputsOf(props: Record<string, unknown> | undefined): DeclaredInputs {
  const inputs: Record<string, unknown> = {};
  for (const field of INPUT_FIELDS) if (props?.[field] !== undefined) inputs[field] = props[field];
  return inputs as DeclaredInputs;
}

/**
 * What a declaration may not be, given the one before it: a rise of retentionEpochs past the
 * horizon, or a retainUntil the service may not reach.
 */
export function changeFailures(
  olds: DeclaredInputs,
  news: DeclaredInputs,
  secretNames: readonly string[],
  clock: Pick<PlanClock, "nowMs" | "epochMs">,
): CheckFailure[] {
  const failures: CheckFailure[] = [];
  // The declared end may be at most the horizon ahead of its epoch, for a new declaration or a
  // single raise; the plan checks the rest at preview. Lowering it buys and returns nothing.
  const newEpochs = news.retentionEpochs;
  if (typeof newEpochs === "number" && Number.isInteger(newEpochs)) {
    const increase = newEpochs - (typeof olds.retentionEpochs === "number" ? olds.retentionEpochs : 0);
    if (increase > LIMITS.maxEpochsAhead) {
      const rule = `retentionEpochs can rise by at most ${LIMITS.maxEpochsAhead} epochs in one update (storage is bought at most ${LIMITS.maxEpochsAhead} epochs ahead)`;
      failures.push(checkFailure("retentionEpochs", [rule, shows(`; got an increase of ${increase}`)], secretNames.includes("retentionEpochs")));
    }
  }
  // A date declared before is not judged again: the plan knows the file's epochs and says at
  // preview if its end cannot be reached (a stack whose date an earlier release took stays valid).
  const declaredBefore = olds.retainUntil !== undefined && olds.retainUntil === news.retainUntil;
  const pastHorizon = declaredBefore ? undefined : retainUntilProblem(news.retainUntil, clock);
  if (pastHorizon) failures.push(checkFailure("retainUntil", pastHorizon, secretNames.includes("retainUntil")));
  return failures;
}
