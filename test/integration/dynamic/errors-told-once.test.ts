import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, type Emulator, startEmulator } from "../../../emulator";
import { storedFileProvider } from "../../../provider/dynamic/stored-file-provider";
import { storedFolderProvider } from "../../../provider/dynamic/stored-folder-provider";

/**
 * A failed refresh (or a refused preview) of a dynamic resource says why once. Pulumi's
 * dynamic-provider host prints an error of check, diff and read on stderr as
 * `${error}: ${error.stack}` (@pulumi/pulumi cmd/dynamic-provider), which the engine shows, and then
 * the engine reports the error's message: what the host prints must not repeat it.
 */

/** What the dynamic-provider host prints for an error of check, diff or read. */
const hostLine = (e: unknown) => `${e}: ${(e as Error).stack}`;
const count = (text: string, part: string) => text.split(part).length - 1;

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
  const config: Record<string, string> = { "tuskr:apiKey": EMULATOR_DEFAULT_API_KEY, "tuskr:baseUrl": emu.url, "tuskr:timeoutMs": "2000" };
  await storedFileProvider.configure({ config: { get: (k: string) => config[k] } });
});
afterAll(async () => {
  await emu?.close();
});

async function failure(work: () => Promise<unknown>): Promise<Error> {
  const error = await work().then(
    () => undefined,
    (e: Error) => e,
  );
  if (!error) throw new Error("expected a failure");
  return error;
}

describe("a refresh against a failing service says why once", () => {
  it("StoredFile: the engine's error holds the reason once, and the host's stderr line neither repeats it nor shows a call stack", async () => {
    const { blobId } = await emu.uploadFile({ content: "told once", filename: "once.txt" });
    const { outs } = await storedFileProvider.create({ blobId, tag: "t" });
    emu.setFaults({ script: [{ route: "*", fault: "5xx", times: 100 }] });
    try {
      const error = await failure(() => storedFileProvider.read(blobId, outs));
      expect(count(error.message, "503")).toBe(1);
      const printed = hostLine(error);
      expect(printed).not.toContain("503");
      expect(printed).not.toMatch(/\n\s+at /);
    } finally {
      emu.setFaults({});
    }
  });

  it("a StoredFolder kept as one resource: the same", async () => {
    const { blobId } = await emu.uploadFile({ content: "a folder's file", filename: "a.txt" });
    emu.setFaults({ script: [{ route: "*", fault: "5xx", times: 100 }] });
    let error: Error;
    try {
      error = await failure(() =>
        storedFolderProvider.read("site", {
          path: "site",
          entries: { h: { blobId, name: "a.txt", serviceUrl: emu.url } },
          manifest: { "a.txt": "h" },
        }),
      );
    } finally {
      emu.setFaults({});
    }
    expect(error.message).toMatch(/503/);
    const printed = hostLine(error);
    expect(printed).not.toContain(error.message);
    expect(printed).not.toMatch(/\n\s+at /);
  });

  it("a preview refused by diff: the same", async () => {
    const { blobId } = await emu.uploadFile({ content: "refused once", filename: "r.txt" });
    const { outs } = await storedFileProvider.create({ blobId });
    const error = await failure(() => storedFileProvider.diff(blobId, outs, { blobId, retentionEpochs: 500 }));
    expect(error.message).toMatch(/horizon|ahead/);
    const printed = hostLine(error);
    expect(printed).not.toContain(error.message);
    expect(printed).not.toMatch(/\n\s+at /);
  });
});
