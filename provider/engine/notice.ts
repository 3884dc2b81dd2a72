import { inert } from "./inert";

/**
 * What a provider tells the user: a severity and a text. Front doors choose how to show each
 * severity, never by reading the text.
 */
type Severity = "info" | "warning";

export interface Notice {
  severity: Severity;
  text: string;
  /** Said once per stack for this cause (a fact about the service or a setting), however many files meet it. */
  once?: string;
}

/** Where a core sends its notices, with the URN of the resource each is about. */
export type ProviderLog = (notice: Notice, urn?: string) => void;

export const warning = (text: string): Notice => ({ severity: "warning", text });
export const info = (text: string): Notice => ({ severity: "info", text });

/**
 * A notice's text as the console shows it: inert, since it quotes user values (names, metadata
 * keys, paths). Made so only on the way out, after redaction matched secrets as they are.
 */
export const noticeText = (notice: Notice): string => inert(notice.text);

/** A notice as one line of output (a dynamic provider's only channel). */
export const noticeLine = (notice: Notice): string => (notice.severity === "warning" ? `warning: ${noticeText(notice)}` : noticeText(notice));

/** A check failure's reason as the console shows it (it may quote the value refused). */
export const inertFailure = <F extends { reason: string }>(failure: F): F => ({ ...failure, reason: inert(failure.reason) });

/**
 * An error as a front door hands it to the engine, which prints its message (and a partial
 * failure's reasons): inert, as a notice is. The same error, changed in place.
 */
export function inertError(error: unknown): unknown {
  if (typeof error === "string") return inert(error);
  if (!(error instanceof Error)) return error;
  const shown = inert(error.message);
  // Defined, not assigned: a subclass may read its message through a getter.
  if (shown !== error.message) Object.defineProperty(error, "message", { value: shown, configurable: true, writable: true, enumerable: false });
  const e = error as { reasons?: unknown };
  if (Array.isArray(e.reasons)) e.reasons = e.reasons.map((r) => (typeof r === "string" ? inert(r) : r));
  return error;
}

/** The same notice with its text rewritten (redaction). */
export const mapText = (notice: Notice, f: (text: string) => string): Notice => ({ ...notice, text: f(notice.text) });
