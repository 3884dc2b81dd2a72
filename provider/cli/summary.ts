import { z } from "zod";
import { settingsFrom } from "../config/settings";
import { PATCH_FIELDS, isPlainObject, jsonEqual, ownValue } from "../../api";
import { type PlanClock, keepAliveAfterUpload, planChange, uploadEndsAtDate, uploadEpochs } from "../file/plan";
import { wireAsset } from "../file/source";
import { code } from "./markdown";
import { fromOutputTexts, pathMap, recordedEntryCount, recordedManifest, unpackEntries } from "../folder/entries";
import { manifestEntries } from "../folder/walk";
import { ASSET_SIG, SIG_KEY, UNKNOWN } from "../engine/markers";
import { isStoredFileType, isStoredFolderType } from "../engine/urns";
import type { DeclaredInputs, StoredFileState } from "../file/schema";
import { FOLDER_INPUT_FIELDS, SHARED_FIELDS } from "../folder/schema";
import { parseState } from "../file/state";

/**
 * The pull-request summary: reads `pulumi preview --json` and says, per StoredFile, what a merge
 * will change and buy. It runs the provider's own planChange on each step's recorded outputs and
 * declared inputs, so the summary and the apply cannot disagree.
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
  /** The engine's and the providers' messages; an error among them means the preview failed. */
  diagnostics: z.array(z.object({ severity: z.string().optional() }).passthrough()).optional(),
});

/** How many errors the preview reported: a failed preview (its output is still JSON) plans nothing. */
export function previewErrors(preview: unknown): number {
  const parsed = PreviewSchema.safeParse(preview);
  return parsed.success ? (parsed.data.diagnostics ?? []).filter((d) => d.severity === "error").length : 0;
}

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
  /** A folder's: its PATCHes and renews (a file's are one at most, said by `patch` and its epochs). */
  patches?: number;
  renews?: number;
  /** What it buys cannot be counted from the preview (a folder's, say why). */
  notCounted?: boolean;
  /** A value it may PATCH is not shown (secret, or known only at `up`): its PATCHes are not counted. */
  patchesHidden?: boolean;
  /** Keep-alive on new files: what it buys is decided on the expiry found. */
  keepAliveFound?: boolean;
  /** A folder's: the contents it uploads. */
  uploads?: number;
  /** Uploads whose end is a `retainUntil` date: each may need one more epoch, renewed after it. */
  toDate?: number;
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

/** What `pulumi preview --json` shows for a secret value; an input known only at `up` is the engine's unknown marker. */
const SHOWN_SECRET = "[secret]";
const holds = (v: unknown, marker: string): boolean =>
  v === marker || (Array.isArray(v) ? v.some((x) => holds(x, marker)) : isPlainObject(v) && Object.values(v).some((x) => holds(x, marker)));
/** The declared inputs a purchase follows: one not shown leaves the epochs uncounted. */
const PURCHASE_FIELDS: readonly string[] = ["retentionEpochs", "retainUntil", "keepAlive"];

/**
 * A StoredFile's recorded outputs and declared inputs without the inputs the preview does not
 * show (secret in either, or known only at `up`; the bookkeeping fields are never declared):
 * those cannot be compared, and left in, a recorded `"[secret]"` where an object belongs would
 * make the whole state unreadable.
 */
function withoutHidden(olds: Record<string, unknown>, news: Record<string, unknown>) {
  const fields = [...new Set([...Object.keys(olds), ...Object.keys(news)])].filter((f) => !f.startsWith("__")).sort();
  const secret = fields.filter((f) => holds(olds[f], SHOWN_SECRET) || holds(news[f], SHOWN_SECRET));
  const unknown = fields.filter((f) => !secret.includes(f) && holds(news[f], UNKNOWN));
  const hidden = [...secret, ...unknown];
  const keep = (values: Record<string, unknown>) => Object.fromEntries(Object.entries(values).filter(([f]) => !hidden.includes(f)));
  return { olds: keep(olds), news: keep(news), secret, unknown, endHidden: hidden.some((f) => PURCHASE_FIELDS.includes(f)) };
}

/** Whether a value a PATCH sets is among those not shown. */
const hidesPatch = ({ secret, unknown }: { secret: string[]; unknown: string[] }): boolean =>
  [...secret, ...unknown].some((f) => (PATCH_FIELDS as readonly string[]).includes(f));

