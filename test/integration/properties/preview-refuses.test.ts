import { noticeLine } from "../../../provider/engine/notice";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startEmulator, type Emulator } from "../../../emulator";
import { StoredFilePlugin } from "../../../provider/plugin/provider";
import { StoredFileProvider } from "../../../provider/dynamic/stored-file-provider";
import { validateInputs } from "../../../provider/file/validate";
import { patchFile } from "../../helpers/emulator";
import { configuredProvider, configureProvider } from "../../helpers/provider-fixture";

/**
 * What the preview says is what the apply does: lengths are counted one way on both sides, a
 * file recorded as expired is refused at preview and nothing is sent at apply, secret inputs
 * never show in a message, and a refresh says which managed field changed outside the stack.
 */

let emu: Emulator;
let provider: StoredFileProvider;
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
  provider = await configuredProvider(emu);
});
afterAll(async () => {
  await emu?.close();
});
const upload = async (epochs = 3) => (await emu.uploadFile({ content: `f ${Math.random()}`, filename: "f.txt", epochs })).blobId;

describe("one way to count length, the service's", () => {
  it("a name of 129 emoji (258 UTF-16 units) fails check and the service alike; 128 pass both", async () => {
    const blobId = await upload();
    const over = "😀".repeat(129);
    const under = "😀".repeat(128);
    const refused = validateInputs({ blobId, name: over }).failures;
    expect(refused.map((f) => [f.property, f.reason])).toEqual([["name", "name must be at most 256 characters (got 258)"]]);
    expect((await patchFile(emu, blobId, { name: over })).status).toBe(422);
    expect(validateInputs({ blobId, name: under }).failures).toEqual([]);
    expect((await patchFile(emu, blobId, { name: under })).status).toBe(200);
  });
});

/**
 * An emulator and a provider with one-second epochs: a file bought for one epoch is expired, and
 * recorded as such, two seconds later, as a file is in a stack nobody touched for a while.
 */
let fast: Emulator;
let fastProvider: StoredFileProvider;
async function recordedThenExpired(declared: Record<string, unknown>) {
  fast ??= await startEmulator({ port: 0, epochSeconds: 1 });
  if (!fastProvider) {
    fastProvider = await configuredProvider(fast, { "tuskr:epochSeconds": "1" });
  }
  const blobId = (await fast.uploadFile({ content: `short ${Math.random()}`, epochs: 1 })).blobId;
  const { outs } = await fastProvider.create({ blobId, ...declared });
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(String(outs.expiresAt)) - Date.now()) + 100));
  fast.clearRequests();
  return { blobId, outs };
}
afterAll(async () => {
  await fast?.close();
});

describe("a file recorded as expired", () => {
  it("fails the preview with what the apply will do (nothing), and the apply sends no request", async () => {
    const { blobId, outs } = await recordedThenExpired({ tag: "t", retentionEpochs: 0 });
    const provider = fastProvider;
    const emu = fast;
    const news = { blobId, tag: "t", retentionEpochs: 3 };
    const preview = await provider.diff(blobId, outs, news).then(
      () => "no failure",
      (e: Error) => e.message,
    );
    expect(preview).toMatch(/expired at .* \(as last read\), and an expired file cannot be updated or renewed: nothing is sent/);
    const apply = await provider.update(blobId, outs, news).then(
      () => "no failure",
      (e: Error) => e.message,
    );
    expect(apply).toBe(preview);
    expect(emu.requests()).toEqual([]);
  });

  it("with nothing to change it only warns, and nothing is sent", async () => {
    const { blobId, outs } = await recordedThenExpired({ tag: "t" });
    const provider = fastProvider;
    const emu = fast;
    const log = vi.spyOn(console, "log").mockImplementation(() => undefined);
    try {
      expect((await provider.diff(blobId, outs, { blobId, tag: "t" })).changes).toBe(false);
      expect(log.mock.calls.flat().join("\n")).toMatch(/already expired/);
    } finally {
      log.mockRestore();
    }
    expect(emu.requests()).toEqual([]);
  });
});

