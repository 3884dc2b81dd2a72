import { z } from "zod";
import { settingsFrom } from "./settings";
import { PATCH_FIELDS, isPlainObject, jsonEqual, ownValue } from "../api";
import { planChange, uploadEpochs } from "./stored-file-plan";
import { wireAsset } from "./stored-file-source";
import { code } from "./markdown";
import { recordedManifest } from "./folder-entries";
import { isStoredFileType, isStoredFolderType } from "./resource-types";
import type { StoredFileState } from "./stored-file-schema";
import { parseState } from "./stored-file-state";

/**
 * The pull-request summary: reads `pulumi preview --json` and says, per StoredFile, what a merge
 * will change and buy. It runs the provider's own planChange on each step's recorded outputs and
 * declared inputs, so the summary and the apply cannot disagree.
 */

// Only what is needed of the preview's JSON; the rest of it is ignored.
const ResourceStateSchema = z.object({
  urn: z.string().optional(),
  type: z.string().optional(),
  inputs: z.record(z.string(), z.unknown()).optional(),
  outputs: z.record(z.string(), z.unknown()).optional(),
});
/** The engine's step kinds that change a resource (the rest only read or keep it). */
const CHANGE_OPS = new Set(["create", "update", "replace", "create-replacement", "delete", "delete-replaced", "discard"]);

const PreviewSchema = z.object({
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
    .default([]),
});

export interface SummaryOptions {
  /** The time the summary plans at (default: now). */
  nowMs?: number;
}

interface FileLine {
  name: string;
  op: string;
  changes: string[];
  epochs: number;
  keepAlive: number;
  newExpiry?: string;
  patch: boolean;
  /** The step uploads content (a create or replace with `source`). */
  upload?: boolean;
}

function metadataChanges(before: unknown, after: Record<string, unknown>): string[] {
  const old = isPlainObject(before) ? before : {};
  const out: string[] = [];
  for (const key of Object.keys(after)) {
    if (!Object.hasOwn(old, key)) out.push(`+${code(key)}`);
    else if (!jsonEqual(old[key], after[key])) out.push(`~${code(key)}`);
  }
  for (const key of Object.keys(old)) if (!Object.hasOwn(after, key)) out.push(`-${code(key)}`);
  return out;
}

/** The stack's settings as the preview's config carries them (`{value}` objects or strings), read as the provider reads them. */
function settingsOf(config: Record<string, unknown> | undefined) {
  return settingsFrom(
    {
      get: (key) => {
        const raw = config?.[key];
        return isPlainObject(raw) ? raw.value : raw;
      },
    },
    {},
  );
}

/** Paths a folder row names one by one before it counts the rest. */
const FOLDER_PATHS_LISTED = 10;

/**
 * A one-resource folder's row: its files added, changed and removed, from the manifests (what the
 * preview compares). Uploads are the added and changed contents; what each entry buys is decided
 * at `up` from the expiry it reads (a folder's files are listed, not priced).
 */
function folderLine(step: {
  op: string;
  urn: string;
  oldState?: { inputs?: Record<string, unknown>; outputs?: Record<string, unknown> };
  newState?: { inputs?: Record<string, unknown> };
}): FileLine | undefined {
  const name = step.urn.split("::").pop() ?? step.urn;
  if (step.op === "delete") {
    return { name, op: "delete", changes: ["folder no longer managed; no request, its files keep their periods"], epochs: 0, keepAlive: 0, patch: false };
  }
  // The manifest the last run compared (its inputs), else the one its outputs record.
  const compared = step.oldState?.inputs?.manifest;
  const before = isPlainObject(compared) ? (compared as Record<string, string>) : recordedManifest(step.oldState?.outputs ?? {});
  const after = (isPlainObject(step.newState?.inputs?.manifest) ? step.newState?.inputs?.manifest : {}) as Record<string, string>;
  const marks: string[] = [];
  for (const rel of Object.keys(after).sort()) if (ownValue(before, rel) === undefined) marks.push(`+${code(rel)}`);
  for (const rel of Object.keys(after).sort()) if (ownValue(before, rel) !== undefined && before[rel] !== after[rel]) marks.push(`~${code(rel)}`);
  for (const rel of Object.keys(before).sort()) if (ownValue(after, rel) === undefined) marks.push(`-${code(rel)}`);
  const listed = marks.slice(0, FOLDER_PATHS_LISTED).join(" ") + (marks.length > FOLDER_PATHS_LISTED ? ` … (${marks.length - FOLDER_PATHS_LISTED} more)` : "");
  const contents = new Set(Object.values(before));
  const uploads = new Set(Object.values(after).filter((h) => !contents.has(h))).size;
  const changes = [
    `folder: ${Object.keys(after).length} file(s)${marks.length ? `; ${listed}` : "; values changed"}${uploads ? `; ${uploads} upload(s)` : ""}`,
  ];
  return { name, op: step.op === "create" ? "create" : "update", changes, epochs: 0, keepAlive: 0, patch: false, upload: step.op === "create" || uploads > 0 };
}