/** What a row says of the inputs it could not compare. */
function hiddenNote({ secret, unknown }: { secret: string[]; unknown: string[] }, compared: boolean): string[] {
  const not = compared ? ", not compared" : "";
  return [
    ...(secret.length > 0 ? [`${secret.map(code).join(", ")}: secret${not}`] : []),
    ...(unknown.length > 0 ? [`${unknown.map(code).join(", ")}: known only at \`up\`${not}`] : []),
  ];
}

/** What an upload to a `retainUntil` date may add (the plan's rule: `uploadEndsAtDate`). */
const DATE_TOP_UP =
  "up to 1 more epoch, by a renew after the upload when the service counts from the start of its current epoch (known only from the upload's answer); the date's epochs are renewed after the upload, counted in the length its answers show";

/** Whether a file's upload ends at its `retainUntil` date (1, said in `changes`) or not (0). */
function uploadToDate(uploads: boolean, shown: { endHidden: boolean }, news: DeclaredInputs, clock: PlanClock, changes: string[]): number {
  if (!uploads || shown.endHidden || !uploadEndsAtDate(news, clock)) return 0;
  changes.push(`to the \`retainUntil\` date: ${DATE_TOP_UP}`);
  return 1;
}

/** Paths a folder row names one by one before it counts the rest. */
const FOLDER_PATHS_LISTED = 10;

/** A folder's shared values that no purchase follows: left out of its plan when not shown. */
const FOLDER_LOOKS: readonly string[] = SHARED_FIELDS.filter((f) => !PURCHASE_FIELDS.includes(f));

/**
 * What a one-resource folder's entries buy and patch, each planned as the folder's `up` plans it
 * (from the expiry its state records; the `up` reads it again before buying): a content with no
 * recorded entry is uploaded with its own epochs (keep-alive, if declared, then decides on the
 * expiry it finds). A tag or metadata not shown is left out; a string when the preview does not
 * show what the epochs need: why.
 */
function folderPurchases(outputs: Record<string, unknown> | undefined, declared: Record<string, unknown>, clock: PlanClock) {
  const recorded = fromOutputTexts(outputs ?? {});
  if (holds(recorded.entries, SHOWN_SECRET)) return "its recorded entries are secret in the preview";
  const shown = withoutHidden({}, declared);
  const decisive = [...shown.secret, ...shown.unknown].filter((f) => !FOLDER_LOOKS.includes(f));
  if (decisive.length > 0) return `${decisive.map(code).join(", ")} ${shown.unknown.includes(decisive[0]) ? "known only at `up`" : "secret"}`;
  // A folder created now has none; one recorded before has them (an empty folder's too).
  if (outputs && recordedEntryCount(recorded.entries) === undefined) return "its recorded entries are not in the preview";
  const manifest = recordedManifest(recorded);
  const entries = unpackEntries(recorded.entries, { manifest, blobIds: pathMap(recorded.blobIds), urls: pathMap(recorded.urls) });
  const out = { epochs: 0, keepAlive: 0, renews: 0, patches: 0, newKeptAlive: 0, newRenewed: 0, toDate: 0, shown };
  for (const entry of manifestEntries(shown.news)) {
    const inputs = { ...entry.values, source: { [SIG_KEY]: ASSET_SIG, hash: entry.hash } } as DeclaredInputs;
    const before = entries.get(entry.hash);
    const plan = before ? planChange(before, inputs, clock) : undefined;
    if (!plan || plan.replace) {
      out.epochs += Math.max(uploadEpochs(inputs, clock), 1);
      // Keep-alive right after the upload, on the expiry it answers: counted when that is known.
      const kept = keepAliveAfterUpload(inputs, clock);
      if (kept?.known) {
        out.keepAlive += kept.epochs;
        if (kept.epochs > 0) {
          out.renews++;
          out.newRenewed++;
        }
      } else if (kept) out.newKeptAlive++;
      if (uploadEndsAtDate(inputs, clock)) out.toDate++;
      continue;
    }
    out.epochs += plan.retentionIncrease;
    out.keepAlive += plan.keepAliveEpochs;
    if (plan.retentionIncrease + plan.keepAliveEpochs > 0) out.renews++;
    if (plan.patch) out.patches++;
  }
  return out;
}

/**
 * A one-resource folder's row: its files added, changed and removed, from the manifests (what the
 * preview compares), and what its entries buy. Uploads are the added and changed contents.
 */
