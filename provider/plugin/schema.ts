import { z } from "zod";
import { CONFIG_NAMESPACE, ProviderConfigSchema, settingDoc, type SettingName } from "../config/settings";
import { KeepAliveSchema, REPLACE_FIELDS, REPORTED_SCHEMAS, StoredFileInputsSchema, fieldDoc, type InputField } from "../file/schema";
import { STORED_FILE_TYPES, STORED_FOLDER_TYPES } from "../engine/urns";
import { FILE_FIELDS, FOLDER_OUTPUT_SCHEMAS, SHARED_FIELDS, StoredFolderInputsSchema } from "../folder/schema";
import { GetFileResultSchema } from "../file/get-file";
import { PACKAGE_VERSION } from "../engine/identity";

/**
 * The Pulumi package schema of the `tuskr` provider plugin, derived from the same zod schemas
 * the dynamic resource checks its inputs with (file/schema.ts) and the settings it reads
 * (config/settings.ts): one definition of each input, its limits and its documentation.
 */

const PACKAGE_NAME = CONFIG_NAMESPACE;
const KEEP_ALIVE_TOKEN = `${PACKAGE_NAME}:index:KeepAlive`;
export const GET_FILE_TOKEN = `${PACKAGE_NAME}:index:getFile`;
const FOLDER_FILE_TOKEN = `${PACKAGE_NAME}:index:FolderFile`;

/** A property of the package schema (the subset this package uses). */
interface SchemaProperty {
  type?: "string" | "integer" | "number" | "boolean" | "object" | "array";
  $ref?: string;
  items?: SchemaProperty;
  additionalProperties?: SchemaProperty;
  description?: string;
  secret?: boolean;
  willReplaceOnChanges?: boolean;
}

/** The JSON Schema of one field, as zod describes it. */
function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(schema, { unrepresentable: "any", io: "input" }) as Record<string, unknown>;
}

/**
 * One field's type in the package schema: scalars as they are, a record as a map of Any, the
 * keep-alive object as a named type, the asset as Pulumi's Asset.
 */
function typeOf(field: string, schema: z.ZodType): SchemaProperty {
  if (field === "source") return { $ref: "pulumi.json#/Asset" };
  if (field === "keepAlive") return { $ref: `#/types/${KEEP_ALIVE_TOKEN}` };
  let json = jsonSchemaOf(schema);
  // An optional or nullish field: its one non-null shape.
  const branches = Array.isArray(json.anyOf) ? (json.anyOf as Array<Record<string, unknown>>).filter((b) => b.type !== "null") : [];
  if (branches.length === 1) json = branches[0];
  // Or a type list with null in it.
  const type = Array.isArray(json.type) ? (json.type as string[]).find((t) => t !== "null") : json.type;
  if (type === "string" || type === "integer" || type === "number" || type === "boolean") return { type };
  if (type === "object" && json.additionalProperties !== undefined && json.additionalProperties !== false) {
    return { type: "object", additionalProperties: { $ref: "pulumi.json#/Any" } };
  }
  throw new Error(`the package schema has no mapping for ${field} (${JSON.stringify(json).slice(0, 200)})`);
}

/** The description a property gets: what it is, its limits, what a change does, what omitting it means. */
function inputDescription(field: InputField): string {
  const doc = fieldDoc(StoredFileInputsSchema.shape[field]);
  if (!doc) throw new Error(`input ${field} has no documentation in the schema`);
  const omitted = doc.omitted === "—" ? "" : ` Omitted: ${doc.omitted}.`;
  return `${doc.description} ${capitalize(doc.limit)}. A change: ${doc.change}.${omitted}`;
}

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
const describedBy = (schema: z.ZodType): string => String((schema.meta() as { description?: string } | undefined)?.description ?? "");

