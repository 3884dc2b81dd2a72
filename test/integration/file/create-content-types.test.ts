import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, type Emulator, startEmulator } from "../../../emulator";
import { STORED_FILE_TYPES } from "../../../provider/engine/urns";
import type { StoredFileProvider } from "../../../provider/dynamic/stored-file-provider";
import { configuredProvider } from "../../helpers/provider-fixture";

/**
 * Files are served with the type their upload carried: detected from the name, or declared
 * (`contentType`); the record's `mimeType` is an output; a declared type that the stored bytes
 * do not have is said, and nothing is sent for it (the service keeps the type of an upload).
 */

const urn = (name: string) => `urn:pulumi:dev::proj::${STORED_FILE_TYPES.dynamic}::${name}`;
const FILE_SIG = { [SIG_KEY]: ASSET_SIG };
const hashOf = (bytes: string) => createHash("sha256").update(bytes).digest("hex");

let emu: Emulator | undefined;
let dir: string | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
  vi.restoreAllMocks();
});

async function setup(): Promise<{ e: Emulator; file: (rel: string, text: string) => Record<string, unknown>; run: () => Promise<StoredFileProvider> }> {
  const e = await startEmulator({ port: 0 });
  emu = e;
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-types-"));
  dir = root;
  const file = (rel: string, text: string) => {
    fs.writeFileSync(path.join(root, rel), text);
    return { ...FILE_SIG, path: path.join(root, rel), hash: hashOf(text) };
  };
  return { e, file, run: () => configuredProvider(e, {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } }) };
}

/** What the file's url serves: its type and bytes (the emulator's CDN asks for the key too). */
async function served(url: string): Promise<{ type: string | null; body: string }> {
  const res = await fetch(url, { headers: { Authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}` } });
  return { type: res.headers.get("content-type"), body: await res.text() };
}

describe("content types", () => {
  it("each upload carries the type its name tells; the record's mimeType is an output and what the url serves", async () => {
    const { e, file, run } = await setup();
    const p = await run();
    const cases: Array<[string, string, string]> = [
      ["index.html", "<!doctype html><p>hi</p>", "text/html"],
      ["site.css", "p { color: red }", "text/css"],
      ["logo.svg", "<svg xmlns='http://www.w3.org/2000/svg'/>", "image/svg+xml"],
      ["data.json", '{"a":1}', "application/json"],
      ["LICENSE", "MIT", "application/octet-stream"],
    ];
    for (const [rel, text, type] of cases) {
      const { outs } = await p.create({ source: file(rel, text), __urn: urn(rel) });
      expect(outs.mimeType).toBe(type);
      expect(e.files().find((f) => f.blobId === outs.blobId)?.mimeType).toBe(type);
      expect(await served(String(outs.url))).toEqual({ type: expect.stringContaining(type), body: text });
    }
  });

  it("a declared contentType overrides the detected one; a declared name's extension wins over the path's", async () => {
    const { file, run } = await setup();
    const p = await run();
    const declared = await p.create({ source: file("page.txt", "<p>html in a .txt</p>"), contentType: "text/html; charset=utf-8", __urn: urn("a") });
    // The emulator records the media type of the part, without its parameters.
    expect(declared.outs).toMatchObject({ mimeType: "text/html", contentType: "text/html; charset=utf-8" });
    const byName = await p.create({ source: file("blob.bin", "body { margin: 0 }"), name: "theme.css", __urn: urn("b") });
    expect(byName.outs.mimeType).toBe("text/css");
    const byPath = await p.create({ source: file("icon.svg", "<svg/>"), name: "Icon", __urn: urn("c") });
    expect(byPath.outs.mimeType).toBe("image/svg+xml");
  });

  it("a change of contentType on stored bytes: shown in the diff, said in a notice, nothing sent; mimeType stays the served type", async () => {
    const { e, file, run } = await setup();
    const source = file("notes.md", "# notes");
    const { id, outs } = await (await run()).create({ source, __urn: urn("n") });
    expect(outs.mimeType).toBe("text/markdown");
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    const news = { source, contentType: "text/plain", __urn: urn("n") };
    const diff = await (await run()).diff(id, outs, news);
    expect(diff).toMatchObject({ changes: true, replaces: [] });
    expect(lines.join("\n")).toMatch(
      /contentType text\/plain: the service keeps the type these bytes were uploaded with and no request changes it: nothing is sent, it stays served as text\/markdown/,
    );
    e.clearRequests();
    const { outs: after } = await (await run()).update(id, outs, news);
    expect(e.requests()).toEqual([]);
    expect(after).toMatchObject({ contentType: "text/plain", mimeType: "text/markdown" });
    // Recorded as declared: the next preview shows no change.
    expect((await (await run()).diff(id, after, news)).changes).toBe(false);
  });

  it("bytes stored earlier with another type: the existing entry's type is kept and said", async () => {
    const { e, file, run } = await setup();
    await e.uploadFile({ content: "same bytes", filename: "first.bin", mimeType: "application/x-first" });
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    const { outs } = await (await run()).create({ source: file("same.txt", "same bytes"), __urn: urn("s") });
    expect(outs.mimeType).toBe("application/x-first");
    expect(lines.join("\n")).toMatch(/already stored this content with the type application\/x-first, which it keeps .* not as text\/plain/);
  });

  it("check: a malformed type, one with a line break, and a type with blobId fail before any request, naming the field", async () => {
    const { e, run } = await setup();
    const p = await run();
    const blobId = "Xk3q9vH2s7nR0dLw1pY4bC8eF5gJ6mA2tU9zQ0oI1sE";
    const text = { ...FILE_SIG, text: "x", hash: hashOf("x") };
    for (const [news, reason] of [
      [{ source: text, contentType: "html" }, /contentType must be a media type, type\/subtype/],
      [{ source: text, contentType: "text/html\r\nX-Injected: 1" }, /contentType must be a media type/],
      // A line break (or a character no header may carry) before a parameter, or inside a quoted one.
      [{ source: text, contentType: "text/html\r\n\r\n; a=b" }, /contentType must be a media type/],
      [{ source: text, contentType: 'text/html; a="x\u0000y"' }, /contentType must be a media type/],
      [{ source: text, contentType: 'text/html; a="é"' }, /contentType must be a media type/],
      [{ source: text, contentType: `text/${"x".repeat(300)}` }, /contentType must be at most 255 characters/],
      [{ blobId, contentType: "text/html" }, /contentType goes with source/],
    ] as const) {
      const { failures } = await p.check({}, { ...news, __urn: urn("bad") });
      expect(failures).toEqual([{ property: "contentType", reason: expect.stringMatching(reason) }]);
    }
    expect(e.requests()).toEqual([]);
  });
});
