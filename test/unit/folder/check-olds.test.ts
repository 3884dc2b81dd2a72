import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { StoredFileCore } from "../../../provider/file/core";
import { StoredFolderCore } from "../../../provider/folder/core";
import { validatedInputs } from "../../../provider/folder/inputs";

/**
 * A folder's check reads the inputs recorded before only to tell whether a declared date is as
 * before (a date already declared is not judged again): at 100,000 files that record is a text
 * of megabytes, read for nothing when no entry declares a date.
 */

const URN = "urn:pulumi:dev::proj::tuskr:index:StoredFolder::site";
let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-check-olds-"));
  for (const name of ["a.txt", "b.txt"]) fs.writeFileSync(path.join(dir, name), name);
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function checkWith(declared: Record<string, unknown>) {
  const files = new StoredFileCore({}, () => undefined);
  files.configure({ get: (key: string) => ({ "tuskr:apiKey": "k", "tuskr:baseUrl": "http://127.0.0.1:1" })[key] });
  const core = new StoredFolderCore(files, () => undefined);
  const first = core.check(() => ({}), validatedInputs({ path: dir, ...declared }, []), [], URN);
  expect(first.failures).toEqual([]);
  const olds = vi.fn(() => first.inputs);
  expect(core.check(olds, validatedInputs({ path: dir, ...declared }, []), [], URN).failures).toEqual([]);
  return olds;
}

it("no entry declares a date: the recorded inputs are not read", () => {
  expect(checkWith({ retentionEpochs: 2 })).not.toHaveBeenCalled();
});

it("an entry declares a date: the recorded inputs are read once, for every entry", () => {
  expect(checkWith({ retainUntil: new Date(Date.now() + 10 * 86_400_000).toISOString() })).toHaveBeenCalledTimes(1);
});
