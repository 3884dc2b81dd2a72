import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, expect, it } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, type Emulator, startEmulator } from "../../../emulator";
import { noticeLine } from "../../../provider/engine/notice";
import { StoredFileCore } from "../../../provider/file/core";
import { StoredFolderCore } from "../../../provider/folder/core";
import { validatedInputs } from "../../../provider/folder/inputs";
import { patchFile } from "../../helpers/emulator";

/**
 * A folder's shared value made secret without changing it: the update records the folder's and
 * its entries' secret names (sending nothing), so a later refresh does not show the value.
 */

const URN = "urn:pulumi:dev::proj::tuskr:index:StoredFolder::site";
const TAG = "customer-acme-corp-internal";
let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

it("a shared tag made secret, its value unchanged: an update records the names, a later refresh does not show it, and the next diff is none", async () => {
  emu = await startEmulator({ port: 0 });
  const e = emu;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "secret-later-"));
  for (let i = 0; i < 3; i++) fs.writeFileSync(path.join(dir, `f${i}.txt`), `file ${i} ${Math.random()}`);
  const logs: string[] = [];
  const files = new StoredFileCore({ retry: { baseDelayMs: 1, maxDelayMs: 5 } }, (n) => void logs.push(noticeLine(n)));
  files.configure({ get: (k: string) => ({ "tuskr:apiKey": EMULATOR_DEFAULT_API_KEY, "tuskr:baseUrl": e.url })[k] } as never);
  const core = new StoredFolderCore(files, (n) => void logs.push(noticeLine(n)));
  const plain = core.check(() => ({}), validatedInputs({ path: dir, tag: TAG }, []), [], URN);
  const created = await core.create({ inputs: plain.inputs, urn: URN, secretInputs: [] });
  const secret = core.check(() => plain.inputs, validatedInputs({ path: dir, tag: TAG }, ["tag"]), ["tag"], URN);
  const req = { inputs: secret.inputs, urn: URN, secretInputs: ["tag"] };
  e.clearRequests();
  expect(core.diff(created.id, created.state, req, plain.inputs).changes).toBe(true);
  const updated = await core.update(created.id, () => created.state, req);
  expect(e.requests().filter((r) => r.method !== "GET")).toEqual([]);
  expect(updated.secretInputs).toEqual(["tag"]);
  expect(core.diff(created.id, updated, req, secret.inputs).changes).toBe(false);
  await patchFile(e, Object.values(updated.blobIds as Record<string, string>)[0], { tag: "edited-by-hand" });
  logs.length = 0;
  await core.read(created.id, updated, URN);
  expect(logs.join("\n")).not.toContain("acme-corp");
  fs.rmSync(dir, { recursive: true, force: true });
});
