import { CONFIG_KEYS, ProviderConfigSchema, type SettingName, settingDoc } from "./settings";
import { type InputField, StoredFileInputsSchema, fieldDoc } from "./stored-file-schema";
import { SITUATIONS, TROUBLESHOOTING } from "./troubleshooting";

/**
 * The README's reference tables, generated from the schemas (the same documentation the package
 * schema carries): `npm run docs` writes them between their markers in README.md, and a unit
 * test fails when README.md and the schemas disagree.
 */

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** Inputs: type and limit, what a change makes, what omitting it means. */
function inputsTable(): string {
  const rows = ["| Input | Type, limit | A change makes | Omitted |", "|---|---|---|---|"];
  for (const field of Object.keys(StoredFileInputsSchema.shape) as InputField[]) {
    const doc = fieldDoc(StoredFileInputsSchema.shape[field]);
    if (!doc) throw new Error(`input ${field} is not documented in the schema`);
    rows.push(`| \`${field}\` | ${cell(doc.limit)} | ${cell(doc.change)} | ${cell(doc.omitted)} |`);
  }
  return rows.join("\n");
}

/** Provider settings: the stack config key, its environment fallback, its default. */
function configTable(): string {
  const rows = ["| Stack config | Environment fallback | Default |", "|---|---|---|"];
  for (const name of Object.keys(ProviderConfigSchema.shape) as SettingName[]) {
    const doc = settingDoc(name);
    const key = `\`${CONFIG_KEYS[name]}\`${doc.secret ? " (set it with `--secret`)" : ""}`;
    rows.push(`| ${key} | ${doc.env ? `\`${doc.env}\`` : "—"} | ${cell(doc.default)} |`);
  }
  return rows.join("\n");
}

/** Every error code the provider raises, and situations besides: what it means, what to run. */
function troubleshootingTable(): string {
  const rows = ["| Error or situation | What it means | What to run |", "|---|---|---|"];
  for (const [code, remedy] of Object.entries(TROUBLESHOOTING)) rows.push(`| \`${code}\` | ${cell(remedy.means)} | ${cell(remedy.run)} |`);
  for (const s of SITUATIONS) rows.push(`| ${cell(s.situation)} | ${cell(s.means)} | ${cell(s.run)} |`);
  return rows.join("\n");
}

/** The generated sections, by marker name. */
const README_SECTIONS: Record<string, () => string> = { inputs: inputsTable, config: configTable, troubleshooting: troubleshootingTable };

/** `text` with each generated section replaced by its current content. */
export function withGeneratedSections(text: string): string {
  let out = text;
  for (const [name, render] of Object.entries(README_SECTIONS)) {
    const begin = `<!-- generated:${name} (npm run docs) -->`;
    const end = `<!-- /generated:${name} -->`;
    const i = out.indexOf(begin);
    const j = out.indexOf(end);
    if (i < 0 || j < i) throw new Error(`README.md has no ${begin} … ${end} section`);
    out = `${out.slice(0, i + begin.length)}\n${render()}\n${out.slice(j)}`;
  }
  return out;
}
