import { isPlainObject } from "../api";
import { firstPaths, fromOutputTexts, recordedManifest, unpackEntries } from "./folder-entries";
import { code } from "./markdown";
import { isStoredFileType, isStoredFolderType } from "./resource-types";
import { configOfSettings, settingsFrom } from "./settings";
import { remainingEpochs } from "./stored-file-plan";
import { StoredFolderStateSchema } from "./stored-folder-schema";

/**
 * The alarm: from `pulumi stack export`, each managed file's expiry, epochs left and keep-alive,
 * and whether any ends within the warning window (or has ended). A scheduled job runs it after
 * its `up`, so a failing job is the alert that a file is about to go.
 */

interface ExpiryRow {
  /** The resource's name (a folder's files: `folder/path`). */
  resource: string;
  blobId?: string;
  expiresAt?: string;
  /** Whole epochs left, the current one included; 0 once expired; undefined when not known. */
  epochsLeft?: number;
  keepAlive?: { minRemainingEpochs: number; renewEpochs: number };
  /** Ends within the window, has ended, or its expiry is unknown. */
  alarm: boolean;
  /** A folder whose entries could not be read (secret, or malformed): its files' expiries are unknown. */
  entriesUnread?: true;
}

export interface ExpiryReport {
  withinEpochs: number;
  rows: ExpiryRow[];
  /** Whether any row raises the alarm (the CLI exits 1). */
  alarm: boolean;
}

type Resource = { urn?: unknown; type?: unknown; outputs?: unknown; inputs?: unknown };

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** The settings a stack export carries: the tuskr provider's inputs (plugin stacks), else the environment and defaults. */
function settingsOf(resources: Resource[]) {
  const provider = resources.find((r) => r.type === "pulumi:providers:tuskr");
  return settingsFrom(configOfSettings(isPlainObject(provider?.inputs) ? provider.inputs : {}));
}

/** Reads a stack export (`pulumi stack export`); throws when it is not one. */
export function expiryReport(exported: unknown, options: { withinEpochs?: number; nowMs?: number } = {}): ExpiryReport {
  const deployment = isPlainObject(exported) ? exported.deployment : undefined;
  const resources = isPlainObject(deployment) && Array.isArray(deployment.resources) ? (deployment.resources as Resource[]) : undefined;
  if (!resources) throw new Error("not the output of `pulumi stack export`: no deployment.resources");
  const settings = settingsOf(resources);
  const withinEpochs = options.withinEpochs ?? settings.expiryWarningEpochs;
  const clock = { nowMs: options.nowMs ?? Date.now(), epochMs: settings.epochSeconds * 1000 };
  const rows: ExpiryRow[] = [];
  const row = (resource: string, values: Record<string, unknown>): ExpiryRow => {
    const expiresAt = str(values.expiresAt);
    const left = remainingEpochs(expiresAt, clock);
    const ka = isPlainObject(values.keepAlive) ? values.keepAlive : undefined;
    // Only a policy of two counts is one (a secret one is an encrypted object: not shown).
    const keepAlive =
      ka && Number.isSafeInteger(ka.minRemainingEpochs) && Number.isSafeInteger(ka.renewEpochs)
        ? { minRemainingEpochs: ka.minRemainingEpochs as number, renewEpochs: ka.renewEpochs as number }
        : undefined;
    return { resource, blobId: str(values.blobId), expiresAt, epochsLeft: left, keepAlive, alarm: left === undefined || left <= withinEpochs };
  };
  for (const r of resources) {
    const name = str(r.urn)?.split("::").pop() ?? "?";
    // Read field by field: a secret output is an encrypted object, and must not hide the rest.
    const outputs = isPlainObject(r.outputs) ? r.outputs : {};
    if (isStoredFileType(r.type)) rows.push(row(name, outputs));
    else if (isStoredFolderType(r.type)) rows.push(...folderRows(name, outputs, row));
  }
  rows.sort((a, b) => (a.epochsLeft ?? -1) - (b.epochsLeft ?? -1) || a.resource.localeCompare(b.resource));
  return { withinEpochs, rows, alarm: rows.some((r) => r.alarm) };
}

/**
 * A folder kept as one resource: a row per content it keeps (`folder/path`, its first path), from
 * the entries its state records. Entries it cannot read — secret, as they are when any of the
 * folder's values is (the export shows them encrypted unless `--show-secrets`), or unreadable —
 * are one row for the folder, its expiry unknown: the alarm, since nothing says the files last.
 */
function folderRows(name: string, outputs: Record<string, unknown>, row: (resource: string, values: Record<string, unknown>) => ExpiryRow): ExpiryRow[] {
  const parsed = StoredFolderStateSchema.safeParse(fromOutputTexts(outputs));
  const state = parsed.success ? parsed.data : undefined;
  const manifest = state ? recordedManifest(state) : {};
  const entries = state ? unpackEntries(state.entries, { manifest, blobIds: state.blobIds ?? {}, urls: state.urls ?? {} }) : new Map();
  // An empty folder keeps nothing; a folder with files and no entry read is one row, unknown.
  if (entries.size === 0) return state && Object.keys(manifest).length === 0 ? [] : [{ ...row(name, {}), entriesUnread: true }];
  const firstPath = firstPaths(manifest);
  return [...entries].map(([hash, entry]) => row(`${name}/${firstPath.get(hash) ?? hash}`, entry as Record<string, unknown>));
}

/** The report as Markdown: a table, soonest first, and one line that says whether to act. */
export function expiryMarkdown(report: ExpiryReport): string {
  const out = ["### Tuskr files: expiry", ""];
  if (report.rows.length === 0) return `${out.join("\n")}No StoredFile or StoredFolder in this stack.\n`;
  out.push("| File | blobId | Expires | Epochs left | Keep-alive |", "|---|---|---|---:|---|");
  for (const r of report.rows) {
    const left = r.epochsLeft === undefined ? "unknown" : r.epochsLeft === 0 ? "**expired**" : `${r.alarm ? "**" : ""}${r.epochsLeft}${r.alarm ? "**" : ""}`;
    const keepAlive = r.keepAlive ? `renews ${r.keepAlive.renewEpochs} when fewer than ${r.keepAlive.minRemainingEpochs} left (at an \`up\`)` : "—";
    const expires = r.expiresAt ? code(r.expiresAt) : r.entriesUnread ? "unknown: the folder's entries are secret or unreadable (`--show-secrets`)" : "unknown";
    out.push(`| ${code(r.resource)} | ${r.blobId ? code(r.blobId) : "—"} | ${expires} | ${left} | ${keepAlive} |`);
  }
  const due = report.rows.filter((r) => r.alarm).length;
  out.push(
    "",
    due > 0
      ? `**${due} file(s) end within ${report.withinEpochs} epoch(s) or have ended**: raise \`retentionEpochs\`, add \`keepAlive\`, or run \`pulumi up\` (keep-alive renews only during an \`up\`).`
      : `No file ends within ${report.withinEpochs} epoch(s).`,
  );
  return `${out.join("\n")}\n`;
}
