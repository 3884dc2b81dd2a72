import { z } from "zod";
import { isPlainObject } from "../../api";
import { settingsFrom } from "../config/settings";
import { isStoredFileType, isStoredFolderType, parseUrn, urnName } from "../engine/urns";
import type { PlanClock } from "../file/plan";
import { inert } from "../engine/inert";
import { NotTheInput, readInput } from "./input";
import { ServiceFacts } from "../service/facts";

/**
 * The summary's parse step: `pulumi preview --json` read into the steps of StoredFiles and
 * one-resource StoredFolders, each op into what it does, and the clock their plans count with.
 */

// Only what is needed of the preview's JSON; the rest of it is ignored.
const ResourceStateSchema = z.object({
  urn: z.string().optional(),
  type: z.string().optional(),
  custom: z.boolean().optional(),
  id: z.string().optional(),
  /** The `import` option's ID: kept in the state after the import, so it alone does not make a step an import. */
  importID: z.string().optional(),
  /** A file read by the program (`get`), not managed by the stack. */
  external: z.boolean().optional(),
  inputs: z.record(z.string(), z.unknown()).optional(),
  outputs: z.record(z.string(), z.unknown()).optional(),
  /** The resources it is stepped after (a folder's part takes what a part it depends on drops). */
  dependencies: z.array(z.string()).optional(),
});

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

/** Every step op of Pulumi's engine (`StepOps` in pkg/resource/deploy/step.go), as `preview --json` writes it. */
const STEP_OPS = [
  "same",
  "create",
  "update",
  "delete",
  "replace",
  "create-replacement",
  "delete-replaced",
  "read",
  "read-replacement",
  "refresh",
  "discard",
  "discard-replaced",
  "remove-pending-replace",
  "import",
  "import-replacement",
  "diff",
  "extend-parameterize",
] as const;
type StepOp = (typeof STEP_OPS)[number];
const StepOpSchema = z.enum(STEP_OPS);

/**
 * What each op does to a file or a folder. `same` changes nothing; the other halves of a replace are
 * said by its logical `replace` step, which every preview shows; `remove-pending-replace` drops the
 * state of a file a replace already let go (no request); `diff` and `extend-parameterize` are the
 * engine's own, never a resource's change, so they are refused like an op Pulumi adds later.
 */
const OP_ACTIONS = {
  same: "none",
  create: "create",
  update: "update",
  delete: "delete",
  replace: "replace",
  "create-replacement": "none",
  "delete-replaced": "none",
  read: "read",
  "read-replacement": "none",
  refresh: "read",
  discard: "forget",
  "discard-replaced": "none",
  "remove-pending-replace": "none",
  import: "import",
  "import-replacement": "none",
  diff: "unknown",
  "extend-parameterize": "unknown",
} as const satisfies Record<StepOp, string>;

type Recorded = ResourceState & { outputs: Record<string, unknown> };
type Declared = ResourceState & { inputs: Record<string, unknown> };

/**
 * A step of a StoredFile or a one-resource StoredFolder, named by its resource's name, with what it
 * does and the states that says it reads: `read` is a refresh or a program's read (a GET per file),
 * `forget` a read file dropped from the state (no request), `import` an adoption by reading.
 */
export type ChangeStep = ({ kind: "file"; name: string } & (Changes | Imports)) | ({ kind: "folder"; name: string } & Changes);
type Changes =
  | { action: "create"; newState: Declared }
  | { action: "update" | "replace"; oldState: Recorded; newState: Declared }
  | { action: "delete" }
  | { action: "read" }
  | { action: "forget" };
// The provider refuses to import a folder (its entries are found by uploading): no preview that succeeded has one.
type Imports = { action: "import"; importID: string } | { action: "replace-by-import"; importID: string; oldState: Recorded };

/** A step with a row of its own: all but the reads, which are counted. */
export type RowStep = Exclude<ChangeStep, { action: "read" }>;

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
export function clockOf(preview: Preview, nowMs: number | undefined, learnt: readonly unknown[]): PlanClock & { epochMs: number } {
  const settings = settingsFrom(
    {
      get: (key) => {
        const raw = preview.config?.[key];
        return isPlainObject(raw) ? raw.value : raw;
      },
    },
    {},
  );
  // One service, one epoch: a length any file's state recorded counts for every plan, as in the provider.
  const facts = new ServiceFacts({ epochSeconds: settings.epochSecondsAssumed ? undefined : settings.epochSeconds });
  for (const ms of learnt) facts.seed(ms);
  const epoch = facts.epoch;
  return { nowMs: nowMs ?? Date.now(), epochMs: epoch.ms, epochKnown: epoch.known, warnWithinEpochs: settings.expiryWarningEpochs };
}

