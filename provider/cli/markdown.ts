/**
 * Text a user supplied (names, tags, metadata keys and values, paths), made safe for GitHub's
 * Markdown in a table: it can neither break the table nor format, mention or link.
 */

/**
 * A value as an inline code span that cannot break the Markdown around it: a pipe would end a
 * table cell (GitHub needs it escaped even inside code), a line break the row, and a backtick
 * the span (a longer fence holds it). Inside a code span GitHub renders no emphasis, link, image
 * or @mention, so every user-supplied string goes through here.
 */
export function code(v: unknown): string {
  const text = (typeof v === "string" ? v : (JSON.stringify(v) ?? String(v))).replace(/\r/g, "␍").replace(/\n/g, "↵").replace(/\|/g, "\\|");
  // An empty span would be two bare backticks, which open a span that a later one closes.
  if (text.trim() === "") return `\` ${text.replace(/ /g, "·")} \``;
  const fence = "`".repeat(Math.max(0, ...(text.match(/`+/g) ?? []).map((t) => t.length)) + 1);
  const pad = text.startsWith("`") || text.endsWith("`") ? " " : "";
  return `${fence}${pad}${text}${pad}${fence}`;
}