function folderLine(
  step: {
    op: string;
    urn: string;
    oldState?: { inputs?: Record<string, unknown>; outputs?: Record<string, unknown> };
    newState?: { inputs?: Record<string, unknown> };
  },
  clock: PlanClock,
): FileLine | undefined {
  const name = step.urn.split("::").pop() ?? step.urn;
  if (step.op === "delete") {
    return { name, op: "delete", changes: ["folder no longer managed; no request, its files keep their periods"], epochs: 0, keepAlive: 0, patch: false };
  }
  // The manifest the last run compared (its inputs), else the one its outputs record.
  const compared = step.oldState?.inputs?.manifest;
  const before = isPlainObject(compared) ? (compared as Record<string, string>) : recordedManifest(step.oldState?.outputs ?? {});
  const news = step.newState?.inputs ?? {};
  const after = (isPlainObject(news.manifest) ? news.manifest : {}) as Record<string, string>;
  const marks: string[] = [];
  for (const rel of Object.keys(after).sort()) if (ownValue(before, rel) === undefined) marks.push(`+${code(rel)}`);
  for (const rel of Object.keys(after).sort()) if (ownValue(before, rel) !== undefined && before[rel] !== after[rel]) marks.push(`~${code(rel)}`);
  for (const rel of Object.keys(before).sort()) if (ownValue(after, rel) === undefined) marks.push(`-${code(rel)}`);
  const listed = marks.slice(0, FOLDER_PATHS_LISTED).join(" ") + (marks.length > FOLDER_PATHS_LISTED ? ` … (${marks.length - FOLDER_PATHS_LISTED} more)` : "");
  const contents = new Set(Object.values(before));
  const uploads = new Set(Object.values(after).filter((h) => !contents.has(h))).size;
  // No path changed: a declared value did, or (declared as before) its entries are brought to what is declared.
  const olds = step.oldState?.inputs;
  const changedValues = olds ? FOLDER_INPUT_FIELDS.filter((f) => !jsonEqual(olds[f] ?? undefined, news[f] ?? undefined)) : [];
  const what = marks.length
    ? listed
    : !olds || changedValues.length > 0
      ? `values changed${changedValues.length > 0 ? `: ${changedValues.map(code).join(", ")}` : ""}`
      : "entries brought to what is declared (a keep-alive renewal, or what an earlier `up` did not finish)";
  const bought = folderPurchases(step.op === "create" ? undefined : (step.oldState?.outputs ?? {}), news, clock);
  const notes =
    typeof bought === "string"
      ? [`epochs not counted: ${bought}`]
      : [
          ...hiddenNote(bought.shown, step.op !== "create"),
          ...(bought.newRenewed ? [`keep-alive: ${bought.newRenewed} new file(s) renewed right after the upload (too few epochs left)`] : []),
          ...(bought.newKeptAlive ? [`keep-alive on ${bought.newKeptAlive} new file(s) (what it buys depends on the expiry found)`] : []),
          ...(bought.toDate ? [`${bought.toDate} upload(s) to the \`retainUntil\` date: ${DATE_TOP_UP}`] : []),
        ];
  const changes = [`folder: ${Object.keys(after).length} file(s); ${what}${uploads ? `; ${uploads} upload(s)` : ""}`, ...notes];
  // Counted as uploaded when created (as a file is); an update's uploads are in its row.
  const line = { name, op: step.op === "create" ? "create" : "update", changes, upload: step.op === "create", uploads };
  // Nothing of its entries is planned: neither what they buy nor what they PATCH.
  if (typeof bought === "string") return { ...line, epochs: 0, keepAlive: 0, patch: false, notCounted: true, patchesHidden: true };
  return {
    ...line,
    epochs: bought.epochs,
    keepAlive: bought.keepAlive,
    patch: bought.patches > 0,
    patches: bought.patches,
    renews: bought.renews,
    patchesHidden: bought.shown.secret.length + bought.shown.unknown.length > 0,
    keepAliveFound: bought.newKeptAlive > 0,
    toDate: bought.toDate,
  };
}

/** What the totals cannot count exactly, said after them. */
function totalsCaveats(lines: FileLine[]): string {
  const counted = lines.filter((l) => !l.notCounted);
  const toDate = counted.reduce((n, l) => n + (l.toDate ?? 0), 0);
  const caveats = [
    ...(lines.some((l) => l.op === "create" || l.op === "replace" || l.keepAliveFound)
      ? ["adopted files: declared epochs; keep-alive, if any, decides on the expiry it finds"]
      : []),
    ...(counted.some((l) => l.upload || (l.uploads ?? 0) > 0)
      ? ["uploads: the declared epochs, or only what the declared end lacks when the service already holds the content"]
      : []),
    ...(toDate ? [`up to ${toDate} more by renews after uploads to a \`retainUntil\` date`] : []),
  ];
  return caveats.length ? ` (${caveats.join("; ")}).` : ".";
}

