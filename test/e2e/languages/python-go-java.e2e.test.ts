import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { startEmulator } from "../../../emulator";
import {
  blobBytes,
  type EngineStack,
  type EngineStep,
  importedCode,
  renewsForLack,
  repoRoot,
  runSteps,
  stateKnowsEpoch,
  withStack,
} from "../../helpers/engine";

/**
 * examples/python, examples/go and examples/java through the real CLI and the tuskr provider
 * plugin, against the emulator, each set up as its README says, by its README's own commands run
 * as written from a copy of the folder outside the repository (test/helpers/readme.ts): the
 * package installed from `"$TUSKR_PACKAGE"`, the SDK generated from the plugin's schema (`pulumi
 * package gen-sdk`); for Python a virtualenv with requirements.txt and the SDK pip-installed, mypy
 * run by the language host before each run (Pulumi.yaml's typechecker); for Go, `go build` of the
 * program's module with the SDK replaced in; for Java, Maven (`mvn compile exec:java`) compiling
 * the SDK with the program; `pulumi login --local` (in a directory of the test's own), the stack
 * and its config, then the README's `pulumi up` as a step of the story. The Python and Go hosts
 * are the minimal ones scripts/ensure-pulumi builds (tools/pulumi-language-nodejs), run as
 * Pulumi's own hosts run programs; the Java host is Pulumi's own (scripts/ensure-language-hosts).
 * Requests are counted on the emulator, one for each language (they all upload the same
 * handbook: on one emulator, the second would find the first's purchases).
 *
 * Every command runs through the one engine driver (test/helpers/engine.ts): the README's in bash,
 * in the stack's environment; the story itself as steps (`story`), each a command and what must
 * hold after it.
 */

/** Replaces `from` with `to` in the program: a user's edit. Fails if `from` is not there. */
function edit(s: EngineStack, file: string, from: string, to: string): void {
  const p = path.join(s.workDir, file);
  const source = fs.readFileSync(p, "utf8");
  if (!source.includes(from)) throw new Error(`${file} has no ${JSON.stringify(from)}`);
  fs.writeFileSync(p, source.replace(from, to));
}

interface Language {
  project: string;
  program: string;
  /** What the README takes for granted and a test machine builds: the language's host. */
  prepare?(): Promise<unknown>;
  /** Output names: the handbook's blobId, the logo's remaining epochs (getFile). */
  outputs: { handbook: string; remaining: string };
  /** The logo's tag and the handbook's retention as the program declares them (then raised), and a type error. */
  logoTag: string;
  handbookRetention: [string, string];
  typeError: [string, string, RegExp];
  /** Adds the code `pulumi import` printed to the program, as a user pastes it. */
  paste(s: EngineStack, code: string): void;
}

/** `within`'s first group in `code`; fails naming what it looked for. */
function part(code: string, within: RegExp): string {
  const found = within.exec(code)?.[1];
  if (found === undefined) throw new Error(`no ${within} in the printed code:\n${code}`);
  return found;
}

