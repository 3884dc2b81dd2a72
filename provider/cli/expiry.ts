import { z } from "zod";
import { isPlainObject } from "../../api";
import { earliestOf, firstPaths, fromOutputTexts, recordedEntryCount, recordedManifest, unpackEntries } from "../folder/entries";
import { readInput } from "./input";
import { code, markdown } from "./markdown";
import { SECRET_SIG, SIG_KEY } from "../engine/markers";
import { folderOfContentResource, isStoredFileType, isStoredFolderType, urnName } from "../engine/urns";
import { CONFIG_KEYS, configOfSettings, settingsFrom } from "../config/settings";
import { remainingEpochs } from "../file/plan";
import { parseState } from "../file/state";
import { StoredFolderStateSchema } from "../folder/schema";

/**
 * The alarm: each managed file's expiry from `pulumi stack export`, failing when any ends within
 * the warning window, so a scheduled job's failure is the alert.
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
  /** A folder whose entries could not all be read (secret, or malformed): the row is the folder's, its soonest end or unknown. */
  entriesUnread?: true;
}

export interface ExpiryReport {
  withinEpochs: number;
  /** Where the window and the epoch's length come from: `--config`, the export's tuskr provider (plugin stacks), or the defaults. */
  settingsFrom: "config" | "provider" | "defaults";
  epochSeconds: number;
  /** Settings the config given lists without a value (secret ones, unless shown): counted without them. */
  unreadSettings: string[];
  rows: ExpiryRow[];
  /** Whether any row raises the alarm (the CLI exits 1). */
  alarm: boolean;
}

// Only what the report reads of `pulumi stack export`. A new stack's export has no `resources`.
const ResourceSchema = z.object({
  urn: z.string().optional(),
  type: z.string(),
  custom: z.boolean().optional(),
  parent: z.string().optional(),
  inputs: z.record(z.string(), z.unknown()).optional(),
  outputs: z.record(z.string(), z.unknown()).optional(),
});
const ExportSchema = z.object({
  version: z.literal(3),
  deployment: z.object({ resources: z.array(ResourceSchema).optional() }),
});
type Resource = z.infer<typeof ResourceSchema>;

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/**
 * The outputs with each secret that `pulumi stack export --show-secrets` shows (`{sig, plaintext:
 * JSON text}`) read as its value; a secret still encrypted (`ciphertext`) stays as it is, unread.
 */
function revealed(outputs: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(outputs)) {
    if (isPlainObject(value) && value[SIG_KEY] === SECRET_SIG && typeof value.plaintext === "string") {
      try {
        out[key] = JSON.parse(value.plaintext);
      } catch {
        out[key] = undefined;
      }
    } else out[key] = value;
  }
  return out;
}

/**
 * The report's settings: `pulumi config --json` output if given, else the provider inputs a plugin
 * stack's export carries, else environment and defaults. A TypeScript stack's export carries none.
 */
function settingsOf(resources: Resource[], config: Record<string, unknown> | undefined) {
  const provider = resources.find((r) => r.type === "pulumi:providers:tuskr");
  const inputs = isPlainObject(provider?.inputs) ? provider.inputs : undefined;
  const fromProvider = configOfSettings(inputs ?? {});
  if (!config) return { settings: settingsFrom(fromProvider), from: inputs ? ("provider" as const) : ("defaults" as const), unread: [] };
  // Key by key: the config's value, else the provider's. A secret one is listed without its value.
  const entry = (key: string) => (isPlainObject(config[key]) ? (config[key] as Record<string, unknown>) : undefined);
  const unread = [CONFIG_KEYS.epochSeconds, CONFIG_KEYS.expiryWarningEpochs].filter((key) => entry(key) !== undefined && entry(key)?.value === undefined);
  return { settings: settingsFrom({ get: (key) => entry(key)?.value ?? fromProvider.get(key) }), from: "config" as const, unread };
}

