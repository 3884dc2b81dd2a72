/**
 * User-supplied text made inert wherever the package shows it, by one rule everywhere, so it cannot
 * hide or reorder what a person reads.
 */

/**
 * Characters that render as nothing or move surrounding text (controls, bidi and format characters,
 * separators, lone surrogates, default-ignorables, blank braille), which could make one tag read as
 * another.
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
