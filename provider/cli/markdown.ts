import { inert } from "../engine/inert";

/**
 * User-supplied text made safe in a GitHub Markdown table: it can neither break the table, format,
 * mention or link, nor hide or reorder what a reviewer reads.
 */

/**
 * A value as an inline code span that cannot break the Markdown around it (pipes, line breaks,
 * backticks). GitHub renders no emphasis, links or mentions inside code, so every user string goes
 * through here.
 */
export function code(v: unknown): string {
  const text = inert(typeof v === "string" ? v : (JSON.stringify(v) ?? String(v))).replace(/\|/g, "\\|");
  // An empty span would be two bare backticks, which open a span that a later one closes.
  if (text.trim() === "") return `\` ${text.replace(/ /g, "·")} \``;
  const fence = "`".repeat(Math.max(0, ...(text.match(/`+/g) ?? []).map((t) => t.length)) + 1);
  const pad = text.startsWith("`") || text.endsWith("`") ? " " : "";
  return `${fence}${pad}${text}${pad}${fence}`;
}

/**
 * The printed document, every line made inert too, since a value can reach the text outside a code
 * span (a message quoting a declared value).
 */
export function markdown(lines: readonly string[]): string {
  return `${lines.map(inert).join("\n")}\n`;
}