/** Reads a stack export (`pulumi stack export`); throws NotTheInput when it is not one. */
export function expiryReport(exported: unknown, options: { withinEpochs?: number; nowMs?: number; config?: Record<string, unknown> } = {}): ExpiryReport {
  const resources = readInput(ExportSchema, exported, "`pulumi stack export`", "version 3 with `deployment.resources`").deployment.resources ?? [];
  const { settings, from, unread } = settingsOf(resources, options.config);
  const withinEpochs = options.withinEpochs ?? settings.expiryWarningEpochs;
  const clock = { nowMs: options.nowMs ?? Date.now(), epochMs: settings.epochSeconds * 1000 };
  const rows: ExpiryRow[] = [];
  const row = (resource: string, values: Record<string, unknown>): ExpiryRow => {
    const expiresAt = str(values.expiresAt);
    // Counted in the service's epoch as the file's state records it (the setting is a first guess).
    const seen = parseState(values).epochMsSeen;
    const left = remainingEpochs(expiresAt, typeof seen === "number" ? { ...clock, epochMs: seen } : clock);
    const ka = isPlainObject(values.keepAlive) ? values.keepAlive : undefined;
    // Only a policy of two counts is one (a secret one is an encrypted object: not shown).
    const keepAlive =
      ka && Number.isSafeInteger(ka.minRemainingEpochs) && Number.isSafeInteger(ka.renewEpochs)
        ? { minRemainingEpochs: ka.minRemainingEpochs as number, renewEpochs: ka.renewEpochs as number }
        : undefined;
    return { resource, blobId: str(values.blobId), expiresAt, epochsLeft: left, keepAlive, alarm: left === undefined || left <= withinEpochs };
  };
  const byUrn = new Map(resources.map((r) => [r.urn, r]));
  for (const r of resources) {
    const urn = str(r.urn);
    const name = urn ? urnName(urn) : "?";
    // Read field by field: a secret output is an encrypted object, and must not hide the rest.
    const outputs = revealed(r.outputs ?? {});
    if (isStoredFileType(r.type)) rows.push(row(contentFileName(name, outputs, r.parent === undefined ? undefined : byUrn.get(r.parent)) ?? name, outputs));
    // The TypeScript StoredFolder's component has the plugin resource's type token; it keeps
    // nothing itself (its files, or its one resource, are rows of their own); an export marks it
    // `custom: false` (a resource without the field is read, so a trimmed export loses nothing).
    else if (isStoredFolderType(r.type) && r.custom !== false) rows.push(...folderRows(name, outputs, row));
  }
  rows.sort((a, b) => (a.epochsLeft ?? -1) - (b.epochsLeft ?? -1) || a.resource.localeCompare(b.resource));
  return { withinEpochs, settingsFrom: from, epochSeconds: settings.epochSeconds, unreadSettings: unread, rows, alarm: rows.some((r) => r.alarm) };
}

/**
 * A folder's per-content StoredFile is named by hash, so it is shown as `folder/path` using the
 * folder's `blobIds` output, else by the file's name.
 */
function contentFileName(name: string, outputs: Record<string, unknown>, parent: Resource | undefined): string | undefined {
  const folder = folderOfContentResource(name);
  if (folder === undefined) return undefined;
  const byPath = isStoredFolderType(parent?.type) && isPlainObject(parent?.outputs) ? revealed(parent.outputs).blobIds : undefined;
  const paths =
    isPlainObject(byPath) && typeof outputs.blobId === "string"
      ? Object.keys(byPath)
          .filter((rel) => byPath[rel] === outputs.blobId)
          .sort()
      : [];
  if (paths.length > 0) return `${folder}/${paths[0]}${paths.length > 1 ? ` (and ${paths.length - 1} more path(s))` : ""}`;
  return typeof outputs.name === "string" ? `${folder}/${outputs.name}` : undefined;
}

/**
 * A one-resource folder's rows, one per content. When its entries cannot all be read (secret,
 * malformed, incomplete) a row with `earliestExpiresAt`, never secret, is added; without it the
 * expiry is unknown, which raises the alarm.
 */
