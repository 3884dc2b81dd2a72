import type { z } from "zod";

/**
 * Input a command does not understand: it says what it expected and stops (exit 2), rather than
 * report on what it could not read — "no changes" or "no file" on such input would reassure.
 */
export class NotTheInput extends Error {
  override name = "NotTheInput";
}

/** The input read by the command's schema (only what it reads); throws NotTheInput, naming the first field that differs. */
export function readInput<S extends z.ZodType>(schema: S, json: unknown, source: string, expected: string): z.output<S> {
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new NotTheInput(`not the output of ${source}: expected ${expected} (${issue?.path.join(".") || "the input"}: ${issue?.message})`);
}
