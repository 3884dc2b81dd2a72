import { CONFIG_KEYS, ProviderConfigSchema, type SettingName, settingDoc } from "../config/settings";
import { GetFileResultSchema } from "../file/get-file";
import { type InputField, REPORTED_FIELDS, REPORTED_SCHEMAS, StoredFileInputsSchema, fieldDoc } from "../file/schema";
import { FOLDER_INPUT_FIELDS, FOLDER_OUTPUT_SCHEMAS, SHARED_FIELDS, StoredFolderInputsSchema } from "../folder/schema";
import { SITUATIONS, TROUBLESHOOTING } from "./troubleshooting";
import { goName, pythonName } from "./names";
import { GET_FILE_TOKEN, packageSchema } from "../plugin/schema";
import { STORED_FILE_TYPES, STORED_FOLDER_TYPES } from "../engine/urns";

/**
 * The reference tables of docs/, generated from the schemas (the same documentation the package
 * schema carries): `npm run docs` writes each between its markers, and a unit test fails when a
 * page and the schemas disagree.
 */

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");
const described = (schema: { meta(): unknown }) => (schema.meta() as { description?: string } | undefined)?.description ?? "";

/** The package schema's parts the tables name properties from. */
interface NamedProperty {
  $ref?: string;
  additionalProperties?: { $ref?: string };
}
interface NamingSchema {
  resources: Record<string, { inputProperties: Record<string, NamedProperty> }>;
  functions: Record<string, { inputs: { properties: Record<string, NamedProperty> } }>;
  types: Record<string, { properties: Record<string, NamedProperty> }>;
}
let naming: NamingSchema | undefined;
const schemaTypes = () => (naming ??= packageSchema() as unknown as NamingSchema);

/** The fields of the named type a property holds (`keepAlive`'s, each of `files`'s), from the package schema. */
function nestedFields(property: NamedProperty | undefined): string[] {
  const ref = property?.$ref ?? property?.additionalProperties?.$ref;
  const type = ref?.startsWith("#/types/") ? schemaTypes().types[ref.slice("#/types/".length)] : undefined;
  return type ? Object.keys(type.properties) : [];
}

/**
 * The header cells and row cells naming a property in each language: the schema's name (TypeScript,
 * YAML and Java use it, and its named type's fields as they are), then Python's and Go's, each
 * with its named type's fields.
 */
const NAME_HEADERS = "Input (TypeScript, YAML, Java) | Python | Go";
function nameCells(field: string, property?: NamedProperty): string {
  const nested = nestedFields(property);
  const named = (rename: (name: string) => string) =>
    `\`${rename(field)}\`${nested.length > 0 ? ` (${nested.map((n) => `\`${rename(n)}\``).join(", ")})` : ""}`;
  return `\`${field}\` | ${named(pythonName)} | ${named(goName)}`;
}

/** StoredFile's inputs in each language: type and limit, what a change makes, what omitting it means. */
function inputsTable(): string {
  const rows = [`| ${NAME_HEADERS} | Type, limit | A change makes | Omitted |`, "|---|---|---|---|---|---|"];
  const properties = schemaTypes().resources[STORED_FILE_TYPES.plugin].inputProperties;
  for (const field of Object.keys(StoredFileInputsSchema.shape) as InputField[]) {
    const doc = fieldDoc(StoredFileInputsSchema.shape[field]);
    if (!doc) throw new Error(`input ${field} is not documented in the schema`);
    rows.push(`| ${nameCells(field, properties[field])} | ${cell(doc.limit)} | ${cell(doc.change)} | ${cell(doc.omitted)} |`);
  }
  return rows.join("\n");
}

/** A table of outputs, each named in each language, and its description. */
function outputsTable(schemas: Readonly<Record<string, { meta(): unknown }>>): string {
  const rows = [`| ${NAME_HEADERS.replace("Input", "Output")} | What it holds |`, "|---|---|---|---|"];
  for (const [field, schema] of Object.entries(schemas)) rows.push(`| ${nameCells(field)} | ${cell(described(schema))} |`);
  return rows.join("\n");
}

/** StoredFile's outputs besides its inputs. */
const fileOutputsTable = () => outputsTable(Object.fromEntries(REPORTED_FIELDS.map((f) => [f, REPORTED_SCHEMAS[f]])));

