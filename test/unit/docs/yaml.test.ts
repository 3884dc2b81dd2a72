import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { parseDocument } from "yaml";
import { packageSchema } from "../../../provider/plugin/schema";

/**
 * Every YAML block of README.md and docs/*.md parses, and is type-checked against the plugin's
 * package schema as Pulumi's YAML host checks a program before it runs it: each resource of a
 * `tuskr:index:*` type, each property one of its inputs with a value of the input's type (a named
 * type's fields, an asset, a map), its required inputs given; each `fn::invoke` of a function the
 * package has, with its arguments; each `${resource.output}` one the resource has. The YAML
 * examples are copied into Pulumi.yaml files, where a slip shows only at `pulumi up`. (The
 * TypeScript blocks are compiled by docs/compile.test.ts, the others by e2e/docs/blocks.e2e.test.ts.)
 */
const root = path.resolve(__dirname, "../../..");
const pages = [
  "README.md",
  ...fs
    .readdirSync(path.join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];
const blocks = pages.flatMap((page) =>
  [...fs.readFileSync(path.join(root, page), "utf8").matchAll(/^```ya?ml\n([\s\S]*?)^```/gm)].map((m, i) => ({ name: `${page} #${i + 1}`, text: m[1] })),
);

interface Property {
  type?: string;
  $ref?: string;
  items?: Property;
  additionalProperties?: Property;
}
interface Schema {
  resources: Record<string, { inputProperties: Record<string, Property>; requiredInputs?: string[]; properties: Record<string, Property> }>;
  functions: Record<string, { inputs: { properties: Record<string, Property>; required?: string[] }; outputs: { properties: Record<string, Property> } }>;
  types: Record<string, { properties: Record<string, Property>; required?: string[] }>;
}
const schema = packageSchema() as unknown as Schema;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
/** An expression: its value is known when the program runs (`${…}` or a function such as `fn::secret`). */
const isExpression = (v: unknown) => (typeof v === "string" && v.includes("${")) || (isObject(v) && Object.keys(v).some((k) => k.startsWith("fn::")));

/** What is wrong with `value` as a value of `property`, at `where`. */
function typeErrors(value: unknown, property: Property, where: string): string[] {
  if (property.$ref === "pulumi.json#/Any") return [];
  if (property.$ref === "pulumi.json#/Asset") {
    return isObject(value) && Object.keys(value).some((k) => /^fn::(file|string|remote)Asset$/.test(k)) ? [] : [`${where}: not an asset (fn::fileAsset …)`];
  }
  if (isExpression(value)) return [];
  if (property.$ref?.startsWith("#/types/")) {
    const type = schema.types[property.$ref.slice("#/types/".length)];
    if (!isObject(value)) return [`${where}: not an object of ${property.$ref}`];
    return [
      ...Object.entries(value).flatMap(([k, v]) =>
        type.properties[k] ? typeErrors(v, type.properties[k], `${where}.${k}`) : [`${where}.${k}: no such field`],
      ),
      ...(type.required ?? []).filter((k) => !(k in value)).map((k) => `${where}.${k}: required`),
    ];
  }
  switch (property.type) {
    case "string":
      return typeof value === "string" ? [] : [`${where}: not a string`];
    case "integer":
      return Number.isInteger(value) ? [] : [`${where}: not an integer`];
    case "number":
      return typeof value === "number" ? [] : [`${where}: not a number`];
    case "boolean":
      return typeof value === "boolean" ? [] : [`${where}: not a boolean`];
    case "array":
      return Array.isArray(value) ? value.flatMap((v, i) => typeErrors(v, property.items ?? {}, `${where}[${i}]`)) : [`${where}: not a list`];
    case "object":
      if (!isObject(value)) return [`${where}: not a map`];
      return Object.entries(value).flatMap(([k, v]) => typeErrors(v, property.additionalProperties ?? { $ref: "pulumi.json#/Any" }, `${where}.${k}`));
    default:
      return [];
  }
}

/** Every `${name.field…}` the program holds. */
function references(value: unknown): Array<[string, string]> {
  if (typeof value === "string") return [...value.matchAll(/\$\{(\w+)\.(\w+)/g)].map((m) => [m[1], m[2]]);
  if (Array.isArray(value)) return value.flatMap(references);
  if (isObject(value)) return Object.values(value).flatMap(references);
  return [];
}

/** What a program's declarations get wrong against the package schema. */
function programErrors(program: Record<string, unknown>): string[] {
  const errors: string[] = [];
  const resources = (isObject(program.resources) ? program.resources : {}) as Record<string, { type?: string; properties?: Record<string, unknown> }>;
  const variables = (isObject(program.variables) ? program.variables : {}) as Record<string, unknown>;
  // What each name's outputs are: a resource's, or the result of the function a variable invokes.
  const outputs = new Map<string, Record<string, Property>>();
  for (const [name, r] of Object.entries(resources)) {
    const type = schema.resources[String(r.type)];
    if (!type) {
      errors.push(`${name}: type ${String(r.type)} is not tuskr's`);
      continue;
    }
    outputs.set(name, type.properties);
    const properties = r.properties ?? {};
    for (const [k, v] of Object.entries(properties)) {
      errors.push(...(type.inputProperties[k] ? typeErrors(v, type.inputProperties[k], `${name}.${k}`) : [`${name}.${k}: no such input`]));
    }
    for (const k of type.requiredInputs ?? []) if (!(k in properties)) errors.push(`${name}.${k}: required`);
  }
  for (const [name, v] of Object.entries(variables)) {
    const invoke = isObject(v) ? v["fn::invoke"] : undefined;
    if (!isObject(invoke)) continue;
    const fn = schema.functions[String(invoke.function)];
    if (!fn) {
      errors.push(`${name}: function ${String(invoke.function)} is not tuskr's`);
      continue;
    }
    outputs.set(name, fn.outputs.properties);
    const args = (isObject(invoke.arguments) ? invoke.arguments : {}) as Record<string, unknown>;
    for (const [k, a] of Object.entries(args)) {
      errors.push(...(fn.inputs.properties[k] ? typeErrors(a, fn.inputs.properties[k], `${name}.${k}`) : [`${name}.${k}: no such argument`]));
    }
    for (const k of fn.inputs.required ?? []) if (!(k in args)) errors.push(`${name}.${k}: required`);
  }
  for (const [name, field] of references(program)) {
    const known = outputs.get(name);
    if (known && !known[field]) errors.push(`\${${name}.${field}}: ${name} has no output ${field}`);
  }
  return errors;
}

describe("YAML in the docs", () => {
  it("has blocks to check", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4);
  });

  it.each(blocks)("$name parses, and type-checks against the package schema", ({ text }) => {
    const doc = parseDocument(text);
    expect(doc.errors.map((e) => e.message)).toEqual([]);
    expect(programErrors(doc.toJS() as Record<string, unknown>)).toEqual([]);
  });

  it("a wrong input, value, function argument or output is found", () => {
    const program = parseDocument(`
resources:
  logo:
    type: tuskr:index:StoredFile
    properties:
      blobId: 42
      retentionEpoch: 5
      keepAlive: { minRemainingEpochs: 7 }
  site:
    type: tuskr:index:StoredFolder
    properties:
      tag: site
variables:
  shared:
    fn::invoke:
      function: tuskr:index:getFile
      arguments:
        blob: x
outputs:
  a: \${logo.blob_id}
  b: \${shared.remaining_epochs}
`).toJS();
    expect(programErrors(program)).toEqual([
      "logo.blobId: not a string",
      "logo.retentionEpoch: no such input",
      "logo.keepAlive.renewEpochs: required",
      "site.path: required",
      "shared.blob: no such argument",
      "shared.blobId: required",
      "${logo.blob_id}: logo has no output blob_id",
      "${shared.remaining_epochs}: shared has no output remaining_epochs",
    ]);
  });
});
