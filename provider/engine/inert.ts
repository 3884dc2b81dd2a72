/**
 * Text a user supplied (names, tags, metadata keys and values, paths), made inert wherever the
 * package shows it: the console's warnings and errors and the CLI's Markdown. Such text must not
 * hide or reorder what a person reads, so one rule escapes it everywhere.
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

/** Text with every hidden character shown: a line break as ␍ or ↵ (one message stays one line), the rest escaped. */
export function inert(text: string): string {
  return text.replace(/\r/g, "␍").replace(/\n/g, "↵").replace(HIDDEN, escaped);
}