/** StoredFolder's inputs: the folder's own, and the values its files share (StoredFile's, each overridable per file). */
function folderInputsTable(): string {
  const rows = [`| ${NAME_HEADERS} | What it is |`, "|---|---|---|---|"];
  const shared = new Set<string>(SHARED_FIELDS);
  const properties = schemaTypes().resources[STORED_FOLDER_TYPES.plugin].inputProperties;
  for (const field of FOLDER_INPUT_FIELDS) {
    const schema = StoredFolderInputsSchema.shape[field];
    const doc = fieldDoc(schema);
    const text =
      shared.has(field) && doc ? `${doc.description} Every file shares it; \`files\` overrides it per file. Type and limit: ${doc.limit}.` : described(schema);
    rows.push(`| ${nameCells(field, properties[field])} | ${cell(text)} |`);
  }
  return rows.join("\n");
}

/** getFile's one input, in each language, and what it is. */
function getFileInputsTable(): string {
  const rows = [`| ${NAME_HEADERS} | What it is |`, "|---|---|---|---|"];
  const inputs = schemaTypes().functions[GET_FILE_TOKEN].inputs.properties as Record<string, NamedProperty & { description?: string }>;
  for (const [field, property] of Object.entries(inputs)) rows.push(`| ${nameCells(field, property)} | ${cell(property.description ?? "")} |`);
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

/** Each page of docs/ with generated sections, and its sections by marker name. */
export const GENERATED_PAGES: Readonly<Record<string, Readonly<Record<string, () => string>>>> = {
  "docs/installation-configuration.md": { config: configTable },
  "docs/stored-file.md": { inputs: inputsTable, outputs: fileOutputsTable },
  "docs/stored-folder.md": { "folder-inputs": folderInputsTable, "folder-outputs": () => outputsTable(FOLDER_OUTPUT_SCHEMAS) },
  "docs/get-file.md": { "get-file-inputs": getFileInputsTable, "get-file-outputs": () => outputsTable(GetFileResultSchema.shape) },
  "docs/troubleshooting.md": { troubleshooting: troubleshootingTable },
};

/** The file that carries each input's documentation to TypeScript (hover, completion). */
export const DOCUMENTED_ARGS_FILE = "provider/file/documented-args.ts";

/**
 * Source of `provider/file/documented-args.ts`, which carries the schema's docs as JSDoc so
 * StoredFileArgs shows them on hover, matching docs/ and the package schema.
 */
export function documentedArgsSource(): string {
  const lines = [
    "// Generated by `npm run docs` from the input schemas (file/schema.ts); do not edit.",
    "// StoredFileArgs maps over this interface, so each field's documentation shows on hover.",
    "",
    "/** The inputs of a StoredFile, documented. */",
    "export interface StoredFileInputDocs {",
  ];
  for (const field of Object.keys(StoredFileInputsSchema.shape) as InputField[]) {
    const doc = fieldDoc(StoredFileInputsSchema.shape[field]);
    if (!doc) throw new Error(`input ${field} is not documented in the schema`);
    const text = [doc.description, `Type and limit: ${doc.limit}.`, `A change makes: ${doc.change}.`, doc.omitted === "—" ? "" : `Omitted: ${doc.omitted}.`];
    lines.push("  /**");
    for (const paragraph of text.filter(Boolean)) lines.push(`   * ${paragraph.replace(/\*\//g, "*\\/")}`);
    lines.push("   */", `  ${field}?: unknown;`);
  }
  lines.push("}", "");
  return lines.join("\n");
}

/** `text`, the page `page` of GENERATED_PAGES, with each generated section replaced by its current content. */
export function withGeneratedSections(page: string, text: string): string {
  const sections = GENERATED_PAGES[page];
  if (!sections) throw new Error(`${page} has no generated sections`);
  let out = text;
  for (const [name, render] of Object.entries(sections)) {
    const begin = `<!-- generated:${name} (npm run docs) -->`;
    const end = `<!-- /generated:${name} -->`;
    const i = out.indexOf(begin);
    const j = out.indexOf(end);
    if (i < 0 || j < i) throw new Error(`${page} has no ${begin} … ${end} section`);
    out = `${out.slice(0, i + begin.length)}\n${render()}\n${out.slice(j)}`;
  }
  return out;
}
