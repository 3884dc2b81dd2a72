import { inert } from "../engine/inert";

/**
 * Text a user supplied (names, tags, metadata keys and values, paths), made safe for GitHub's
 * Markdown in a table: it can neither break the table nor format, mention or link, nor hide or
 * reorder what a reviewer reads (engine/inert.ts escapes what would).
 */

/**
 * A value as an inline code span that cannot break the Markdown around it: a pipe would end a
 * table cell (GitHub needs it escaped even inside code), a line break the row, and a backtick
 * the span (a longer fence holds it). Inside a code span GitHub renders no emphasis, link, image
 * or @mention, so every user-supplied string goes through here.
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
 * The document a command prints, a line each: every line made inert as well, so a value that
 * reached the text outside a code span (a provider's message quoting a declared value) is shown
 * escaped too. The commands' own words hold no such character.
 */
export function markdown(lines: readonly string[]): string {
  return `${lines.map(inert).join("\n")}\n`;
}
