import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../../api";
import { GENERATED_PAGES, withGeneratedSections } from "../../../provider/docs/reference";
import { packageSchema } from "../../../provider/plugin/schema";
import { STORED_FILE_TYPES } from "../../../provider/engine/urns";
import { INPUT_FIELDS, REPORTED_FIELDS } from "../../../provider/file/schema";

/**
 * One definition of each input and setting: the tables of docs/ and the provider plugin's package
 * schema are generated from the zod schemas, so neither can drift from what `check` enforces.
 */
const root = path.join(__dirname, "../../..");
const page = (file: string) => fs.readFileSync(path.join(root, file), "utf8");
type Property = { type?: string; $ref?: string; description?: string; secret?: boolean; willReplaceOnChanges?: boolean; additionalProperties?: unknown };
const schema = packageSchema() as {
  name: string;
  config: { variables: Record<string, Property> };
  provider: { inputProperties: Record<string, Property> };
  resources: Record<string, { inputProperties: Record<string, Property>; properties: Record<string, Property>; required: string[] }>;
  types: Record<string, { properties: Record<string, Property>; required: string[] }>;
};
const storedFile = schema.resources[STORED_FILE_TYPES.plugin];

describe("the reference tables of docs/", () => {
  it.each(Object.keys(GENERATED_PAGES))("%s is what the schemas generate (npm run docs)", (file) => {
    expect(withGeneratedSections(file, page(file))).toBe(page(file));
  });

  it("the README's short table of changes names every input (the full table is docs/stored-file.md's)", () => {
    const readme = page("README.md");
    const section = readme.slice(readme.indexOf("## What a change does"), readme.indexOf("## Try it"));
    for (const field of INPUT_FIELDS) expect(section).toContain(`\`${field}\``);
  });

  it("refuses a page whose markers are missing, naming the page and the section", () => {
    expect(() => withGeneratedSections("docs/stored-file.md", "# StoredFile\n")).toThrow(/docs\/stored-file\.md has no <!-- generated:inputs/);
  });
});

describe("the package schema of the tuskr provider plugin", () => {
  it("has StoredFile with exactly the dynamic resource's inputs, and its outputs", () => {
    expect(schema.name).toBe("tuskr");
    expect(Object.keys(storedFile.inputProperties)).toEqual([...INPUT_FIELDS]);
    expect(Object.keys(storedFile.properties)).toEqual([...INPUT_FIELDS, ...REPORTED_FIELDS]);
    expect(storedFile.required).toEqual(["blobId", "retentionEpochs"]);
  });

  it("types each input as Pulumi does: an asset, a map of Any, a named object type, scalars", () => {
    const p = storedFile.inputProperties;
    expect(p.source).toMatchObject({ $ref: "pulumi.json#/Asset", willReplaceOnChanges: true });
    expect(p.blobId).toMatchObject({ type: "string", willReplaceOnChanges: true });
    expect(p.name.type).toBe("string");
    expect(p.metadata).toMatchObject({ type: "object", additionalProperties: { $ref: "pulumi.json#/Any" } });
    expect(p.retentionEpochs.type).toBe("integer");
    expect(p.keepAlive.$ref).toBe("#/types/tuskr:index:KeepAlive");
    expect(schema.types["tuskr:index:KeepAlive"].required).toEqual(["minRemainingEpochs", "renewEpochs"]);
    expect(storedFile.properties.size.type).toBe("integer");
  });

  it("describes each input with its limit and what a change makes, as docs/stored-file.md does", () => {
    const d = (f: string) => storedFile.inputProperties[f].description ?? "";
    expect(d("tag")).toContain(`≤ ${LIMITS.tagMaxLength} chars`);
    expect(d("metadata")).toContain(`≤ ${LIMITS.metadataMaxKeys} keys`);
    expect(d("retentionEpochs")).toMatch(/buys only what the file lacks of the declared end/);
    expect(d("blobId")).toMatch(/replace/);
    const storedFilePage = page("docs/stored-file.md");
    for (const field of INPUT_FIELDS) expect(storedFilePage).toContain(`| \`${field}\` |`);
  });

  it("has every setting as provider config, the API key secret", () => {
    expect(Object.keys(schema.config.variables)).toEqual([
      "apiKey",
      "baseUrl",
      "maxConcurrency",
      "timeoutMs",
      "epochSeconds",
      "idempotencyKeys",
      "expiryWarningEpochs",
      "allowInsecureHttp",
    ]);
    expect(schema.config.variables.apiKey).toMatchObject({ type: "string", secret: true });
    expect(schema.config.variables.allowInsecureHttp.type).toBe("boolean");
    expect(schema.provider.inputProperties.apiKey.secret).toBe(true);
  });
});