const LANGUAGES: Record<string, Language> = {
  python: {
    project: "examples/python",
    program: "__main__.py",
    outputs: { handbook: "handbook_blob_id", remaining: "logo_remaining_epochs" },
    logoTag: 'tag="brand"',
    handbookRetention: ["retention_epochs=3,", "retention_epochs=5,"],
    // mypy, before the program runs: a string where the SDK types an int.
    typeError: [
      "retention_epochs=5,",
      'retention_epochs="5",',
      /mypy failed[\s\S]*__main__\.py:\d+: error: No overload variant of "StoredFile" matches argument types "str", "FileAsset", "str", "str", "dict\[str, str\]", "str"/,
    ],
    // A module of its own: appended whole, imports included.
    paste: (s, code) => fs.appendFileSync(path.join(s.workDir, "__main__.py"), `\n${code}`),
  },
  go: {
    project: "examples/go",
    program: "main.go",
    outputs: { handbook: "handbookBlobId", remaining: "logoRemainingEpochs" },
    logoTag: 'Tag:             pulumi.String("brand")',
    handbookRetention: ["RetentionEpochs: pulumi.Int(3)", "RetentionEpochs: pulumi.Int(5)"],
    typeError: ["RetentionEpochs: pulumi.Int(5)", 'RetentionEpochs: pulumi.String("5")', /cannot use pulumi\.String\("5"\)/],
    // The statements inside its pulumi.Run, as a block of their own (their `err` is theirs), before the program's `return nil`.
    paste: (s, code) => {
      const body = part(code, /pulumi\.Run\(func\(ctx \*pulumi\.Context\) error \{\n([\s\S]*?)\n\t*return nil\n\t*\}\)/);
      const source = fs.readFileSync(path.join(s.workDir, "main.go"), "utf8");
      const end = source.lastIndexOf("\t\treturn nil\n");
      fs.writeFileSync(path.join(s.workDir, "main.go"), `${source.slice(0, end)}\t\t{\n${body}\n\t\t}\n${source.slice(end)}`);
    },
  },
  java: {
    project: "examples/java",
    program: "src/main/java/tuskr/App.java",
    // Pulumi's Java host, built once and cached (CI builds it with the CLI).
    prepare: () => promisify(execFile)("bash", [path.join(repoRoot, "scripts/ensure-language-hosts"), "pulumi-language-java"]),
    outputs: { handbook: "handbookBlobId", remaining: "logoRemainingEpochs" },
    logoTag: '.tag("brand")',
    handbookRetention: [".retentionEpochs(3)", ".retentionEpochs(5)"],
    // javac, through Maven, before the program runs.
    typeError: [
      ".retentionEpochs(5)",
      '.retentionEpochs("5")',
      /COMPILATION ERROR[\s\S]*App\.java:\[\d+,\d+\] no suitable method found for retentionEpochs\(java\.lang\.String\)/,
    ],
    // The imports the program lacks, and the body of its stack method before the program's exports.
    paste: (s, code) => {
      const file = path.join(s.workDir, "src/main/java/tuskr/App.java");
      let source = fs.readFileSync(file, "utf8");
      const imports = [...code.matchAll(/^import [\w.]+;$/gm)].map((m) => m[0]).filter((line) => !source.includes(line));
      const body = part(code, /public static void stack\(Context ctx\) \{\n([\s\S]*?)\n\s*\}\n\}/);
      source = source.replace("package tuskr;\n", `package tuskr;\n${imports.map((line) => `\n${line}`).join("")}\n`);
      const exports = source.indexOf("            ctx.export(");
      fs.writeFileSync(file, `${source.slice(0, exports)}${body}\n${source.slice(exports)}`);
    },
  },
};

