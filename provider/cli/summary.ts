import { fileRow } from "./summary-file";
import { folderRow } from "./summary-folder";
import { changeSteps, clockOf, parsePreview, previewErrors } from "./summary-preview";
import { renderFailed, renderSummary } from "./summary-render";
import type { Phrase } from "./summary-phrase";
import type { Row } from "./summary-row";

/**
 * The pull-request summary: from `pulumi preview --json`, what a merge will change and buy per
 * StoredFile and one-resource StoredFolder. Parse, model, render.
 */

export { previewErrors };

export interface SummaryOptions {
  /** The time the summary plans at (default: now). */
  nowMs?: number;
}

export function summarizePreview(json: unknown, options: SummaryOptions = {}): string {
  const preview = parsePreview(json);
  const errors = previewErrors(preview);
  if (errors > 0) return renderFailed(errors);
  const clock = clockOf(preview, options.nowMs);
  const rows: Row[] = [];
  const notices: Phrase[] = [];
  let read = 0;
  for (const step of changeSteps(preview)) {
    // A `--refresh` preview reads every file: counted, not a row each.
    if (step.action === "read") read++;
    else rows.push(step.kind === "folder" ? folderRow(step, clock) : fileRow(step, clock, notices));
  }
  return renderSummary(rows, notices, read);
}
