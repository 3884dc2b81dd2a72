import { fileRow } from "./summary-file";
import { folderEpochs, folderRow, keepersOf, partMoves } from "./summary-folder";
import { parseState } from "../file/state";
import { changeSteps, clockOf, parsePreview, previewErrors } from "./summary-preview";
import { renderFailed, renderSummary } from "./summary-render";
import type { Phrase } from "./summary-phrase";
import type { Row } from "./summary-row";
import { say } from "./summary-phrase";
import { LEARNS_LENGTH } from "../file/plan";

export { previewErrors };

export interface SummaryOptions {
  /** The time the summary plans at (default: now). */
  nowMs?: number;
}

/** Whether `urn` depends on `before`, directly or through others. */
function steppedAfter(dependencies: Map<string, string[]>, urn: string, before: string): boolean {
  const seen = new Set<string>();
  const next = [...(dependencies.get(urn) ?? [])];
  while (next.length > 0) {
    const at = next.pop()!;
    if (at === before) return true;
    if (seen.has(at)) continue;
    seen.add(at);
    next.push(...(dependencies.get(at) ?? []));
  }
  return false;
}

export function summarizePreview(json: unknown, options: SummaryOptions = {}): string {
  const preview = parsePreview(json);
  const errors = previewErrors(preview);
  if (errors > 0) return renderFailed(errors);
  // The lengths the stack's states recorded, files' and folders' entries': one service, one epoch.
  const learnt = (preview.steps ?? []).flatMap((s) => [parseState(s.oldState?.outputs).epochMsSeen, ...folderEpochs(s.oldState?.outputs)]);
  const clock = clockOf(preview, options.nowMs, learnt);
  const rows: Row[] = [];
  const notices: Phrase[] = [];
  let read = 0;
  const steps = changeSteps(preview);
  // What each resource is stepped after, directly or not: same steps too (a chain of parts runs through them).
  const dependencies = new Map((preview.steps ?? []).map((s) => [s.urn, s.newState?.dependencies ?? []]));
  // A part left as it is may still offer what it handed over when `parts` changed (kept a day).
  const moves = partMoves(
    steps.filter((s) => s.action !== "read"),
    (urn, before) => steppedAfter(dependencies, urn, before),
    keepersOf(preview.steps ?? []),
  );
  for (const step of steps) {
    // A `--refresh` preview reads every file: counted, not a row each.
    if (step.action === "read") read++;
    else rows.push(step.kind === "folder" ? folderRow(step, clock, moves) : fileRow(step, clock, notices));
  }
  // The service's epoch not known to the stack: the up's first purchase learns it, said once however many files buy.
  const concerned = rows.filter((r) => !r.notCounted && ((!r.upload && r.epochs + r.keepAlive > 0) || (r.op === "create" && !r.upload && !r.imported)));
  const learns = !clock.epochKnown && concerned.length > 0;
  if (learns) notices.push(say`${LEARNS_LENGTH} (${concerned.length} row(s) of this change depend on it)`);
  return renderSummary(rows, notices, read, learns);
}
