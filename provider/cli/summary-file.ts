import { PATCH_FIELDS, isPlainObject, jsonEqual } from "../../api";
import { type PlanClock, keepAliveAfterUpload, planChange, uploadEpochs } from "../file/plan";
import type { DeclaredInputs, StoredFileState } from "../file/schema";
import { wireAsset } from "../file/source";
import { parseState } from "../file/state";
import { type Phrase, joined, say, value } from "./summary-phrase";
import type { RowStep } from "./summary-preview";
import { type Row, forgetRow, hiddenNote, hidesPatch, uploadToDate, withoutHidden } from "./summary-row";

/**
 * A StoredFile's row, planned by the provider's own planChange on the step's recorded outputs
 * and declared inputs, so the summary and the apply cannot disagree.
 */

type Shown = ReturnType<typeof withoutHidden>;
type Plan = ReturnType<typeof planChange>;
type Clock = PlanClock & { epochMs: number };

/** A file's row, and its notices. */
export function fileRow(step: Extract<RowStep, { kind: "file" }>, clock: Clock, notices: Phrase[]): Row {
  const { name } = step;
  switch (step.action) {
    case "delete":
      return { name, op: "delete", changes: [["no longer managed; no request, the file keeps its period"]], epochs: 0, keepAlive: 0, patch: false };
    case "forget":
      return forgetRow(name);
    case "import":
      return { name, op: "import", changes: [importPhrase(step.importID)], epochs: 0, keepAlive: 0, patch: false, imported: true };
    case "replace-by-import": {
      const olds = parseState(withoutHidden(step.oldState.outputs, {}).olds);
      const changes = [say`**replace** by an import: ${importPhrase(step.importID)}; ${leftAsItIs(olds)}`];
      return { name, op: "replace", changes, epochs: 0, keepAlive: 0, patch: false, imported: true };
    }
    case "create":
      return createRow(name, withoutHidden({}, step.newState.inputs), clock);
    case "update":
    case "replace": {
      const shown = withoutHidden(step.oldState.outputs, step.newState.inputs);
      const olds: StoredFileState = parseState(shown.olds);
      const plan = planChange(olds, shown.news, clock);
      if (plan.replace) return replaceRow(name, shown, olds, clock);
      return updateRow(name, step.action, shown, olds, plan, clock, notices);
    }
  }
}

/** An import reads the file and records it; Pulumi fails it, buying nothing, when the declaration differs from what it read. */
const importPhrase = (blobId: string): Phrase =>
  say`adopt ${value(blobId)} by reading it: one GET, nothing bought (Pulumi refuses the import if the declaration differs)`;

/** A replaced file stays on the service: the stack only stops managing it. */
const leftAsItIs = (olds: StoredFileState): Phrase =>
  say`the old file ${value(olds.blobId)} is left as it is${olds.expiresAt ? `, stored until ${olds.expiresAt}` : ""}`;

function createRow(name: string, shown: Shown, clock: Clock): Row {
  const news = shown.news;
  const content = wireAsset(news.source);
  const declared = uploadEpochs(news, clock);
  // An upload buys at least one epoch: the declared ones, else the service's one by default.
  const epochs = content ? Math.max(declared, 1) : declared;
  const hash = content?.hash ? ` (sha256 ${content.hash.slice(0, 12)}…)` : "";
  const changes: Phrase[] = [
    content
      ? say`upload ${value(content.path ?? "(text)")}${hash}${declared < 1 ? ", stored 1 epoch (the upload's minimum)" : ""}`
      : say`adopt ${value(news.blobId)}`,
  ];
  for (const f of PATCH_FIELDS) {
    const v = news[f];
    if (isPlainObject(v)) changes.push([`${f}: ${Object.keys(v).length} key(s)`]);
    else if (typeof v === "string") changes.push(say`${f} → ${value(v)}`);
  }
  // After an upload, keep-alive plans on the expiry the upload answers: known unless a date's top-up decides it.
  const kept = content && !shown.endHidden ? keepAliveAfterUpload(news, clock) : undefined;
  if (kept?.known)
    changes.push([
      kept.epochs > 0 ? `keep-alive: buys ${kept.epochs} right after the upload (too few epochs left)` : "keep-alive on (nothing due after the upload)",
    ]);
  else if (isPlainObject(news.keepAlive)) changes.push(["keep-alive on (what it buys depends on the expiry found)"]);
  const toDate = uploadToDate(Boolean(content), shown, news, clock, changes);
  changes.push(...hiddenNote(shown, false));
  return {
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
  };
}

/**
 * The replacement is a new resource: it adopts the new file and buys all declared epochs; the
 * old file's expiry and keep-alive no longer matter to this stack.
 */
function replaceRow(name: string, shown: Shown, olds: StoredFileState, clock: Clock): Row {
  const news = shown.news;
  const content = wireAsset(news.source);
  const declared = uploadEpochs(news, clock);
  const epochs = content ? Math.max(declared, 1) : declared;
  const old = leftAsItIs(olds);
  const hashes = olds.sourceHash && content?.hash ? ` (sha256 ${olds.sourceHash.slice(0, 12)}… → ${content.hash.slice(0, 12)}…)` : "";
  const changes = [
    content
      ? say`**replace**: new content${hashes}, uploaded as a new file; ${old}`
      : say`**replace**: blobId ${value(olds.blobId)} → ${value(news.blobId)} (${old})`,
  ];
  const toDate = uploadToDate(Boolean(content), shown, news, clock, changes);
  changes.push(...hiddenNote(shown, true));
  return { name, op: "replace", changes, epochs, keepAlive: 0, patch: false, upload: Boolean(content), notCounted: shown.endHidden, toDate };
}