/** package.json's version: the one every generated SDK carries. */
const VERSION = (JSON.parse(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { version: string }).version;

const writes = (requests: Array<{ route: string; requestBody?: unknown }>) => requests.filter((r) => r.route !== "get").map((r) => [r.route, r.requestBody]);

/**
 * What every language's program goes through, as steps: a first preview, an up, an unchanged
 * preview and up, a tag edit, a raised retention, a type error, an import, a provider error,
 * destroy. `logo`: the blobId the program adopts; `report`: one it imports.
 */
function story(s: EngineStack, lang: Language, logo: string, report: string): EngineStep[] {
  const { emu, fileRequests } = s;
  const stored = (blobId: string) => emu.files().find((f) => f.blobId === blobId);
  // The handbook's blobId, from the up's outputs.
  let handbook = "";
  // The code `pulumi import` printed.
  let imported = "";
  // Whether the handbook's recorded state knew the service's epoch before its retention was raised.
  let handbookKnewEpoch = false;
  const [from, to, message] = lang.typeError;
  /** The program's logo tag, as `tag` instead of the one it declares. */
  const tagged = (tag: string) => lang.logoTag.replace("brand", tag);
  return [
    {
      name: "a new stack's preview reads at most (getFile); it writes nothing",
      command: { cli: ["preview"] },
      expect: (r) => {
        expect(r.code, r.output).toBe(0);
        expect(writes(fileRequests())).toEqual([]);
      },
    },
    {
      name: "the README's `pulumi up`: the stack, two files and the folder",
      command: { readme: "pulumi up" },
      expect: async (r) => {
        // The stack, two files and the folder (the engine does not count the default provider).
        expect(r.changes).toEqual({ create: 4 });
        // Two uploads (the handbook, the folder's index.html). The logo, uploaded for one epoch and
        // adopted: 1 epoch that shows the length, then the 3 its declared 5 still lack and the
        // keep-alive's 30 (fewer than 7 were left), in one renew.
        const created = writes(fileRequests());
        expect(created.filter(([route]) => route === "upload")).toHaveLength(2);
        expect(created.filter(([route]) => route === "renew")).toEqual([
          ["renew", { epochs: 1 }],
          ["renew", { epochs: 33 }],
        ]);
        handbook = r.outputs[lang.outputs.handbook] as string;
        expect(await blobBytes(emu, handbook)).toEqual(fs.readFileSync(path.join(repoRoot, lang.project, "files/handbook.md")));
        expect(stored(handbook)).toMatchObject({
          name: "handbook.md",
          tag: "docs",
          metadata: { team: "people", audience: "staff" },
          uploadEpochs: 3,
        });
        expect(stored(logo)).toMatchObject({ name: "logo.svg", tag: "brand", metadata: { team: "web" }, epochsBought: 34 });
        // getFile: what the service said of the logo, read after its purchase.
        expect(r.outputs[lang.outputs.remaining]).toEqual(expect.any(Number));
        // The SDK asked for the provider of package.json's version (not default_0_0_0).
        const resources = JSON.parse((await s.cli(["stack", "export"])).stdout).deployment.resources as Array<{ type: string; urn: string }>;
        expect(resources.filter((res) => res.type === "pulumi:providers:tuskr").map((res) => res.urn.split("::").pop())).toEqual([
          `default_${VERSION.replaceAll(".", "_")}`,
        ]);
      },
    },
    {
      name: "nothing changed: the preview only reads",
      command: "preview",
      expect: (r) => {
        expect(r.changes).toEqual({ same: 4 });
        expect(writes(fileRequests())).toEqual([]);
      },
    },
    {
      name: "nothing changed: the up only reads",
      command: "up",
      expect: (r) => {
        expect(r.changes).toEqual({ same: 4 });
        expect(writes(fileRequests())).toEqual([]);
      },
    },
    {
      name: "the logo's tag edited: one PATCH, with the tag alone",
      before: () => edit(s, lang.program, lang.logoTag, tagged("brand-2026")),
      command: "up",
      expect: (r) => {
        expect(r.changes).toEqual({ same: 3, update: 1 });
        expect(writes(fileRequests())).toEqual([["patch", { tag: "brand-2026" }]]);
        expect(stored(logo)).toMatchObject({ tag: "brand-2026", epochsBought: 34 });
      },
    },
    {
      name: "the handbook's retention raised from 3 to 5 epochs: the 2 it lacks, in one renew once the up knows the epoch",
      before: async () => {
        handbookKnewEpoch = await stateKnowsEpoch(s, handbook);
        edit(s, lang.program, ...lang.handbookRetention);
      },
      command: "up",
      expect: (r) => {
        expect(r.changes).toEqual({ same: 3, update: 1 });
        const renews = writes(fileRequests());
        expect(renews).toEqual(renewsForLack(2, handbookKnewEpoch, renews.length).map((epochs) => ["renew", { epochs }]));
        expect(stored(handbook)).toMatchObject({ uploadEpochs: 3, epochsBought: 2 });
      },
    },
    {
      name: "a type error fails the preview before the program runs: no request at all",
      before: () => edit(s, lang.program, from, to),
      command: { cli: ["preview"] },
      expect: (r) => {
        expect(r.code).not.toBe(0);
        expect(r.output).toMatch(message);
        expect(emu.requests()).toEqual([]);
      },
      after: () => edit(s, lang.program, to, from),
    },
    {
      name: "pulumi import of another file prints the code that declares it; it only reads",
      command: { cli: ["import", "--yes", "--protect=false", "--", "tuskr:index:StoredFile", "report", report] },
      expect: (r) => {
        expect(r.code, r.output).toBe(0);
        // One GET at the import's preview, one at the import.
        expect(fileRequests().map((q) => q.route)).toEqual(["get", "get"]);
        imported = importedCode(r.stdout ?? "");
        expect(imported).toContain(report);
        expect(imported).toContain("reports");
      },
    },
    {
      name: "the printed code pasted into the program: an up sends nothing",
      before: () => lang.paste(s, imported),
      command: "up",
      expect: (r) => {
        expect(r.changes).toEqual({ same: 5 });
        expect(emu.requests().filter((q) => q.path.includes(report))).toEqual([]);
        expect(writes(fileRequests())).toEqual([]);
      },
    },
    {
      // What Pulumi's own hosts show: the provider's message on the resource, "update failed" on
      // the stack; not the program's interrupt on the way out, nor the type checker's success.
      name: "a provider error reads as Pulumi's own: the provider's message and the summary, no traceback",
      before: () => {
        // Every PATCH answered 500: the tag edit fails in the provider, after its retries.
        emu.setFaults({ routes: { patch: { error5xxRate: 1, error5xxStatus: 500 } } });
        edit(s, lang.program, tagged("brand-2026"), tagged("brand-refused"));
      },
      command: { cli: ["up", "--yes"] },
      expect: (r) => {
        expect(r.code).not.toBe(0);
        expect(r.output).toMatch(/error: StoredFile "[^"]+": updating the file failed: PATCH \/v1\/files\/\S+ failed with 500 INTERNAL_ERROR/);
        expect(r.output).toMatch(/error: update failed/);
        expect(r.output).not.toMatch(/Traceback|KeyboardInterrupt|_InactiveRpcError|Resource monitor has terminated|Exception ignored/);
        expect(r.output).not.toMatch(/Success: no issues found/);
        expect(stored(logo)).toMatchObject({ tag: "brand-2026" });
      },
      after: () => {
        emu.setFaults({});
        edit(s, lang.program, tagged("brand-refused"), tagged("brand-2026"));
      },
    },
    {
      name: "destroy forgets the files: it sends nothing",
      command: "destroy",
      expect: (r) => {
        expect(r.changes).toEqual({ delete: 5 });
        expect(emu.requests()).toEqual([]);
      },
    },
  ];
}

describe.each(Object.keys(LANGUAGES))("examples/%s: through the real CLI and the tuskr provider plugin", (name) => {
  const lang = LANGUAGES[name];
  it("up, unchanged preview and up, a tag edit, a raised retention, a type error, an import, a provider error, destroy", async () => {
    const emu = await startEmulator({ port: 0 });
    const logoBytes = fs.readFileSync(path.join(repoRoot, "examples/basic/files/logo.svg"));
    const logo = (await emu.uploadFile({ content: Buffer.concat([logoBytes, Buffer.from(`<!-- ${name} ${Math.random()} -->`)]), filename: "logo.svg" })).blobId;
    const report = (await emu.uploadFile({ content: `report of ${name} ${Math.random()}`, filename: "report.csv", tag: "reports" })).blobId;
    await lang.prepare?.();
    await withStack(
      lang.project,
      async (s) => {
        await runSteps(s, story(s, lang, logo, report));
        // Every command of the README ran.
        expect(s.readme?.rest()).toEqual([]);
      },
      { emu, readme: { placeholders: { "<blobId>": logo } } },
    ).finally(() => emu.close());
  });
});