/**
 * The steps of files and folders, each op read into what it does; throws NotTheInput for a step
 * it cannot describe (an op it does not know, or one without the state Pulumi writes for it).
 */
export function changeSteps(preview: Preview): ChangeStep[] {
  const out: ChangeStep[] = [];
  for (const step of preview.steps ?? []) {
    const type = step.newState?.type ?? step.oldState?.type ?? parseUrn(step.urn)?.type;
    // The TypeScript StoredFolder's component shares the plugin resource's type: it keeps nothing itself.
    const kind = isStoredFolderType(type)
      ? (step.newState ?? step.oldState)?.custom === false
        ? undefined
        : "folder"
      : isStoredFileType(type)
        ? "file"
        : undefined;
    if (!kind) continue;
    const parsed = parseStep(kind, urnName(step.urn), step);
    if (parsed) out.push(parsed);
  }
  return out;
}

type PreviewStep = NonNullable<Preview["steps"]>[number];

/** One file's or folder's step as what it does; undefined when it does nothing a summary says. */
function parseStep(kind: "file" | "folder", name: string, step: PreviewStep): ChangeStep | undefined {
  const who = `${kind === "file" ? "StoredFile" : "StoredFolder"} ${quoted(name)}`;
  const op = StepOpSchema.safeParse(step.op);
  let action: (typeof OP_ACTIONS)[StepOp] | "replace-by-import" = op.success ? OP_ACTIONS[op.data] : "unknown";
  const { oldState, newState } = step;
  // Pulumi shows a read file's new read and an import's replacement as the `replace` of the old.
  if (action === "replace" && newState?.external) action = "read";
  else if (action === "replace" && importsAnew(oldState, newState)) action = "replace-by-import";
  const refused = () =>
    new NotTheInput(
      `${who}: step op ${quoted(step.op)} is not one pulumi-tuskr summary can describe, so nothing is summarized. Update pulumi-tuskr, or report the op`,
    );
  if (action === "unknown") throw refused();
  // A row guessed without them would tell a reviewer that nothing changes, and Pulumi writes them for every such step.
  const missing = (field: string) =>
    new NotTheInput(
      `${who}: its ${step.op} step has no ${field}, which \`pulumi preview --json\` always writes, so nothing is summarized. Pipe in the preview as Pulumi wrote it`,
    );
  const recorded = (): Recorded => {
    if (!oldState?.outputs) throw missing("oldState.outputs");
    return { ...oldState, outputs: oldState.outputs };
  };
  const declared = (): Declared => {
    if (!newState?.inputs) throw missing("newState.inputs");
    return { ...newState, urn: newState.urn ?? step.urn, inputs: newState.inputs };
  };
  const importID = (): string => {
    if (!newState?.importID) throw missing("newState.importID");
    return newState.importID;
  };
  switch (action) {
    case "none":
      return undefined;
    case "create":
      return { kind, name, action, newState: declared() };
    case "update":
    case "replace":
      return { kind, name, action, oldState: recorded(), newState: declared() };
    case "import":
    case "replace-by-import":
      // A folder's import is none a successful preview has (see Imports).
      if (kind === "folder") throw refused();
      return action === "import" ? { kind, name, action, importID: importID() } : { kind, name, action, oldState: recorded(), importID: importID() };
    case "delete":
    case "read":
    case "forget":
      return { kind, name, action };
  }
}

/** The engine's rule (its step generator's): a goal whose import ID is not the recorded resource's, or whose recorded one was only read, is an import. */
function importsAnew(oldState: ResourceState | undefined, newState: ResourceState | undefined): boolean {
  if (!newState?.importID) return false;
  return !oldState || Boolean(oldState.external) || (oldState.importID || oldState.id) !== newState.importID;
}

/** A name or op in a one-line message: quoted, and inert (a line break or bidi character shown escaped). */
const quoted = (text: string): string => inert(JSON.stringify(text));
