import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noticeLine } from "../../../provider/engine/notice";
import { StoredFileCore } from "../../../provider/file/core";
import { StoredFolderCore } from "../../../provider/folder/core";
import { validatedInputs } from "../../../provider/folder/inputs";
import { FOLDER_INPUT_FIELDS } from "../../../provider/folder/schema";

/**
 * A folder's check walks its path with its globs: a refusal of a secret path, include or exclude
 * names no property (the engine would print its value) and is made without the value, and the
 * warnings the walk gives mask the secret texts they quote.
 */

const URN = "urn:pulumi:dev::proj::tuskr:index:StoredFolder::site";
const MARK = "SEKRIT9";
let root: string;
let dir: string;
beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), `tuskr-${MARK}-`));
  dir = path.join(root, "site");
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, "a.txt"), "a");
  fs.writeFileSync(path.join(root, `${MARK}.txt`), "outside");
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** A folder's check as a front door runs it, with what it logged. */
function check(inputs: Record<string, unknown>, secretInputs: string[], urn: string | null = URN) {
  const logged: string[] = [];
  const files = new StoredFileCore({}, () => undefined);
  files.configure({ get: (key: string) => ({ "tuskr:apiKey": "k", "tuskr:baseUrl": "http://127.0.0.1:1" })[key] });
  const core = new StoredFolderCore(files, (notice) => void logged.push(noticeLine(notice)));
  const { failures } = core.check(() => ({}), validatedInputs(inputs, secretInputs), secretInputs, urn ?? undefined);
  return { failures, logged };
}

const secretFailure = (input: string, reason: string) => [{ property: "", reason: `${input} (a secret input): ${reason}`, input, secret: true }];

describe("a folder's secret path, include and exclude in its check", () => {
  it("a glob that leaves the folder: refused naming no property and not the glob; the same glob not secret is named", () => {
    const leaves = `StoredFolder "site": the include glob leaves the folder; globs are relative to the folder's path and stay inside it`;
    expect(check({ path: dir, include: [`../${MARK}/*`] }, ["include"]).failures).toEqual(secretFailure("include", leaves));
    expect(check({ path: dir, exclude: [`/${MARK}`] }, ["exclude"]).failures).toEqual(secretFailure("exclude", leaves.replace("include", "exclude")));
    // Braces reaching out are caught on what they matched, which is the glob's to hide too.
    expect(check({ path: dir, include: [`..{,}/${MARK}*`] }, ["include"]).failures).toEqual(
      secretFailure("include", `StoredFolder "site": the include globs match outside the folder; globs are relative to the folder's path and stay inside it`),
    );
    // Not secret: named, and the secret path beside it is not shown.
    expect(check({ path: dir, include: ["../x/*"] }, ["path"]).failures).toEqual([
      {
        property: "include",
        reason: `StoredFolder "site": the include glob "../x/*" leaves the folder; globs are relative to the folder's path and stay inside it`,
      },
    ]);
  });

  it("a path that does not exist, or holds a link: refused without the path (or the link's target, which may hold it)", () => {
    const missing = path.join(root, MARK);
    expect(check({ path: missing }, ["path"]).failures).toEqual(
      secretFailure("path", `StoredFolder "site": the folder does not exist (paths are relative to the program's directory, ${process.cwd()})`),
    );
    expect(check({ path: missing }, []).failures).toEqual([{ property: "path", reason: expect.stringContaining(`path ${missing} does not exist`) }]);
    const linked = path.join(root, "linked");
    fs.mkdirSync(linked);
    fs.symlinkSync(path.join(root, "elsewhere"), path.join(linked, "link"));
    expect(check({ path: linked }, ["path"]).failures).toEqual(
      secretFailure(
        "path",
        `StoredFolder "site": link in the folder is a symbolic link: a folder uploads regular files only, following no link; exclude it (exclude: ["link"]) or put the file there`,
      ),
    );
    // Without a URN a folder is named by its path: not when that is secret.
    expect(check({ path: missing }, ["path"], null).failures[0].reason).toMatch(
      /^path \(a secret input\): StoredFolder "\(a secret path\)": the folder does not exist/,
    );
  });

  it("the warnings for globs that match nothing and files[path] matching no file mask the secret texts they quote", () => {
    const { failures, logged } = check({ path: dir, include: [`${MARK}*.none`] }, ["include"]);
    expect(failures).toEqual([]);
    expect(logged).toEqual([`warning: StoredFolder "site": no file of ${dir} matches include ["[REDACTED]"]: the folder keeps no file`]);
    const typo = check({ path: dir, files: { [`${MARK}-typo.txt`]: { tag: "draft-tag-7" } } }, ["path", "files"]);
    expect(typo.failures).toEqual([]);
    expect(typo.logged).toEqual([`warning: StoredFolder "site": files["[REDACTED]"] names no file of [REDACTED] that the globs match; it is ignored`]);
  });

  it("an input a folder does not have, secret: refused naming no property", () => {
    expect(validatedInputs({ path: dir, paht: MARK }, ["paht"]).failures).toEqual(
      secretFailure("paht", `paht is not an input of StoredFolder (inputs: ${FOLDER_INPUT_FIELDS.join(", ")}); it would be ignored, so it is refused`),
    );
  });
});