/** The config variables and the provider's inputs: every setting of config/settings.ts. */
function configProperties(): Record<string, SchemaProperty> {
  const out: Record<string, SchemaProperty> = {};
  for (const [key, schema] of Object.entries(ProviderConfigSchema.shape) as Array<[SettingName, z.ZodType]>) {
    const doc = settingDoc(key);
    out[key] = {
      ...typeOf(key, schema),
      description: `${doc.description} Default: ${doc.default}.${doc.env ? ` Environment fallback: \`${doc.env}\`.` : ""}`,
      ...(doc.secret ? { secret: true } : {}),
    };
  }
  return out;
}

/** StoredFile's inputs and outputs, and the keep-alive type's properties, from the zod schemas. */
function fileProperties() {
  const inputs: Record<string, SchemaProperty> = {};
  for (const [field, schema] of Object.entries(StoredFileInputsSchema.shape) as Array<[InputField, z.ZodType]>) {
    inputs[field] = {
      ...typeOf(field, schema),
      description: inputDescription(field),
      ...((REPLACE_FIELDS as readonly string[]).includes(field) ? { willReplaceOnChanges: true } : {}),
    };
  }
  const outputs: Record<string, SchemaProperty> = { ...inputs };
  for (const [field, schema] of Object.entries(REPORTED_SCHEMAS)) {
    outputs[field] = { ...typeOf(field, schema), description: describedBy(schema) };
  }
  const keepAliveProps: Record<string, SchemaProperty> = {};
  for (const [field, schema] of Object.entries(KeepAliveSchema.shape)) {
    keepAliveProps[field] = { ...typeOf(field, schema), description: describedBy(schema) };
  }
  return { inputs, outputs, keepAliveProps };
}

/** StoredFolder's inputs (StoredFile's shared fields among them) and outputs, and a file's own values. */
function folderProperties(inputs: Record<string, SchemaProperty>) {
  // StoredFolder: where its files are, the values they share (StoredFile's own fields and
  // descriptions), each file's own values (a named type), and its outputs by path.
  const folderFileProps: Record<string, SchemaProperty> = Object.fromEntries(FILE_FIELDS.map((f) => [f, inputs[f]]));
  const folderInputs: Record<string, SchemaProperty> = {
    path: { type: "string", description: describedBy(StoredFolderInputsSchema.shape.path) },
    include: { type: "array", items: { type: "string" }, description: describedBy(StoredFolderInputsSchema.shape.include) },
    exclude: { type: "array", items: { type: "string" }, description: describedBy(StoredFolderInputsSchema.shape.exclude) },
    ...Object.fromEntries(
      SHARED_FIELDS.map((f) => [f, { ...inputs[f], description: `Shared by every file (a file's own value in \`files\` wins). ${inputs[f].description}` }]),
    ),
    files: {
      type: "object",
      additionalProperties: { $ref: `#/types/${FOLDER_FILE_TOKEN}` },
      description: describedBy(StoredFolderInputsSchema.shape.files),
    },
    parts: { type: "integer", description: describedBy(StoredFolderInputsSchema.shape.parts) },
    part: { type: "integer", description: describedBy(StoredFolderInputsSchema.shape.part) },
  };
  const folderOutputs: Record<string, SchemaProperty> = { ...folderInputs };
  for (const [field, schema] of Object.entries(FOLDER_OUTPUT_SCHEMAS)) {
    // The maps by path hold strings (blobIds, urls); a scalar is as zod says.
    const type = typeOf(field, schema);
    folderOutputs[field] = {
      ...(type.type === "object" ? { type: "object", additionalProperties: { type: "string" } } : type),
      description: describedBy(schema),
    };
  }
  return { folderInputs, folderOutputs, folderFileProps };
}

