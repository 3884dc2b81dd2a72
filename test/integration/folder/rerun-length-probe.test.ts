import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, expect, it, vi } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, startEmulator, type Emulator } from "../../../emulator";
import { StoredFileCore } from "../../../provider/file/core";
import { StoredFolderCore } from "../../../provider/folder/core";
import { validatedInputs } from "../../../provider/folder/inputs";

const URN = "urn:pulumi:dev::proj::tuskr:index:StoredFolder::site";
let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
  vi.restoreAllMocks();
});

for (const L of [3600])
  for (const idempotency of ["ignore"] as const)
    it(`L=${L}, setting unset, keys ${idempotency}: a 16-file folder whose first up was killed after every upload (nothing recorded), run again: one length probe, not one per worker`, async () => {
      emu = await startEmulator({ port: 0, epochSeconds: L, idempotency });
      const e = emu;
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rerun-"));
      for (let i = 0; i < 16; i++) fs.writeFileSync(path.join(dir, `f${String(i).padStart(2, "0")}.txt`), `file ${i} ${Math.random()}`);
      const mk = () => {
        const files = new StoredFileCore({ retry: { baseDelayMs: 1, maxDelayMs: 5 } }, () => {});
        files.configure({ get: (k: string) => ({ "tuskr:apiKey": EMULATOR_DEFAULT_API_KEY, "tuskr:baseUrl": e.url })[k] } as never);
        return new StoredFolderCore(files, () => {});
      };
      const start = e.currentEpoch();
      const a = mk();
      const c = a.check(() => ({}), validatedInputs({ path: dir, retentionEpochs: 10 }, []), [], URN);
      await a.create({ inputs: c.inputs, urn: URN, secretInputs: [] }); // its state is lost: the engine never recorded it
      const b = mk();
      const c2 = b.check(() => ({}), validatedInputs({ path: dir, retentionEpochs: 10 }, []), [], URN);
      await b.create({ inputs: c2.inputs, urn: URN, secretInputs: [] });
      const renews = e
        .requests()
        .filter((x) => x.route === "renew")
        .map((x) => (x.requestBody as { epochs: number }).epochs);
      // One probe in flight per provider process: the other workers wait for its length and count in it.
      expect(renews).toEqual([1]);
      expect(Math.min(...e.files().map((f) => f.endEpoch - start))).toBeGreaterThanOrEqual(10);
    }, 120_000);
