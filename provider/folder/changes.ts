import { ownValue } from "../../api";

/**
 * A folder's changes by path, between the manifest it recorded and the one declared: the one
 * description the preview's lines and the pull-request summary's row are both rendered from.
 */
export interface PathChange {
  path: string;
  kind: "add" | "update" | "delete";
  /** The content's hash before (update, delete) and after (add, update). */
  was?: string;
  now?: string;
}

/**
 * The paths added, changed and removed, sorted by path. A path whose old content has no entry
 * (`kept` says which contents have one) is added anew; one whose content and entry stay is no change.
 */
export function manifestChanges(before: Record<string, string>, after: Record<string, string>, kept: (hash: string) => boolean = () => true): PathChange[] {
  const out: PathChange[] = [];
  for (const path of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()) {
    const was = ownValue(before, path);
    const now = ownValue(after, path);
    if (was === now && now !== undefined && kept(now)) continue;
    if (was === undefined || !kept(was)) {
      if (now !== undefined) out.push({ path, kind: "add", now });
    } else out.push({ path, kind: now === undefined ? "delete" : "update", was, now });
  }
  return out;
}

/** What the preview knows of a change beyond the manifests. */
export interface ChangeContext {
  /** The new content is stored already (no upload). */
  stored: boolean;
  /** Its entry moves here from another resource of the stack (folder/moves.ts). */
  moved?: boolean;
  /** The old content stays, under this path. */
  staysUnder?: string;
  /** Its entry is renamed after that path (one PATCH). */
  renamed: boolean;
}

/** A preview line for one path's change. */
export function changeLine(change: PathChange, { stored, moved, staysUnder, renamed }: ChangeContext): string {
  const { path } = change;
  const rename = renamed ? "; its entry is renamed: one PATCH" : "";
  const movedHere = "its entry moves here from another resource of the stack: no upload";
  if (change.kind === "add") return `+ ${path} (${moved ? movedHere : stored ? "its content is stored already: no upload" : "upload"})`;
  if (change.kind === "delete") {
    return staysUnder !== undefined
      ? `- ${path} (its content stays, under ${staysUnder}${rename})`
      : `- ${path} (no longer managed; no request, the file keeps its period)`;
  }
  const old = staysUnder !== undefined ? `the old content stays, under ${staysUnder}${rename}` : "the old entry keeps its period";
  return `~ ${path} (new content, ${moved ? movedHere : stored ? "stored already: no upload" : "uploaded"}; ${old})`;
}