export function summarizePreview(preview: unknown, options: SummaryOptions = {}): string {
  const parsed = PreviewSchema.safeParse(preview);
  if (!parsed.success) {
    throw new Error(`not the output of \`pulumi preview --json\`: ${parsed.error.issues[0]?.path.join(".") || "body"}: ${parsed.error.issues[0]?.message}`);
  }
  const settings = settingsOf(parsed.data.config);
  const epochMs = settings.epochSeconds * 1000;
  const clock = { nowMs: options.nowMs ?? Date.now(), epochMs, warnWithinEpochs: settings.expiryWarningEpochs };
  const lines: FileLine[] = [];
  const notices: string[] = [];

  for (const step of parsed.data.steps) {
    const type = step.newState?.type ?? step.oldState?.type ?? step.urn.split("::")[2];
    if (isStoredFolderType(type) && CHANGE_OPS.has(step.op)) {
      const folder = folderLine(step);
      if (folder) lines.push(folder);
      continue;
    }
    // Only steps that change something: not `same`, nor the `refresh` and `read` steps of a
    // `preview --refresh`, which would add a row for every unchanged file.
    if (!isStoredFileType(type) || !CHANGE_OPS.has(step.op)) continue;
    const name = step.urn.split("::").pop() ?? step.urn;
    const news = step.newState?.inputs ?? {};
    const olds: StoredFileState = parseState(step.oldState?.outputs);
    if (step.op === "delete" || step.op === "delete-replaced" || step.op === "discard") {
      if (step.op === "delete")
        lines.push({ name, op: "delete", changes: ["no longer managed; no request, the file keeps its period"], epochs: 0, keepAlive: 0, patch: false });
      continue;
    }
    if (step.op === "create-replacement") continue; // reported once, as the replace
    const content = wireAsset(news.source);
    if (step.op === "create") {
      const declared = uploadEpochs(news, clock);
      // An upload buys at least one epoch: the declared ones, else the service's one by default.
      const epochs = content ? Math.max(declared, 1) : declared;
      const changes = content
        ? [
            `upload ${code(content.path ?? "(text)")}${content.hash ? ` (sha256 ${content.hash.slice(0, 12)}…)` : ""}${declared < 1 ? ", stored 1 epoch (the upload's minimum)" : ""}`,
          ]
        : [`adopt ${code(news.blobId)}`];
      for (const f of PATCH_FIELDS) {
        const v = news[f];
        if (isPlainObject(v)) changes.push(`${f}: ${Object.keys(v).length} key(s)`);
        else if (typeof v === "string") changes.push(`${f} → ${code(v)}`);
      }
      if (isPlainObject(news.keepAlive)) changes.push("keep-alive on (what it buys depends on the expiry found)");
      lines.push({ name, op: "create", changes, epochs, keepAlive: 0, patch: false, upload: Boolean(content) });
      continue;
    }
    const plan = planChange(olds, news, clock);
    if (plan.replace) {
      // The replacement is a new resource: it adopts the new file and buys all declared epochs;
      // the old file's expiry and keep-alive no longer matter to this stack.
      const declared = uploadEpochs(news, clock);
      const epochs = content ? Math.max(declared, 1) : declared;
      const old = `the old file ${code(olds.blobId)} is left as it is${olds.expiresAt ? `, stored until ${olds.expiresAt}` : ""}`;
      const changes = [
        content
          ? `**replace**: new content${olds.sourceHash && content.hash ? ` (sha256 ${olds.sourceHash.slice(0, 12)}… → ${content.hash.slice(0, 12)}…)` : ""}, uploaded as a new file; ${old}`
          : `**replace**: blobId ${code(olds.blobId)} → ${code(news.blobId)} (${old})`,
      ];
      lines.push({ name, op: "replace", changes, epochs, keepAlive: 0, patch: false, upload: Boolean(content) });
      continue;
    }
    const changes: string[] = [];
    for (const f of PATCH_FIELDS) {
      if (plan.patch?.[f] === undefined) continue;
      const declared = news[f];
      // An object (metadata) is patched key by key, so its change is shown key by key.
      if (isPlainObject(declared)) changes.push(`${f} ${metadataChanges(olds[f], declared).join(" ")}`);
      else changes.push(`${f} ${olds[f] !== undefined ? `${code(olds[f])} ` : ""}→ ${code(declared)}`);
    }
    const byDate = plan.changedFields.includes("retainUntil") && !plan.changedFields.includes("retentionEpochs");
    if (plan.retentionIncrease > 0 && !byDate) {
      changes.push(`retentionEpochs ${olds.retentionEpochs ?? 0} → ${String(news.retentionEpochs)}`);
    }
    if (plan.changedFields.includes("retainUntil")) changes.push(`retainUntil ${code(olds.retainUntil ?? "none")} → ${code(news.retainUntil ?? "none")}`);
    if (plan.changedFields.includes("contentType")) {
      const served = olds.mimeType ? `; stored bytes keep their type, served as ${code(olds.mimeType)}` : "";
      changes.push(`contentType ${code(olds.contentType ?? "detected")} → ${code(news.contentType ?? "detected")}${served}`);
    }
    if (plan.changedFields.includes("keepAlive")) changes.push(`keep-alive ${isPlainObject(news.keepAlive) ? `→ ${code(news.keepAlive)}` : "changed"}`);
    if (plan.keepAliveEpochs > 0) changes.push(`keep-alive renewal due (${plan.remainingBefore} epoch(s) left)`);
    for (const n of plan.notices) if (!n.startsWith("keep-alive renewal due")) notices.push(`${code(name)}: ${n}`);
    for (const problem of [plan.expiredProblem, plan.horizonProblem]) if (problem) notices.push(`${code(name)}: **will fail**: ${problem}`);
    const expires = olds.expiresAt ? Date.parse(olds.expiresAt) : Number.NaN;
    const newExpiry = plan.renewEpochs > 0 && !Number.isNaN(expires) ? new Date(expires + plan.renewEpochs * epochMs).toISOString() : undefined;
    lines.push({
      name,
      op: step.op,
      changes,
      epochs: plan.retentionIncrease,
      keepAlive: plan.keepAliveEpochs,
      newExpiry,
      patch: plan.patch !== undefined,
    });
  }

  const out: string[] = ["### Tuskr files in this change", ""];
  if (lines.length === 0) {
    out.push("No StoredFile changes: nothing is sent to the service and no epochs are bought.");
  } else {
    out.push("| File | Step | What changes | Epochs to buy | New expiry |", "|---|---|---|---|---|");
    // By name: the engine's step order varies with parallelism, a review should not.
    lines.sort((a, b) => a.name.localeCompare(b.name));
    for (const l of lines) {
      const epochs = l.epochs + l.keepAlive === 0 ? "—" : `${l.epochs + l.keepAlive}${l.keepAlive ? ` (keep-alive ${l.keepAlive})` : ""}`;
      out.push(`| ${code(l.name)} | ${l.op} | ${l.changes.join("; ") || "—"} | ${epochs} | ${l.newExpiry ?? "—"} |`);
    }
    const count = (op: string) => lines.filter((l) => l.op === op).length;
    const bought = lines.reduce((n, l) => n + l.epochs + l.keepAlive, 0);
    // An upload buys its epochs in the upload itself: no renew is sent for it.
    const renews = lines.filter((l) => !l.upload && l.epochs + l.keepAlive > 0).length;
    out.push(
      "",
      `**Totals:** ${lines.filter((l) => l.op === "create" && !l.upload).length} adopted, ` +
        `${lines.some((l) => l.upload) ? `${lines.filter((l) => l.upload).length} uploaded, ` : ""}${count("update")} updated, ${count("replace")} replaced, ${count("delete")} no longer managed; ` +
        `${lines.filter((l) => l.patch).length} PATCH on existing files, ${renews} renew(s), **${bought} epoch(s) to buy**` +
        (lines.some((l) => l.op === "create" || l.op === "replace")
          ? " (adopted files: declared epochs; keep-alive, if any, decides on the expiry it finds)."
          : "."),
    );
  }
  if (notices.length > 0) out.push("", "**Notices**", "", ...[...new Set(notices)].map((n) => `- ${n}`));
  return `${out.join("\n")}\n`;
}
