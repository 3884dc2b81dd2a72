/**
 * What a provider says to the person running Pulumi: a severity and a text. The front doors
 * decide how each severity is shown (the plugin as the engine's log levels, the dynamic provider
 * as a line of output), never by reading the text.
 */
type Severity = "info" | "warning";

export interface Notice {
  severity: Severity;
  text: string;
}

/** Where a core sends its notices, with the URN of the resource each is about. */
export type ProviderLog = (notice: Notice, urn?: string) => void;

export const warning = (text: string): Notice => ({ severity: "warning", text });
export const info = (text: string): Notice => ({ severity: "info", text });

/** A notice as one line of output (a dynamic provider's only channel). */
export const noticeLine = (notice: Notice): string => (notice.severity === "warning" ? `warning: ${notice.text}` : notice.text);

/** The same notice with its text rewritten (redaction). */
export const mapText = (notice: Notice, f: (text: string) => string): Notice => ({ ...notice, text: f(notice.text) });
