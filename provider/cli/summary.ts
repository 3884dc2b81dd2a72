import { fileRow } from "./summary-file";
import { folderRow } from "./summary-folder";
import { changeSteps, clockOf, parsePreview, previewErrors } from "./summary-preview";
import { renderFailed, renderSummary } from "./summary-render";
import type { Phrase } from "./summary-phrase";
import type { Row } from "./summary-row";

/**
 * The pull-request summary: reads `pulumi preview --json` and says, per StoredFile and
 * one-resource StoredFolder, what a merge will change and buy. Parse (the preview's steps that
 * change a file or folder) → model (a row per step: what it changes, buys and sends) → render
 * (Markdown).
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
  for (const step of changeSteps(preview)) {
    const row = step.kind === "folder" ? folderRow(step, clock) : fileRow(step, clock, notices);
    if (row) rows.push(row);
  }
  return renderSummary(rows, notices);
}