/** What the package says of itself, and how each language's SDK is named. */
const PACKAGE_META = {
  name: PACKAGE_NAME,
  displayName: "Tuskr",
  version: PACKAGE_VERSION,
  description: "Files kept on Tuskr (blobs on Walrus): upload or adopt them, converge their name, tag and metadata, buy storage epochs.",
  keywords: ["pulumi", "tuskr", "walrus", "storage", "category/cloud", "kind/native"],
  license: "Apache-2.0",
  publisher: "pulumi-tuskr",
  // supportPack: every generated SDK carries `version` (package.json's) — Python's package and the
  // version its resources ask for, Go's and Node.js's too — and Go's gets its go.mod. Without it
  // they say 0.0.0 and ask for a `default_0_0_0` provider.
  meta: { moduleFormat: "(.*)", supportPack: true },
  language: {
    nodejs: { packageName: "@pulumi-tuskr/tuskr", dependencies: { "@pulumi/pulumi": "^3.248.0" } },
    python: { packageName: "pulumi_tuskr", requires: { pulumi: ">=3.0.0,<4.0.0" }, pyproject: { enabled: true } },
    go: { importBasePath: "github.com/pulumi-tuskr/pulumi-tuskr/sdk/go/tuskr", generateResourceContainerTypes: false },
    csharp: { rootNamespace: "PulumiTuskr", packageReferences: { Pulumi: "3.*" } },
  },
};

/** The `getFile` function's schema. */
function functionsSchema() {
  return {
    [GET_FILE_TOKEN]: {
      description:
        "A file's record, read with one GET and nothing written: a file another stack keeps, used without adopting it. Fails for an unknown or expired blobId.",
      inputs: {
        properties: { blobId: { type: "string", description: "The file's blobId (what its upload returned)." } },
        required: ["blobId"],
      },
      outputs: {
        properties: Object.fromEntries(
          Object.entries(GetFileResultSchema.shape).map(([field, schema]) => [field, { ...typeOf(field, schema), description: describedBy(schema) }]),
        ),
        required: ["blobId"],
      },
    },
  };
}

/** The package schema, as `GetSchema` answers it and `pulumi package gen-sdk` reads it. */
export function packageSchema(): Record<string, unknown> {
  const { inputs, outputs, keepAliveProps } = fileProperties();
  const { folderInputs, folderOutputs, folderFileProps } = folderProperties(inputs);
  const config = configProperties();
  return {
    ...PACKAGE_META,
    config: { variables: config },
    provider: {
      description: "The tuskr provider: its settings, from stack config `tuskr:<setting>` (the API key as a secret).",
      inputProperties: config,
      properties: Object.fromEntries(Object.entries(config).filter(([k]) => k !== "apiKey")),
    },
    resources: {
      [STORED_FILE_TYPES.plugin]: {
        description:
          "A file kept on the Tuskr service: uploaded from `source` or adopted by `blobId`. Its name, tag and metadata converge " +
          "to what is declared; raising `retentionEpochs` buys what the file lacks of that many epochs. Deleting the resource sends no request: the " +
          "file keeps its paid period. Import an existing file, reading only, with " +
          `\`pulumi import --protect=false ${STORED_FILE_TYPES.plugin} <name> -- <blobId>\` (without --protect=false it is protected: ` +
          "`pulumi destroy` fails until `pulumi state unprotect`).",
        inputProperties: inputs,
        properties: outputs,
        required: ["blobId", "retentionEpochs"],
      },
      [STORED_FOLDER_TYPES.plugin]: {
        description:
          "A folder kept on the Tuskr service as one resource, however many files it holds: one entry per distinct content (identical files " +
          "share it), each kept exactly as a StoredFile is (uploads with their content type, name/tag/metadata converge, purchases converge on " +
          "the declared end). A preview names each file added, changed or removed (`manifest`); `blobIds` and `urls` give each path's. A file " +
          "removed, or the folder deleted, sends no request: the files keep their paid period.",
        inputProperties: folderInputs,
        requiredInputs: ["path"],
        properties: folderOutputs,
        required: ["path", "blobIds", "urls"],
      },
    },
    functions: functionsSchema(),
    types: {
      [FOLDER_FILE_TOKEN]: {
        type: "object",
        description: "Values one file of a StoredFolder declares over the folder's shared ones.",
        properties: folderFileProps,
      },
      [KEEP_ALIVE_TOKEN]: {
        type: "object",
        description: describedBy(StoredFileInputsSchema.shape.keepAlive) || "Keep-alive policy.",
        properties: keepAliveProps,
        required: Object.keys(keepAliveProps),
      },
    },
  };
}