export function summarizePreview(preview: unknown, options: SummaryOptions = {}): string {
  const parsed = PreviewSchema.safeParse(preview);
  if (!parsed.success) {
    throw new Error(`not the output of \`pulumi preview --json\`: ${parsed.error.issues[0]?.path.join(".") || "body"}: ${parsed.error.issues[0]?.message}`);
  }
  const errors = previewErrors(preview);
  if (errors > 0) {
    // Its steps stop where it failed: a summary of them would understate the change. The messages
    // are left to the preview's own output (a comment is no place to repeat what a provider said).
    return `### Tuskr files in this change\n\n**The preview failed** (${errors} error(s)): nothing is summarized, and \`pulumi up\` would fail as well. See the preview's output.\n`;
  }
  const settings = settingsOf(parsed.data.config);
  const epochMs = settings.epochSeconds * 1000;
  const clock = { nowMs: options.nowMs ?? Date.now(), epochMs, warnWithinEpochs: settings.expiryWarningEpochs };
  const lines: FileLine[] = [];
  const notices: string[] = [];

  for (const step of parsed.data.steps) {
    const type = step.newState?.type ?? step.oldState?.type ?? step.urn.split("::")[2];
    // The TypeScript StoredFolder's component shares the plugin resource's type: it keeps nothing itself.
    if (isStoredFolderType(type) && (step.newState ?? step.oldState)?.custom === false) continue;
    if (isStoredFolderType(type) && CHANGE_OPS.has(step.op)) {
      const folder = folderLine(step, clock);
      if (folder) lines.push(folder);
      continue;
    }
    // Only steps that change something: not `same`, nor the `refresh` and `read` steps of a
    // `preview --refresh`, which would add a row for every unchanged file.
    if (!isStoredFileType(type) || !CHANGE_OPS.has(step.op)) continue;
    const name = step.urn.split("::").pop() ?? step.urn;
    const shown = withoutHidden(step.oldState?.outputs ?? {}, step.newState?.inputs ?? {});
    const news = shown.news;
    const olds: StoredFileState = parseState(shown.olds);
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
      // After an upload, keep-alive plans on the expiry the upload answers: known unless a date's top-up decides it.
      const kept = content && !shown.endHidden ? keepAliveAfterUpload(news, clock) : undefined;
      if (kept?.known)
        changes.push(
          kept.epochs > 0 ? `keep-alive: buys ${kept.epochs} right after the upload (too few epochs left)` : "keep-alive on (nothing due after the upload)",
        );
      else if (isPlainObject(news.keepAlive)) changes.push("keep-alive on (what it buys depends on the expiry found)");
      const toDate = uploadToDate(Boolean(content), shown, news, clock, changes);
      changes.push(...hiddenNote(shown, false));
      lines.push({
        name,
        op: "create",
        changes,
        epochs,
        keepAlive: kept?.known ? kept.epochs : 0,
        ...(kept?.known && kept.epochs > 0 ? { renews: 1 } : {}),
        keepAliveFound: isPlainObject(news.keepAlive) && !kept?.known,
        patch: false,
        upload: Boolean(content),
        notCounted: shown.endHidden,
        patchesHidden: hidesPatch(shown),
        toDate,
      });
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
      const toDate = uploadToDate(Boolean(content), shown, news, clock, changes);
      changes.push(...hiddenNote(shown, true));
      lines.push({ name, op: "replace", changes, epochs, keepAlive: 0, patch: false, upload: Boolean(content), notCounted: shown.endHidden, toDate });
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
    const endDeclaredBefore = !plan.changedFields.includes("retainUntil") && !plan.changedFields.includes("retentionEpochs");
    if (plan.retentionIncrease > 0 && endDeclaredBefore) {
      // The same end as recorded, not yet reached (a purchase an earlier `up` did not finish, or an
      // expiry a refresh found earlier): the gap is bought, nothing declared changed.
      const end = [
        news.retentionEpochs !== undefined && `retentionEpochs ${String(news.retentionEpochs)}`,
        news.retainUntil && `retainUntil ${code(news.retainUntil)}`,
      ];
      changes.push(
        `the declared end (${end.filter(Boolean).join(", ")}) is past the recorded expiry${olds.expiresAt ? ` ${olds.expiresAt}` : ""}: the gap is bought`,
      );
    } else if (plan.retentionIncrease > 0 && !byDate) {
      changes.push(`retentionEpochs ${olds.retentionEpochs ?? 0} → ${String(news.retentionEpochs)}`);
    }
    if (plan.changedFields.includes("retainUntil")) changes.push(`retainUntil ${code(olds.retainUntil ?? "none")} → ${code(news.retainUntil ?? "none")}`);
    if (plan.changedFields.includes("contentType")) {
      const served = olds.mimeType ? `; stored bytes keep their type, served as ${code(olds.mimeType)}` : "";
      changes.push(`contentType ${code(olds.contentType ?? "detected")} → ${code(news.contentType ?? "detected")}${served}`);
    }
    if (plan.changedFields.includes("keepAlive"))
      changes.push(
        `keep-alive ${isPlainObject(news.keepAlive) ? `→ ${code(news.keepAlive)}` : news.keepAlive === undefined || news.keepAlive === null ? "off (nothing sent)" : "changed"}`,
      );
    if (plan.keepAliveEpochs > 0) changes.push(`keep-alive renewal due (${plan.remainingBefore} epoch(s) left)`);
    changes.push(...hiddenNote(shown, true));
    for (const n of plan.notices) if (!n.startsWith("keep-alive renewal due")) notices.push(`${code(name)}: ${n}`);
    for (const problem of [plan.expiredProblem, plan.horizonProblem]) if (problem) notices.push(`${code(name)}: **will fail**: ${problem}`);
    const expires = olds.expiresAt ? Date.parse(olds.expiresAt) : Number.NaN;
    const newExpiry =
      plan.renewEpochs > 0 && !Number.isNaN(expires) ? new Date(expires + plan.renewEpochs * (plan.epoch?.ms ?? epochMs)).toISOString() : undefined;
    lines.push({
      name,
      op: step.op,
      changes,
      epochs: plan.retentionIncrease,
      keepAlive: plan.keepAliveEpochs,
      newExpiry: shown.endHidden ? undefined : newExpiry,
      patch: plan.patch !== undefined,
      notCounted: shown.endHidden,
      patchesHidden: hidesPatch(shown),
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
      const epochs = l.notCounted
        ? "not counted"
        : l.epochs + l.keepAlive === 0
          ? "—"
          : `${l.epochs + l.keepAlive}${l.keepAlive ? ` (keep-alive ${l.keepAlive})` : ""}`;
      out.push(`| ${code(l.name)} | ${l.op} | ${l.changes.join("; ") || "—"} | ${epochs} | ${l.newExpiry ?? "—"} |`);
    }
    const count = (op: string) => lines.filter((l) => l.op === op).length;
    // A row whose purchases are not counted adds none of its own, nor its renews.
    const counted = lines.filter((l) => !l.notCounted);
    const bought = counted.reduce((n, l) => n + l.epochs + l.keepAlive, 0);
    // An upload buys its epochs in the upload itself: no renew is sent for it.
    const renews = counted.reduce((n, l) => n + (l.renews ?? (!l.upload && l.epochs + l.keepAlive > 0 ? 1 : 0)), 0);
    const patches = lines.reduce((n, l) => n + (l.patches ?? (l.patch ? 1 : 0)), 0);
    const notCounted = lines.filter((l) => l.notCounted).length;
    out.push(
      "",
      `**Totals:** ${lines.filter((l) => l.op === "create" && !l.upload).length} adopted, ` +
        `${lines.some((l) => l.upload) ? `${lines.filter((l) => l.upload).length} uploaded, ` : ""}${count("update")} updated, ${count("replace")} replaced, ${count("delete")} no longer managed; ` +
        `${patches} PATCH on existing files${lines.some((l) => l.patchesHidden) ? " (and any of values not shown)" : ""}, ${renews} renew(s)${notCounted ? " (and those of the rows not counted)" : ""}, **${bought} epoch(s) to buy**` +
        (notCounted ? `, and what ${notCounted} row(s) marked "not counted" buy` : "") +
        totalsCaveats(lines),
    );
  }
  if (notices.length > 0) out.push("", "**Notices**", "", ...[...new Set(notices)].map((n) => `- ${n}`));
  return `${out.join("\n")}\n`;
}
