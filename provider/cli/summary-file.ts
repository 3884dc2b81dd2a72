import { PATCH_FIELDS, isPlainObject, jsonEqual } from "../../api";
import { type PlanClock, keepAliveAfterUpload, planChange, uploadEpochs } from "../file/plan";
import type { DeclaredInputs, StoredFileState } from "../file/schema";
import { wireAsset } from "../file/source";
import { parseState } from "../file/state";
import { code } from "./markdown";
import type { ChangeStep } from "./summary-preview";
import { type Row, hiddenNote, hidesPatch, uploadToDate, withoutHidden } from "./summary-row";

/**
 * A StoredFile's row, planned by the provider's own planChange on the step's recorded outputs
 * and declared inputs, so the summary and the apply cannot disagree.
 */

type Shown = ReturnType<typeof withoutHidden>;
type Plan = ReturnType<typeof planChange>;
type Clock = PlanClock & { epochMs: number };

/** A file's row, and its notices; none for the steps said elsewhere (the replaced half of a replace). */
export function fileRow(step: ChangeStep, clock: Clock, notices: string[]): Row | undefined {
  const { name } = step;
  if (step.op === "delete")
    return { name, op: "delete", changes: ["no longer managed; no request, the file keeps its period"], epochs: 0, keepAlive: 0, patch: false };
  // Reported once, as the replace.
  if (step.op === "delete-replaced" || step.op === "discard" || step.op === "create-replacement") return undefined;
  const shown = withoutHidden(step.oldState?.outputs ?? {}, step.newState?.inputs ?? {});
  if (step.op === "create") return createRow(name, shown, clock);
  const olds: StoredFileState = parseState(shown.olds);
  const plan = planChange(olds, shown.news, clock);
  if (plan.replace) return replaceRow(name, shown, olds, clock);
  return updateRow(name, step.op, shown, olds, plan, clock, notices);
}

function createRow(name: string, shown: Shown, clock: Clock): Row {
  const news = shown.news;
  const content = wireAsset(news.source);
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
  const old = `the old file ${code(olds.blobId)} is left as it is${olds.expiresAt ? `, stored until ${olds.expiresAt}` : ""}`;
  const changes = [
    content
      ? `**replace**: new content${olds.sourceHash && content.hash ? ` (sha256 ${olds.sourceHash.slice(0, 12)}… → ${content.hash.slice(0, 12)}…)` : ""}, uploaded as a new file; ${old}`
      : `**replace**: blobId ${code(olds.blobId)} → ${code(news.blobId)} (${old})`,
  ];
  const toDate = uploadToDate(Boolean(content), shown, news, clock, changes);
  changes.push(...hiddenNote(shown, true));
  return { name, op: "replace", changes, epochs, keepAlive: 0, patch: false, upload: Boolean(content), notCounted: shown.endHidden, toDate };
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

function updateRow(name: string, op: string, shown: Shown, olds: StoredFileState, plan: Plan, clock: Clock, notices: string[]): Row {
  const changes = [...patchChanges(shown.news, olds, plan), ...endChanges(shown.news, olds, plan)];
  if (plan.keepAliveEpochs > 0) changes.push(`keep-alive renewal due (${plan.remainingBefore} epoch(s) left)`);
  changes.push(...hiddenNote(shown, true));
  for (const n of plan.notices) if (!n.startsWith("keep-alive renewal due")) notices.push(`${code(name)}: ${n}`);
  for (const problem of [plan.expiredProblem, plan.horizonProblem]) if (problem) notices.push(`${code(name)}: **will fail**: ${problem}`);
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
function patchChanges(news: DeclaredInputs, olds: StoredFileState, plan: Plan): string[] {
  const changes: string[] = [];
  for (const f of PATCH_FIELDS) {
    if (plan.patch?.[f] === undefined) continue;
    const declared = news[f];
    if (isPlainObject(declared)) changes.push(`${f} ${metadataChanges(olds[f], declared).join(" ")}`);
    else changes.push(`${f} ${olds[f] !== undefined ? `${code(olds[f])} ` : ""}→ ${code(declared)}`);
  }
  return changes;
}

/** The end, content type and keep-alive changes. */
function endChanges(news: DeclaredInputs, olds: StoredFileState, plan: Plan): string[] {
  const changes: string[] = [];
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
  if (plan.changedFields.includes("keepAlive")) {
    const keepAlive = news.keepAlive;
    changes.push(
      `keep-alive ${isPlainObject(keepAlive) ? `→ ${code(keepAlive)}` : keepAlive === undefined || keepAlive === null ? "off (nothing sent)" : "changed"}`,
    );
  }
  return changes;
}