function folderRows(name: string, outputs: Record<string, unknown>, row: (resource: string, values: Record<string, unknown>) => ExpiryRow): ExpiryRow[] {
  const parsed = StoredFolderStateSchema.safeParse(fromOutputTexts(outputs));
  const state = parsed.success ? parsed.data : undefined;
  const manifest = state ? recordedManifest(state) : {};
  const entries = state ? unpackEntries(state.entries, { manifest, blobIds: state.blobIds ?? {}, urls: state.urls ?? {} }) : new Map();
  const firstPath = firstPaths(manifest);
  const paths = new Map<string, number>();
  for (const hash of Object.values(manifest)) paths.set(hash, (paths.get(hash) ?? 0) + 1);
  const rows = [...entries].map(([hash, entry]) => {
    const more = (paths.get(hash) ?? 1) - 1;
    return row(`${name}/${firstPath.get(hash) ?? hash}${more > 0 ? ` (and ${more} more path(s))` : ""}`, entry as Record<string, unknown>);
  });
  const whole = recordedEntryCount(state?.entries) === entries.size && [...firstPath.keys()].every((hash) => entries.has(hash));
  if (whole) return rows;
  // The folder's own output, read on its own (a secret or malformed value is none).
  const earliest = earliestOf([outputs.earliestExpiresAt]);
  const keepAlive = isPlainObject(outputs.keepAlive) ? outputs.keepAlive : undefined;
  return [...rows, { ...row(name, { expiresAt: earliest, keepAlive }), entriesUnread: true }];
}

/** The report as Markdown: a table, soonest first, and one line that says whether to act. */
export function expiryMarkdown(report: ExpiryReport): string {
  const out = ["### Tuskr files: expiry", ""];
  if (report.rows.length === 0) return markdown([out[0], "No file kept by pulumi-tuskr in this stack."]);
  out.push("| File | blobId | Expires | Epochs left | Keep-alive |", "|---|---|---|---:|---|");
  for (const r of report.rows) {
    const left = r.epochsLeft === undefined ? "unknown" : r.epochsLeft === 0 ? "**expired**" : `${r.alarm ? "**" : ""}${r.epochsLeft}${r.alarm ? "**" : ""}`;
    const keepAlive = r.keepAlive ? `renews ${r.keepAlive.renewEpochs} when fewer than ${r.keepAlive.minRemainingEpochs} left (at an \`up\`)` : "—";
    const expires = r.entriesUnread
      ? `${r.expiresAt ? `${code(r.expiresAt)} (the soonest of its files)` : "unknown"}: its files' entries are secret or unreadable (\`pulumi stack export --show-secrets\` lists each)`
      : r.expiresAt
        ? code(r.expiresAt)
        : "unknown";
    out.push(`| ${code(r.resource)} | ${r.blobId ? code(r.blobId) : "—"} | ${expires} | ${left} | ${keepAlive} |`);
  }
  const due = report.rows.filter((r) => r.alarm).length;
  out.push(
    "",
    due > 0
      ? `**${due} file(s) end within ${report.withinEpochs} epoch(s) or have ended**: raise \`retentionEpochs\`, add \`keepAlive\`, or run \`pulumi up\` (keep-alive renews only during an \`up\`).`
      : `No file ends within ${report.withinEpochs} epoch(s).`,
  );
  if (report.unreadSettings.length > 0) {
    out.push(
      "",
      `Counted without ${report.unreadSettings.map((k) => code(k)).join(" and ")}: secret in the config given, so listed without a value ` +
        "(`pulumi config --json --show-secrets` shows it).",
    );
  }
  if (report.settingsFrom === "defaults") {
    out.push(
      "",
      `Counted with the default settings (an epoch of ${report.epochSeconds} s): this export carries none, as a TypeScript stack's does not. ` +
        "If the stack's config sets `tuskr:epochSeconds` or `tuskr:expiryWarningEpochs`, pass it: `--config <(pulumi config --json)`.",
    );
  }
  return markdown(out);
}
