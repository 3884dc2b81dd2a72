/**
 * Text a user supplied (names, tags, metadata keys and values, paths), made safe for GitHub's
 * Markdown in a table: it can neither break the table nor format, mention or link, nor hide or
 * reorder what a reviewer reads.
 */

/**
 * Controls, format characters (bidi overrides and isolates, marks, zero-width characters, tags),
 * line and paragraph separators, lone surrogates, every code point Unicode says to render as
 * nothing (joiners, variation selectors, Hangul fillers) and the blank braille pattern: each
 * shows as nothing or moves the text around it, so a tag could read as another.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Default_Ignorable_Code_Point}\u2800]/gu;

/** A character as its code point, `\u202E` (`\u{E0041}` beyond 4 hex digits). */
function escaped(char: string): string {
  const hex = (char.codePointAt(0) ?? 0).toString(16).toUpperCase();
  return hex.length > 4 ? `\\u{${hex}}` : `\\u${hex.padStart(4, "0")}`;
}

/** Text with every hidden character shown: a line break as ␍ or ↵ (as before), the rest escaped. */
function inert(text: string): string {
  return text.replace(/\r/g, "␍").replace(/\n/g, "↵").replace(HIDDEN, escaped);
}

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