describe("secret inputs never appear in a message", () => {
  const SECRET_TAG = "SECRET-TAG-VALUE-".repeat(20);
  it("check failures on a secret input name the field and the limit, not the value, and name no property (the engine prints that property's value)", () => {
    const { failures } = validateInputs({ blobId: "b1", tag: SECRET_TAG, retentionEpochs: 4.5 }, ["tag", "retentionEpochs"]);
    expect(failures).toEqual([
      { property: "", reason: "tag (a secret input): tag must be at most 256 characters", input: "tag", secret: true },
      { property: "", reason: "retentionEpochs (a secret input): retentionEpochs must be a whole number of epochs", input: "retentionEpochs", secret: true },
    ]);
  });

  it("nor in the provider's warnings and errors at apply", async () => {
    const { blobId, outs } = await recordedThenExpired({ name: "SECRET-NAME-0123", retentionEpochs: 0, __secretInputs: ["name"] });
    const provider = fastProvider;
    const log = vi.spyOn(console, "log").mockImplementation(() => undefined);
    try {
      const error = await provider.update(blobId, outs, { blobId, name: "SECRET-NAME-0123", retentionEpochs: 2, __secretInputs: ["name"] }).then(
        () => "",
        (e: Error) => e.message,
      );
      const diff = await provider.diff(blobId, outs, { blobId, name: "SECRET-NAME-0123", __secretInputs: ["name"] }).then(
        () => "",
        (e: Error) => e.message,
      );
      const printed = [error, diff, ...log.mock.calls.flat().map(String)].join("\n");
      expect(error).toMatch(/expired/);
      expect(printed).toMatch(/already expired/);
      expect(printed).not.toContain("SECRET-NAME-0123");
    } finally {
      log.mockRestore();
    }
  });
});

describe("refresh says what differs from what the stack set", () => {
  it("names each managed field changed, old → new, and not unmanaged ones", async () => {
    const blobId = await upload();
    const { outs } = await provider.create({ blobId, tag: "declared", metadata: { team: "web" } });
    await patchFile(emu, blobId, { tag: "other-stack", name: "unmanaged.txt", metadata: { team: "ops" } });
    const log = vi.spyOn(console, "log").mockImplementation(() => undefined);
    try {
      await provider.read(blobId, outs);
      const lines = log.mock.calls.flat().map(String);
      expect(lines).toEqual([
        expect.stringMatching(
          /tag differs from what this stack set: "declared" → "other-stack"; changed outside this stack, or another stack declares the same content; the next `pulumi up` sets it back/,
        ),
        expect.stringMatching(/metadata differs from what this stack set: \{"team":"web"\} → \{"team":"ops"\}/),
      ]);
    } finally {
      log.mockRestore();
    }
  });
});

describe("a stack with no API key fails at preview, naming the key's config", () => {
  it("the dynamic resource's check and the plugin's provider config refuse it before any request", async () => {
    const saved = process.env.TUSKR_API_KEY;
    delete process.env.TUSKR_API_KEY;
    try {
      emu.clearRequests();
      const noKey = new StoredFileProvider();
      await noKey.configure({ config: { get: (k: string) => ({ "tuskr:baseUrl": emu.url })[k] } });
      await expect(noKey.check({}, { blobId: "b1", tag: "t" })).rejects.toThrow(/tuskr:apiKey is not set: .*pulumi config set --secret tuskr:apiKey/);
      const plugin = new StoredFilePlugin(() => undefined);
      expect(plugin.checkConfig({ baseUrl: emu.url }).failures).toEqual([{ property: "apiKey", reason: expect.stringMatching(/^tuskr:apiKey is not set/) }]);
      expect(emu.requests()).toEqual([]);
    } finally {
      if (saved !== undefined) process.env.TUSKR_API_KEY = saved;
    }
  });
});

describe("a secret input never reaches a message, whatever its length or content", () => {
  it("a secret name with quotes and a line break, and a two-character secret tag, are masked in every form", async () => {
    const lines: string[] = [];
    const logging = new StoredFileProvider({}, (notice) => lines.push(noticeLine(notice)));
    await configureProvider(logging, emu);
    const name = 'q"u\note';
    const blobId = (await emu.uploadFile({ content: `secret forms ${Math.random()}` })).blobId;
    const { outs } = await logging.create({ blobId, name, tag: "ok", __secretInputs: ["name", "tag"] });
    await patchFile(emu, blobId, { tag: "changed-elsewhere", name: "changed-too" });
    await logging.read(blobId, outs);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      for (const form of [name, JSON.stringify(name).slice(1, -1), encodeURIComponent(name), "ok"]) expect(line).not.toContain(form);
    }
  });
});
