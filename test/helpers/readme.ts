import * as fs from "node:fs";
import * as path from "node:path";

/**
 * An example's README as a user runs it: the commands of its first `sh` block, in order, in a copy
 * of the example's folder outside this repository, each line run by bash exactly as written except
 * for what a user fills in (a placeholder: `tsk_...`, the service's URL, a blobId) and one line:
 * `pulumi login --local` means `file://~`, the home directory of the user in /etc/passwd, which a
 * test must not write, so it logs in to `file://<a directory of the test's own>` instead, the same
 * kind of backend. test/helpers/engine.ts runs them (`StackOptions.readme`).
 */

/** The example's README, as a path relative to the repository. */
const readmeOf = (project: string) => path.join(project, "README.md");

/** The commands of the first `sh` block of `<project>/README.md`, one per line, as written (comments included: bash skips them). */
export function readmeCommands(repoRoot: string, project: string): string[] {
  const text = fs.readFileSync(path.join(repoRoot, readmeOf(project)), "utf8");
  const block = /^```sh\n([\s\S]*?)^```/m.exec(text)?.[1];
  if (block === undefined) throw new Error(`${readmeOf(project)} has no sh block`);
  return block.split("\n").filter((line) => line.trim() !== "" && !line.trim().startsWith("#"));
}

/** A README line without its comment: what a test names it by. */
export const commandOf = (line: string): string => line.replace(/\s+#(\s.*)?$/, "").trim();

/** The line as run: its placeholders filled (longest first), `pulumi login --local` logged in to `stateDir`. */
export function asRun(line: string, placeholders: Readonly<Record<string, string>>, stateDir: string): string {
  let out = line;
  for (const [placeholder, value] of Object.entries(placeholders).sort(([a], [b]) => b.length - a.length)) out = out.split(placeholder).join(value);
  return out.replace(/^pulumi login --local\b/, `pulumi login file://${stateDir}`);
}

/** The stack a README makes (`pulumi stack init <name>`, `pulumi stack select <name> --create`). */
export function readmeStack(commands: readonly string[]): string {
  for (const line of commands) {
    const m = /^pulumi stack (?:init|select) (\S+)/.exec(commandOf(line));
    if (m) return m[1];
  }
  throw new Error("the README makes no stack (pulumi stack init / select --create)");
}

/** The README's set-up: its commands before the first that runs the program (a preview or an up). */
export const setUpCount = (commands: readonly string[]): number => {
  const i = commands.findIndex((line) => /^pulumi (preview|up)\b/.test(commandOf(line)));
  return i < 0 ? commands.length : i;
};

/**
 * Copies an example as a user gets it from a clone: without what its .gitignore names at its top
 * (node_modules, a virtualenv, generated SDKs, builds), which a run of it in place may have left.
 */
export function copyAsCloned(source: string, dest: string): void {
  const ignoreFile = path.join(source, ".gitignore");
  const ignored = new Set(["node_modules"]);
  if (fs.existsSync(ignoreFile)) {
    for (const line of fs.readFileSync(ignoreFile, "utf8").split("\n")) {
      const name = line.trim().replace(/\/$/, "");
      if (name && !name.startsWith("#")) ignored.add(name);
    }
  }
  fs.cpSync(source, dest, { recursive: true, filter: (src) => src === source || !ignored.has(path.relative(source, src).split(path.sep)[0]) });
}
