import { code, markdown } from "./markdown";
import type { Phrase } from "./summary-phrase";
import { type Row, totalsOf } from "./summary-row";

/** The summary's render step: the rows, their totals and the notices as the pull-request comment's Markdown. */

const TITLE = "### Tuskr files in this change";

/** A failed preview's steps stop where it failed: a summary of them would understate the change. */
export function renderFailed(errors: number): string {
  // The messages are left to the preview's own output (a comment is no place to repeat what a provider said).
  return markdown([
    TITLE,
    "",
    `**The preview failed** (${errors} error(s)): nothing is summarized, and \`pulumi up\` would fail as well. See the preview's output.`,
  ]);
}

/** A phrase's words as they are, each of its values a code span. */
const words = (phrase: Phrase): string => phrase.map((part) => (typeof part === "string" ? part : code(part.value))).join("");

/** The rows, their totals and the notices; `read` counts the refresh and read steps, which have no row. */
export function renderSummary(rows: Row[], notices: Phrase[], read: number, learnsLength = false): string {
  const out: string[] = [TITLE, ""];
  if (rows.length === 0) {
    out.push(
      read > 0
        ? `No StoredFile changes: ${readCount(read)}; nothing else is sent and no epochs are bought.`
        : "No StoredFile changes: nothing is sent to the service and no epochs are bought.",
    );
  } else {
    out.push("| File | Step | What changes | Epochs to buy | New expiry |", "|---|---|---|---|---|");
    // By name: the engine's step order varies with parallelism, a review should not.
    for (const l of [...rows].sort((a, b) => a.name.localeCompare(b.name))) {
      const epochs = l.notCounted
        ? "not counted"
        : l.epochs + l.keepAlive === 0
          ? "—"
          : `${l.epochs + l.keepAlive}${l.keepAlive ? ` (keep-alive ${l.keepAlive})` : ""}`;
      out.push(`| ${code(l.name)} | ${l.op} | ${l.changes.map(words).join("; ") || "—"} | ${epochs} | ${l.newExpiry ?? "—"} |`);
    }
    out.push("", totalsLine(rows, read, learnsLength));
  }
  if (notices.length > 0) out.push("", "**Notices**", "", ...[...new Set(notices.map(words))].map((n) => `- ${n}`));
  return markdown(out);
}

/** A refresh reads each file of a folder as it does a StoredFile: one GET each. */
const readCount = (read: number): string => `${read} read (a GET per file)`;

function totalsLine(rows: Row[], read: number, learnsLength: boolean): string {
  const t = totalsOf(rows, read, learnsLength);
  return (
    `**Totals:** ${t.adopted} adopted, ${t.uploaded !== undefined ? `${t.uploaded} uploaded, ` : ""}${t.imported ? `${t.imported} imported, ` : ""}` +
    `${t.updated} updated, ${t.replaced} replaced, ${t.deleted} no longer managed${t.forgotten ? `, ${t.forgotten} forgotten` : ""}; ` +
    `${t.read ? `${readCount(t.read)}, ` : ""}${t.patches} PATCH on existing files${t.patchesHidden ? " (and any of values not shown)" : ""}, ` +
    `${t.renews} renew(s)${t.notCounted ? " (and those of the rows not counted)" : ""}, **${t.epochs} epoch(s) to buy**` +
    (t.notCounted ? `, and what ${t.notCounted} row(s) marked "not counted" buy` : "") +
    (t.caveats.length ? ` (${t.caveats.join("; ")}).` : ".")
  );
}