function metadataChanges(before: unknown, after: Record<string, unknown>): Phrase[] {
  const old = isPlainObject(before) ? before : {};
  const out: Phrase[] = [];
  for (const key of Object.keys(after)) {
    if (!Object.hasOwn(old, key)) out.push(["+", value(key)]);
    else if (!jsonEqual(old[key], after[key])) out.push(["~", value(key)]);
  }
  for (const key of Object.keys(old)) if (!Object.hasOwn(after, key)) out.push(["-", value(key)]);
  return out;
}

function updateRow(name: string, op: "update" | "replace", shown: Shown, olds: StoredFileState, plan: Plan, clock: Clock, notices: Phrase[]): Row {
  const changes = [...patchChanges(shown.news, olds, plan), ...endChanges(shown.news, olds, plan)];
  if (plan.keepAliveEpochs > 0) changes.push([`keep-alive renewal due (${plan.remainingBefore} epoch(s) left)`]);
  changes.push(...hiddenNote(shown, true));
  // A renewal that buys is a change of the row; learning the epoch's length is the stack's, said once (summary.ts).
  for (const n of plan.notices) if (n.kind !== "keep-alive-due" && n.kind !== "length-probe") notices.push(say`${value(name)}: ${n.text}`);
  for (const problem of [plan.expiredProblem, plan.horizonProblem]) if (problem) notices.push(say`${value(name)}: **will fail**: ${problem}`);
  const expires = olds.expiresAt ? Date.parse(olds.expiresAt) : Number.NaN;
  const newExpiry = plan.renewEpochs > 0 && !Number.isNaN(expires) ? new Date(expires + plan.renewEpochs * clock.epochMs).toISOString() : undefined;
  return {
    name,
    op,
    changes,
    epochs: plan.retentionIncrease,
    keepAlive: plan.keepAliveEpochs,
    newExpiry: shown.endHidden ? undefined : newExpiry,
    patch: plan.patch !== undefined,
    notCounted: shown.endHidden,
    patchesHidden: hidesPatch(shown),
  };
}

/** The values a PATCH sends; an object (metadata) is patched key by key, so its change is shown key by key. */
function patchChanges(news: DeclaredInputs, olds: StoredFileState, plan: Plan): Phrase[] {
  const changes: Phrase[] = [];
  for (const f of PATCH_FIELDS) {
    if (plan.patch?.[f] === undefined) continue;
    const declared = news[f];
    if (isPlainObject(declared)) changes.push(say`${f} ${joined(metadataChanges(olds[f], declared), " ")}`);
    else changes.push(say`${f} ${olds[f] !== undefined ? say`${value(olds[f])} ` : ""}→ ${value(declared)}`);
  }
  return changes;
}

/** The end, content type and keep-alive changes. */
function endChanges(news: DeclaredInputs, olds: StoredFileState, plan: Plan): Phrase[] {
  const changes: Phrase[] = [];
  const byDate = plan.changedFields.includes("retainUntil") && !plan.changedFields.includes("retentionEpochs");
  const endDeclaredBefore = !plan.changedFields.includes("retainUntil") && !plan.changedFields.includes("retentionEpochs");
  if (plan.retentionIncrease > 0 && endDeclaredBefore) {
    // The same end as recorded, not yet reached (a purchase an earlier `up` did not finish, or an
    // expiry a refresh found earlier): the gap is bought, nothing declared changed.
    const end = [
      ...(news.retentionEpochs !== undefined ? [[`retentionEpochs ${String(news.retentionEpochs)}`]] : []),
      ...(news.retainUntil ? [say`retainUntil ${value(news.retainUntil)}`] : []),
    ];
    const recorded = olds.expiresAt ? ` ${olds.expiresAt}` : "";
    changes.push(say`the declared end (${joined(end, ", ")}) is past the recorded expiry${recorded}: the gap is bought`);
  } else if (plan.retentionIncrease > 0 && !byDate) {
    changes.push([`retentionEpochs ${olds.retentionEpochs ?? 0} → ${String(news.retentionEpochs)}`]);
  }
  if (plan.changedFields.includes("retainUntil")) changes.push(say`retainUntil ${value(olds.retainUntil ?? "none")} → ${value(news.retainUntil ?? "none")}`);
  if (plan.changedFields.includes("contentType")) {
    const served = olds.mimeType ? say`; stored bytes keep their type, served as ${value(olds.mimeType)}` : "";
    changes.push(say`contentType ${value(olds.contentType ?? "detected")} → ${value(news.contentType ?? "detected")}${served}`);
  }
  if (plan.changedFields.includes("keepAlive")) {
    const keepAlive = news.keepAlive;
    const to = isPlainObject(keepAlive) ? say`→ ${value(keepAlive)}` : keepAlive === undefined || keepAlive === null ? "off (nothing sent)" : "changed";
    changes.push(say`keep-alive ${to}`);
  }
  return changes;
}
