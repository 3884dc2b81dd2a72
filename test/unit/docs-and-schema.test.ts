import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../api";
import { withGeneratedSections } from "../../provider/docs/reference";
import { packageSchema } from "../../provider/plugin/schema";
import { STORED_FILE_TYPES } from "../../provider/engine/urns";
import { INPUT_FIELDS, REPORTED_FIELDS } from "../../provider/file/schema";

/**
 * One definition of each input and setting: README.md's tables and the provider plugin's package
 * schema are generated from the zod schemas, so neither can drift from what `check` enforces.
 */
const readme = fs.readFileSync(path.join(__dirname, "../../README.md"), "utf8");
type Property = { type?: string; $ref?: string; description?: string; secret?: boolean; willReplaceOnChanges?: boolean; additionalProperties?: unknown };
const schema = packageSchema() as {
  name: string;
  config: { variables: Record<string, Property> };
  provider: { inputProperties: Record<string, Property> };
  resources: Record<string, { inputProperties: Record<string, Property>; properties: Record<string, Property>; required: string[] }>;
  types: Record<string, { properties: Record<string, Property>; required: string[] }>;
};
const storedFile = schema.resources[STORED_FILE_TYPES.plugin];

describe("README.md's reference tables", () => {
  it("are what the schemas generate (npm run docs)", () => {
    expect(withGeneratedSections(readme)).toBe(readme);
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

  it("describes each input with its limit and what a change makes, as the README does", () => {
    const d = (f: string) => storedFile.inputProperties[f].description ?? "";
    expect(d("tag")).toContain(`≤ ${LIMITS.tagMaxLength} chars`);
    expect(d("metadata")).toContain(`≤ ${LIMITS.metadataMaxKeys} keys`);
    expect(d("retentionEpochs")).toMatch(/buys only what the file lacks of the declared end/);
    expect(d("blobId")).toMatch(/replace/);
    for (const field of INPUT_FIELDS) expect(readme).toContain(`| \`${field}\` |`);
  });

  it("has every setting as provider config, the API key secret", () => {
    expect(Object.keys(schema.config.variables)).toEqual([
      "apiKey",
      "baseUrl",
      "maxConcurrency",
      "timeoutMs",
      "epochSeconds",
      "expiryWarningEpochs",
      "allowInsecureHttp",
    ]);
    expect(schema.config.variables.apiKey).toMatchObject({ type: "string", secret: true });
    expect(schema.config.variables.allowInsecureHttp.type).toBe("boolean");
    expect(schema.provider.inputProperties.apiKey.secret).toBe(true);
  });
});
