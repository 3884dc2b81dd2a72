import { isPlainObject, jsonEqual, ownValue } from "../../api";
import type { StoredFileState } from "../file/schema";
import { pathMap } from "./entries";
import { isUnknown } from "../file/schema";
import { issueReason } from "../file/reason";
import { type CheckFailure, checkFailure, failureInput } from "../file/validate";
import { FOLDER_INPUT_FIELDS, type FolderInputs, StoredFolderInputsSchema } from "./schema";
import type { FileValues, FolderEntry } from "./walk";

/** What a front door receives: property bags, typed here once (`validatedInputs`, `folderInputsOf`). */
type Props = Record<string, unknown>;

const PARTIAL_INPUTS = StoredFolderInputsSchema.partial();

/** The key of a path in a property path (`manifest["docs/a.html"]`). */
const at = (field: string, rel: string) => `${field}[${JSON.stringify(rel)}]`;

/** The value an entry declares for `field` (shared or its paths' own), if any. */
export const declaredValue = (entry: FolderEntry<unknown> | undefined, field: string): unknown => (entry ? ownValue<unknown>(entry.values, field) : undefined);

/** A path's own declared values (files[rel]), if the inputs have them. */
export const ownValues = (inputs: { files?: unknown }, rel: string): FileValues | undefined => {
  const own = isPlainObject(inputs.files) ? ownValue(inputs.files as Record<string, FileValues>, rel) : undefined;
  return isPlainObject(own) ? own : undefined;
};

/** A file's own declared value of `field` (files[rel][field]), if the inputs have one. */
export const ownDeclared = (inputs: FolderInputs, rel: string, field: string): unknown => {
  const own = ownValues(inputs, rel);
  return own ? ownValue(own as Props, field) : undefined;
};

/** Whether a refresh handed back `recorded`'s value of `field` (changed outside the stack) as files[rel]'s own value. */
export const handedBack = (inputs: FolderInputs, rel: string, field: string, recorded: StoredFileState): boolean => {
  const own = ownDeclared(inputs, rel, field);
  return own !== undefined && jsonEqual(own ?? null, (recorded as Props)[field] ?? null);
};

/**
 * What a front door received at check, as the folder's inputs: known fields only, each as its
 * schema allows (or still unknown); `path` required. Each refusal is a failure.
 */
export function validatedInputs(news: Props, secretInputs: readonly string[] = []): { inputs: FolderInputs; failures: CheckFailure[] } {
  const failures: CheckFailure[] = [];
  const inputs: Props = {};
  const candidate: Props = {};
  for (const key of Object.keys(news ?? {})) {
    const value = news[key];
    if (value === undefined || value === null) continue;
    if (!(FOLDER_INPUT_FIELDS as readonly string[]).includes(key)) {
      const reason = `${key} is not an input of StoredFolder (inputs: ${FOLDER_INPUT_FIELDS.join(", ")}); it would be ignored, so it is refused`;
      failures.push(checkFailure(key, [reason], secretInputs.includes(key)));
      continue;
    }
    inputs[key] = value;
    if (!isUnknown(value)) candidate[key] = value;
  }
  const parsed = PARTIAL_INPUTS.safeParse(candidate);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const [field, rel, sub] = issue.path.map(String);
      const property = field === "files" && rel !== undefined ? `${at("files", rel)}${sub ? `.${sub}` : ""}` : (field ?? "");
      // A secret input's failure is made without its value: the secrecy is the field's, read from the list.
      if (!failures.some((f) => failureInput(f) === property)) failures.push(checkFailure(property, issueReason(issue), secretInputs.includes(field ?? "")));
    }
  }
  const partReason = partProblem(inputs.parts, inputs.part);
  if (partReason && !failures.some((f) => ["part", "parts"].includes(failureInput(f))))
    failures.push(checkFailure("part", [partReason], secretInputs.includes("part") || secretInputs.includes("parts")));
  if (news?.path === undefined || news.path === null)
    failures.push(checkFailure("path", ["path is required: the folder, relative to the program's directory"], secretInputs.includes("path")));
  return { inputs: inputs as FolderInputs, failures };
}

/** Why `part` names none of the `parts` (each number already judged alone), if it does. */
function partProblem(parts: unknown, part: unknown): string | undefined {
  if (isUnknown(parts) || isUnknown(part) || (parts !== undefined && typeof parts !== "number") || (part !== undefined && typeof part !== "number"))
    return undefined;
  const count = parts ?? 1;
  if (part === undefined) return count > 1 ? `part is required with parts ${count}: which of them this resource holds, from 0 to ${count - 1}` : undefined;
  return part >= count ? `part must be below parts (${count}), got ${part}: parts is how many resources keep the folder` : undefined;
}

/**
 * Inputs a check has returned already (as the engine hands them back to diff, create and update,
 * or recorded), as the folder's inputs: its fields as they are (nothing judged again), and the
 * manifest as a map, whether it came as one (the plugin) or as its text (the dynamic resource).
 */
export function folderInputsOf(props: Props | undefined): FolderInputs {
  const inputs: Props = {};
  for (const field of FOLDER_INPUT_FIELDS) if (props?.[field] !== undefined) inputs[field] = props[field];
  if (props?.manifest !== undefined) inputs.manifest = pathMap(props.manifest);
  return inputs as FolderInputs;
}

/**
 * Whose failure an entry's is: the path's own value, else the folder's shared one, else the
 * content. Shared-value failures are keyed by field because they fail alike for every file; a
 * path's own are keyed by reason.
 */
export function failureOwner(failure: CheckFailure, entry: FolderEntry<unknown>, own: Record<string, FileValues>, inputs: FolderInputs) {
  const field = failureInput(failure) as keyof FileValues;
  const ownOf = (rel: string) => ownValue(own, rel)?.[field];
  // (A value no path declares of its own is the folder's: a path that takes it, not one that declares another.)
  const owner =
    entry.paths.find((rel) => ownOf(rel) !== undefined && jsonEqual(ownOf(rel), entry.values[field])) ??
    entry.paths.find((rel) => ownOf(rel) === undefined) ??
    entry.paths[0];
  const declaredOwn = ownOf(owner) !== undefined;
  // A secret value's failure names no property (the engine would print its value).
  const property = failure.secret ? "" : failure.property === "source" ? "path" : declaredOwn ? `${at("files", owner)}.${field}` : field;
  const sharedValues: FileValues = inputs;
  const shared = !declaredOwn && sharedValues[field] !== undefined;
  return { key: JSON.stringify(shared ? [property, field] : [property, failure.reason]), property, owner, shared };
}
