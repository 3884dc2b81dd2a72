import { isPlainObject } from "../api";
import { code } from "./markdown";
import { isStoredFileType } from "./resource-types";
import { configOfSettings, settingsFrom } from "./settings";
import { remainingEpochs } from "./stored-file-plan";

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
  for (const r of resources) {
    if (!isStoredFileType(r.type)) continue;
    // Read field by field: a secret output is an encrypted object, and must not hide the rest.
    const outputs = isPlainObject(r.outputs) ? r.outputs : {};
    const expiresAt = str(outputs.expiresAt);
    const left = remainingEpochs(expiresAt, clock);
    const ka = isPlainObject(outputs.keepAlive) ? outputs.keepAlive : undefined;
    // Only a policy of two counts is one (a secret one is an encrypted object: not shown).
    const keepAlive =
      ka && Number.isSafeInteger(ka.minRemainingEpochs) && Number.isSafeInteger(ka.renewEpochs)
        ? { minRemainingEpochs: ka.minRemainingEpochs as number, renewEpochs: ka.renewEpochs as number }
        : undefined;
    rows.push({
      resource: str(r.urn)?.split("::").pop() ?? "?",
      blobId: str(outputs.blobId),
      expiresAt,
      epochsLeft: left,
      keepAlive,
      alarm: left === undefined || left <= withinEpochs,
    });
  }
  rows.sort((a, b) => (a.epochsLeft ?? -1) - (b.epochsLeft ?? -1) || a.resource.localeCompare(b.resource));
  return { withinEpochs, rows, alarm: rows.some((r) => r.alarm) };
}

/** The report as Markdown: a table, soonest first, and one line that says whether to act. */
export function expiryMarkdown(report: ExpiryReport): string {
  const out = ["### Tuskr files: expiry", ""];
  if (report.rows.length === 0) return `${out.join("\n")}No StoredFile in this stack.\n`;
  out.push("| File | blobId | Expires | Epochs left | Keep-alive |", "|---|---|---|---:|---|");
  for (const r of report.rows) {
    const left = r.epochsLeft === undefined ? "unknown" : r.epochsLeft === 0 ? "**expired**" : `${r.alarm ? "**" : ""}${r.epochsLeft}${r.alarm ? "**" : ""}`;
    const keepAlive = r.keepAlive ? `renews ${r.keepAlive.renewEpochs} when fewer than ${r.keepAlive.minRemainingEpochs} left (at an \`up\`)` : "—";
    out.push(`| ${code(r.resource)} | ${r.blobId ? code(r.blobId) : "—"} | ${r.expiresAt ? code(r.expiresAt) : "unknown"} | ${left} | ${keepAlive} |`);
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
