import * as fs from "node:fs";
import * as path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { DOCUMENTED_ARGS_FILE, documentedArgsSource } from "../../../provider/docs/reference";

/**
 * What a TypeScript user sees on hover: each input of StoredFile (and of StoredFolder, which
 * shares them) carries the schema's documentation, the same text as docs/stored-file.md and the
 * plugin's package schema. Asked of TypeScript's own language service, as an editor asks it.
 */
const root = path.resolve(__dirname, "../../..");

function hover(program: string, word: string): string {
  const file = path.join(__dirname, "__hover__.ts");
  const host: ts.LanguageServiceHost = {
    getScriptFileNames: () => [file],
    getScriptVersion: () => "1",
    getScriptSnapshot: (name) => {
      const text = name === file ? program : fs.existsSync(name) ? fs.readFileSync(name, "utf8") : undefined;
      return text === undefined ? undefined : ts.ScriptSnapshot.fromString(text);
    },
    getCurrentDirectory: () => root,
    getCompilationSettings: () => ({
      strict: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.CommonJS,
      moduleResolution: ts.ModuleResolutionKind.Node10,
      esModuleInterop: true,
      skipLibCheck: true,
    }),
    getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
    fileExists: ts.sys.fileExists,
    readFile: ts.sys.readFile,
    readDirectory: ts.sys.readDirectory,
    directoryExists: ts.sys.directoryExists,
    getDirectories: ts.sys.getDirectories,
  };
  const info = ts.createLanguageService(host).getQuickInfoAtPosition(file, program.indexOf(word) + 1);
  return ts.displayPartsToString(info?.documentation ?? []);
}

// A language service type-checks the package and its dependencies' types first: seconds of CPU,
// more on a loaded machine (npm test runs this tier alongside the engine's), not a time to meet.
describe("per-field documentation on hover", { timeout: 60_000 }, () => {
  it("StoredFile's inputs show the schema's description, limit and what a change makes", () => {
    const program = 'import { StoredFile } from "../../../provider";\nnew StoredFile("f", { blobId: "b", tag: "t", retentionEpochs: 3 });\n';
    expect(hover(program, "tag:")).toMatch(/^A label used for filtering\.\nType and limit: string, ≤ 256 chars\.\nA change makes: one `PATCH`\./);
    expect(hover(program, "retentionEpochs:")).toMatch(/How long the file stays stored, in whole epochs/);
  });

  it("StoredFolder's shared inputs show the same documentation", () => {
    const program = 'import { StoredFolder } from "../../../provider";\nnew StoredFolder("s", { path: "p", metadata: { a: 1 } });\n';
    expect(hover(program, "metadata:")).toMatch(/^Free-form JSON metadata/);
  });

  it("provider/file/documented-args.ts is what the schemas generate (npm run docs)", () => {
    expect(fs.readFileSync(path.join(root, DOCUMENTED_ARGS_FILE), "utf8")).toBe(documentedArgsSource());
  });
});
