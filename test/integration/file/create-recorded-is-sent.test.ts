import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { blobIdOf, type Emulator, startEmulator } from "../../../emulator";
import { configuredProvider } from "../../helpers/provider-fixture";

/**
 * What a StoredFile records is what it sent: the engine hashes a `source` file when the program
 * registers it, the provider uploads it later; a file rewritten in between is uploaded as it is
 * then, and the hash and size recorded are those of the bytes the service received.
 */

let emu: Emulator;
let dir: string;
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-sent-"));
});
afterAll(async () => {
  await emu.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

it("a file rewritten (another size) after the engine hashed it: the bytes uploaded are the ones recorded", async () => {
  const file = path.join(dir, "report.csv");
  const before = Buffer.from(`a,b\n${Math.random()}\n`);
  const after = Buffer.from(`a,b,c\n${Math.random()}\n${"x".repeat(500)}\n`);
  fs.writeFileSync(file, before);
  // The engine's wire form of the asset, as registered: the hash of the bytes it read then.
  const source = { [SIG_KEY]: ASSET_SIG, path: file, hash: sha256(before) };
  fs.writeFileSync(file, after);
  const provider = await configuredProvider(emu);
  const { id, outs } = await provider.create({ source, retentionEpochs: 1, __urn: "urn:pulumi:dev::p::t::report" });
  expect(id).toBe(blobIdOf(after));
  expect(outs).toMatchObject({ __sourceHash: sha256(after), size: after.length });
  expect(emu.files().find((f) => f.blobId === id)?.size).toBe(after.length);
});
