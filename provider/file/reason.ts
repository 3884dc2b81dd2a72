import type { z } from "zod";
import { type LimitProblem, isPlainObject } from "../../api";

/**
 * A check failure's reason in parts: the wording, and apart from it each part that shows the
 * declared value. A secret input's reason is then made without its value, never cleaned of it
 * afterwards (text edits missed forms of a value and garbled the wording around short ones).
 */

/** A part that shows the value checked (or what was read from it: a length, a path inside it). */
interface ValuePart {
  value: string;
  /** What a secret input's reason says in its place: nothing when absent. */
  secret?: string;
}

export type Reason = ReadonlyArray<string | ValuePart>;

/** A value part: `value` for an input that is not secret, `secret` (or nothing) for one that is. */
export const shows = (value: string, secret?: string): ValuePart => (secret === undefined ? { value } : { value, secret });

/** The reason as a user reads it: for a secret input, each value part gives way to what it says instead. */
export function reasonText(reason: Reason, secret: boolean): string {
  return reason.map((part) => (typeof part === "string" ? part : secret ? (part.secret ?? "") : part.value)).join("");
}

/** A broken limit as api/ states it (the rule, then what was found), `subject` said before the rule. */
export const limitReason = ({ rule, found }: LimitProblem, subject = ""): Reason => [
  `${subject}${rule}`,
  ...(found === undefined ? [] : [shows(` (${found})`)]),
];

/**
 * A refusal for a zod check: its message is the reason as an input that is not secret shows it
 * (for callers that read the message alone), its parts ride along for `issueReason`.
 */
export const refusal = (input: unknown, reason: Reason) => ({ code: "custom" as const, input, message: reasonText(reason, false), params: { reason } });

const isReason = (value: unknown): value is Reason =>
  Array.isArray(value) && value.every((part) => typeof part === "string" || (isPlainObject(part) && typeof part.value === "string"));

/**
 * A schema issue's reason: the parts its check made, or its message whole. Messages without parts
 * are the schemas' fixed wording or zod's own, which names types and limits, never a value; but
 * zod's unknown keys are names from inside the value, so they are a value part.
 */
export function issueReason(issue: z.core.$ZodIssue): Reason {
  if (issue.code === "unrecognized_keys") {
    return [`Unrecognized key${issue.keys.length === 1 ? "" : "s"}`, shows(`: ${issue.keys.map((key) => JSON.stringify(key)).join(", ")}`)];
  }
  const parts = issue.code === "custom" ? issue.params?.reason : undefined;
  return isReason(parts) ? parts : [issue.message];
}
