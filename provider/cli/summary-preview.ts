import { z } from "zod";
import { isPlainObject } from "../../api";
import { settingsFrom } from "../config/settings";
import { isStoredFileType, isStoredFolderType, parseUrn, urnName } from "../engine/urns";
import type { PlanClock } from "../file/plan";
import { readInput } from "./input";

/**
 * The summary's parse step: `pulumi preview --json` read into the steps that change a StoredFile
 * or a one-resource StoredFolder, and the clock their plans count with.
 */

// Only what is needed of the preview's JSON; the rest of it is ignored.
const ResourceStateSchema = z.object({
  urn: z.string().optional(),
  type: z.string().optional(),
  custom: z.boolean().optional(),
  inputs: z.record(z.string(), z.unknown()).optional(),
  outputs: z.record(z.string(), z.unknown()).optional(),
});
/** The engine's step kinds that change a resource (the rest only read or keep it). */
const CHANGE_OPS = new Set(["create", "update", "replace", "create-replacement", "delete", "delete-replaced", "discard"]);

const DiagnosticsSchema = z.array(z.object({ severity: z.string().optional() }).passthrough());
const errorCount = (diagnostics: z.infer<typeof DiagnosticsSchema> | undefined) => (diagnostics ?? []).filter((d) => d.severity === "error").length;

// Pulumi omits an empty steps list, so a preview without `steps` failed before any step (the
// program could not start), and its errors say why.
const PreviewSchema = z
  .object({
    config: z.record(z.string(), z.unknown()).optional(),
    steps: z
      .array(
        z.object({
          op: z.string(),
          urn: z.string(),
          oldState: ResourceStateSchema.optional(),
          newState: ResourceStateSchema.optional(),
        }),
      )
      .min(1, { error: "empty, which Pulumi never writes: it omits `steps` when there are none" })
      .optional(),
    /** The engine's and the providers' messages; an error among them means the preview failed. */
    diagnostics: DiagnosticsSchema.optional(),
  })
  .check((ctx) => {
    if (ctx.value.steps === undefined && errorCount(ctx.value.diagnostics) === 0) {
      ctx.issues.push({ code: "custom", input: ctx.value, path: ["steps"], message: "missing, and no error in `diagnostics` says why" });
    }
  });
type Preview = z.infer<typeof PreviewSchema>;
type ResourceState = z.infer<typeof ResourceStateSchema>;

/** A step that changes a StoredFile or a one-resource StoredFolder, named by its resource's name. */
export interface ChangeStep {
  kind: "file" | "folder";
  op: string;
  name: string;
  oldState?: ResourceState;
  newState?: ResourceState;
}

/** The preview read for the summary; throws NotTheInput when the input is not one. */
export function parsePreview(json: unknown): Preview {
  return readInput(
    PreviewSchema,
    json,
    "`pulumi preview --json`",
    "an object with a `steps` list (the stack's own step at least), or a failed preview's errors",
  );
}

/** How many errors the preview reported: a failed preview (its output is still JSON) plans nothing. */
export function previewErrors(preview: unknown): number {
  const parsed = PreviewSchema.safeParse(preview);
  return parsed.success ? errorCount(parsed.data.diagnostics) : 0;
}

/** The clock the plans count with: the stack's settings as the preview's config carries them (`{value}` objects or strings), read as the provider reads them. */
export function clockOf(preview: Preview, nowMs: number | undefined): PlanClock & { epochMs: number } {
  const settings = settingsFrom(
    {
      get: (key) => {
        const raw = preview.config?.[key];
        return isPlainObject(raw) ? raw.value : raw;
      },
    },
    {},
  );
  return { nowMs: nowMs ?? Date.now(), epochMs: settings.epochSeconds * 1000, warnWithinEpochs: settings.expiryWarningEpochs };
}

/**
 * The steps that change a file or a folder: not `same`, nor the `refresh` and `read` steps of a
 * `preview --refresh`, which would add a row for every unchanged file.
 */
export function changeSteps(preview: Preview): ChangeStep[] {
  const out: ChangeStep[] = [];
  for (const step of preview.steps ?? []) {
    if (!CHANGE_OPS.has(step.op)) continue;
    const type = step.newState?.type ?? step.oldState?.type ?? parseUrn(step.urn)?.type;
    // The TypeScript StoredFolder's component shares the plugin resource's type: it keeps nothing itself.
    const kind = isStoredFolderType(type)
      ? (step.newState ?? step.oldState)?.custom === false
        ? undefined
        : "folder"
      : isStoredFileType(type)
        ? "file"
        : undefined;
    if (kind) out.push({ kind, op: step.op, name: urnName(step.urn), oldState: step.oldState, newState: step.newState });
  }
  return out;
}
