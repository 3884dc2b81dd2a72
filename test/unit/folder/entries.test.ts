import { describe, expect, it } from "vitest";
import {
  type EntryOutputs,
  fromOutputTexts,
  packEntries,
  pathMap,
  pathParts,
  pathText,
  recordedManifest,
  unpackEntries,
  withOutputTexts,
} from "../../../provider/folder/entries";
import { folderEntries } from "../../../provider/folder/walk";
import type { StoredFileState } from "../../../provider/file/schema";

/**
 * A folder's entries as its state records them: small (what the outputs already say, and what
 * every entry holds alike, written once), read back exactly, and the previous release's format
 * (each entry whole, keyed by hash) still read.
 */

const H = (c: string) => c.repeat(64);
const entry = (c: string, extra: Partial<StoredFileState> = {}): StoredFileState => ({
  blobId: `blob-${c}`,
  url: `http://127.0.0.1:1/cdn/blob-${c}`,
  size: 1024,
  mimeType: "text/html",
  createdAt: `2026-11-24T10:00:0${c.charCodeAt(0) % 10}.000Z`,
  expiresAt: "2026-11-27T10:00:00.000Z",
  name: `${c}.html`,
  tag: "site",
  retentionEpochs: 3,
  retentionDeclared: true,
  // Created in the epoch that began at 10:00:00: the start is that, whatever the second of the upload.
  retentionStartAfterCreated: 0 - (c.charCodeAt(0) % 10) * 1000,
  sourceHash: H(c),
  ...extra,
});

/** The outputs a folder records for these entries: each path's blobId and url. */
function outputsOf(manifest: Record<string, string>, entries: Map<string, StoredFileState>): EntryOutputs {
  const blobIds: Record<string, string> = {};
  const urls: Record<string, string> = {};
  for (const [rel, hash] of Object.entries(manifest)) {
    const e = entries.get(hash)!;
    if (e.blobId) blobIds[rel] = e.blobId;
    if (e.url) urls[rel] = e.url;
  }
  return { manifest, blobIds, urls };
}

describe("a folder's recorded entries", () => {
  const entries = new Map<string, StoredFileState>([
    [H("a"), entry("a")],
    // Another type, its own metadata, no url reported.
    [H("b"), entry("b", { mimeType: "text/css", metadata: { owner: "web" }, url: undefined })],
    [H("c"), entry("c", { tag: "other", retainUntil: "2027-01-01T00:00:00Z" })],
    // An entry no path names any more (a refresh keeps it until the next write).
    [H("d"), entry("d")],
  ]);
  const manifest = { "a.html": H("a"), "z/a-copy.html": H("a"), "b.css": H("b"), "c.html": H("c") };
  const outputs = outputsOf(manifest, entries);

  it("are read back as they were written", () => {
    const text = packEntries(entries, outputs);
    expect(unpackEntries(text, outputs)).toEqual(entries);
  });

  it("make the same text whatever order the entries, their fields and their values' keys come in", () => {
    const reversed = (v: unknown): unknown =>
      v !== null && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(
            Object.entries(v)
              .reverse()
              .map(([k, x]) => [k, reversed(x)]),
          )
        : v;
    const shuffled = new Map([...entries].reverse().map(([hash, e]) => [hash, reversed(e) as StoredFileState]));
    expect(packEntries(shuffled, outputs)).toBe(packEntries(entries, outputs));
  });

  it("say each blobId, url and content hash only where the outputs do not, and a value every entry holds once", () => {
    const text = packEntries(entries, outputs);
    // Said by the outputs (blobIds, urls and the hash at the first path, under which the entry is): not repeated.
    for (const c of ["a", "b", "c"]) expect(text.split(`blob-${c}`).length - 1).toBe(0);
    for (const c of ["a", "b", "c"]) expect(text).not.toContain(H(c));
    expect(JSON.parse(text).byPath).toHaveProperty(["a.html"]);
    // Not in the outputs (no path names it): kept with the entry, under its hash.
    expect(text).toContain('"blobId":"blob-d"');
    expect(text.split(H("d")).length - 1).toBe(1);
    // Held alike by every entry: once (the retention start, as a time, too).
    expect(text.split('"expiresAt"').length - 1).toBe(1);
    expect(text.split('"retentionStartMs"').length - 1).toBe(1);
    expect(text).not.toContain('"retentionStartAfterCreated"');
    // Not alike: with each entry.
    expect(text.split('"createdAt"').length - 1).toBe(4);
  });

  it("say a name only where it is not the entry's first path; an entry without a name stays without one", () => {
    const unnamed = new Map([...entries, [H("e"), entry("e", { name: undefined })]]);
    const withE = outputsOf({ ...manifest, "e.txt": H("e") }, unnamed);
    const text = packEntries(unnamed, withE);
    expect(text).not.toContain('"name":"a.html"');
    expect(text).not.toContain('"name":"c.html"');
    expect(text).toContain('"name":"b.html"');
    expect(unpackEntries(text, withE)).toEqual(unnamed);
    expect(unpackEntries(text, withE).get(H("e"))?.name).toBeUndefined();
  });

  it("an entry under a path that is not its content's first path, or not in the manifest, is not read (found again by its upload)", () => {
    const text = JSON.parse(packEntries(entries, outputs));
    text.byPath["z/a-copy.html"] = text.byPath["a.html"];
    delete text.byPath["a.html"];
    text.byPath["gone.html"] = {};
    const read = unpackEntries(JSON.stringify(text), outputs);
    expect([...read.keys()].sort()).toEqual([H("b"), H("c"), H("d")]);
  });

  it("a retention start that is not a whole millisecond from createdAt, or an entry without createdAt, is written as it is", () => {
    const odd = new Map([
      [H("a"), entry("a", { retentionStartAfterCreated: -100.5 })],
      [H("c"), entry("c", { createdAt: undefined })],
    ]);
    const text = packEntries(odd, outputs);
    expect(text.split('"retentionStartAfterCreated"').length - 1).toBe(2);
    expect(unpackEntries(text, outputs)).toEqual(odd);
  });

  it("written in format 2 (every name written) are read as they are: no name is derived", () => {
    const { a, e } = { a: entry("a"), e: entry("e", { name: undefined }) };
    const strip = ({ blobId: _b, url: _u, sourceHash: _h, ...rest }: StoredFileState) => rest;
    const format2 = JSON.stringify({ format: 2, shared: {}, entries: { [H("a")]: strip(a), [H("e")]: strip(e) } });
    const two = new Map([
      [H("a"), a],
      [H("e"), e],
    ]);
    expect(unpackEntries(format2, outputsOf({ "a.html": H("a"), "e.txt": H("e") }, two))).toEqual(two);
  });

  it("written by the previous release (each entry whole, keyed by hash) are read as they are", () => {
    const previous = JSON.stringify(
      Object.fromEntries(
        [...entries].map(([hash, { sourceHash, retentionDeclared, retentionStartAfterCreated, ...e }]) => [
          hash,
          { ...e, __sourceHash: sourceHash, __retentionDeclared: retentionDeclared, __retentionStartAfterCreated: retentionStartAfterCreated },
        ]),
      ),
    );
    expect(unpackEntries(previous, outputs)).toEqual(entries);
    expect(unpackEntries(JSON.parse(previous), outputs)).toEqual(entries);
  });

  it("an entry whose blobId the outputs no longer say is not read (its content is found again by its upload, no request goes to a made-up blobId)", () => {
    const text = packEntries(entries, outputs);
    const withoutA = { ...outputs, blobIds: Object.fromEntries(Object.entries(outputs.blobIds).filter(([rel]) => !rel.endsWith("a.html"))) };
    const read = unpackEntries(text, withoutA);
    expect([...read.keys()].sort()).toEqual([H("b"), H("c"), H("d")]);
    expect(read.get(H("b"))).toEqual(entries.get(H("b")));
    // Nothing of the blobIds readable: nothing is read, in every format.
    expect(unpackEntries(text, { ...outputs, blobIds: {} }).get(H("a"))).toBeUndefined();
    const format2 = JSON.stringify({ format: 2, shared: {}, entries: { [H("a")]: { name: "a.html", tag: "site" } } });
    expect(unpackEntries(format2, { ...outputs, blobIds: {} }).size).toBe(0);
    expect(unpackEntries(JSON.stringify({ [H("a")]: { name: "a.html" } }), outputs).size).toBe(0);
  });

  it("a createdAt without a time zone keeps the start as its distance from createdAt (each machine reads such a time in its own zone)", () => {
    const local = new Map([[H("a"), entry("a", { createdAt: "2026-11-24 10:00:07", retentionStartAfterCreated: -7000 })]]);
    const text = packEntries(local, outputsOf({ "a.html": H("a") }, local));
    expect(JSON.parse(text).shared).toEqual({});
    expect(Object.values(JSON.parse(text).byPath)[0]).toMatchObject({ retentionStartAfterCreated: -7000 });
    expect(JSON.stringify(JSON.parse(text))).not.toContain("retentionStartMs");
    // With its zone, the start is a time (shared by the files of one epoch).
    const zoned = new Map([[H("a"), entry("a", { createdAt: "2026-11-24T10:00:07+01:00", retentionStartAfterCreated: -7000 })]]);
    expect(JSON.stringify(JSON.parse(packEntries(zoned, outputsOf({ "a.html": H("a") }, zoned))))).toContain("retentionStartMs");
    expect(unpackEntries(packEntries(zoned, outputsOf({ "a.html": H("a") }, zoned)), outputsOf({ "a.html": H("a") }, zoned))).toEqual(zoned);
  });

  it("paths named like a member of every object (constructor, toString) are paths like any other", () => {
    const named = new Map<string, StoredFileState>([
      [H("a"), entry("a", { name: "constructor", url: undefined })],
      [H("b"), entry("b", { name: "toString" })],
    ]);
    const paths = { constructor: H("a"), toString: H("b") };
    const out = outputsOf(paths, named);
    expect(unpackEntries(packEntries(named, out), out)).toEqual(named);
    const format2 = JSON.stringify({
      format: 2,
      shared: {},
      entries: { [H("a")]: { ...entry("a", { name: "constructor" }), url: undefined, blobId: undefined } },
    });
    expect(unpackEntries(format2, out).get(H("a"))).toMatchObject({ blobId: "blob-a", name: "constructor" });
    expect(unpackEntries(format2, out).get(H("a"))?.url).toBeUndefined();
    // Two paths of one content, the later one named "constructor": it declares nothing of its own.
    expect(folderEntries(new Map([[H("a"), ["a.txt", "constructor"]]]), {}, {})[0].notApplied).toEqual([]);
  });

  it("unreadable: none recorded (each content is then found again by its upload)", () => {
    expect(unpackEntries("{not json", outputs).size).toBe(0);
    expect(unpackEntries(JSON.stringify({ format: 99, entries: {} }), outputs).size).toBe(0);
    expect(unpackEntries(undefined, outputs).size).toBe(0);
  });
});

describe("a folder's manifest as its outputs record it", () => {
  const manifest = { "b.css": H("b"), "a.html": H("a"), 'odd\nname "q".txt': H("c") };

  it("one text, a path per line in sorted order (a path with a line break stays on its line), read back exactly", () => {
    const text = pathText(manifest);
    expect(text.split("\n")).toEqual(["{", `"a.html":"${H("a")}",`, `"b.css":"${H("b")}",`, `"odd\\nname \\"q\\".txt":"${H("c")}"`, "}"]);
    expect(recordedManifest({ manifestText: text })).toEqual(manifest);
    expect(recordedManifest({ manifestText: pathText({}) })).toEqual({});
  });

  it("the map the first one-resource folders recorded is read; the text wins over it; anything unreadable is nothing recorded", () => {
    expect(recordedManifest({ manifest })).toEqual(manifest);
    expect(recordedManifest({ manifestText: pathText({ "a.html": H("a") }), manifest })).toEqual({ "a.html": H("a") });
    expect(recordedManifest({ manifestText: "{not json", manifest })).toEqual({});
    expect(recordedManifest({ manifestText: JSON.stringify({ "a.html": 1 }) })).toEqual({});
    // One path unreadable is that path unrecorded, not every path.
    expect(recordedManifest({ manifestText: JSON.stringify({ "a.html": 1, "b.css": H("b") }) })).toEqual({ "b.css": H("b") });
    expect(recordedManifest({ manifestText: "[]" })).toEqual({});
    expect(recordedManifest({ manifest: { "a.html": null } })).toEqual({});
    expect(recordedManifest({})).toEqual({});
  });
});

describe("a folder's manifest as the dynamic resource's inputs record it", () => {
  /** `n` paths, each its own content. */
  const folderOf = (n: number, prefix = "f") =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}-${String(i).padStart(6, "0")}.bin`, i.toString(16).padStart(64, "0")]));
  const asParts = (recorded: string | Record<string, string>) => {
    expect(typeof recorded).toBe("object");
    return recorded as Record<string, string>;
  };
  /** FNV-1a of a path, as the format fixes it: a part ends after a path whose hash is 0 modulo 512. */
  const endsPart = (rel: string) => {
    let hash = 0x811c9dc5;
    for (let i = 0; i < rel.length; i++) hash = Math.imul(hash ^ rel.charCodeAt(i), 0x01000193);
    return (hash >>> 0) % 512 === 0;
  };
  const pathNamed = (ends: boolean) => {
    for (let i = 0; ; i++) if (endsPart(`f-000100.x${i}`) === ends) return `f-000100.x${i}`;
  };
  /**
   * What Pulumi shows of a change of the parts: it compares an object key by key, reads each text
   * as JSON, and hides a key starting "__" at every depth. The paths it marks removed and added.
   */
  const shown = (before: Record<string, string>, after: Record<string, string>) => {
    const removed: string[] = [];
    const added: string[] = [];
    const hidden = (key: string) => key.startsWith("__");
    for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
      if (hidden(key)) continue;
      const [was, now] = [before[key] ? JSON.parse(before[key]) : {}, after[key] ? JSON.parse(after[key]) : {}];
      for (const rel in was) if (!(rel in now) && !hidden(rel)) removed.push(rel);
      for (const rel in now) if (!(rel in was) && !hidden(rel)) added.push(rel);
    }
    return { removed, added };
  };

  it('at every size, parts: a small folder is one, keyed "", the text the outputs record; crossing 64 KiB shows only the path added', () => {
    const small = folderOf(10);
    expect(Object.keys(small).filter(endsPart)).toEqual([]);
    expect(pathParts(small)).toEqual({ "": pathText(small) });
    expect(pathParts({})).toEqual({ "": "{}" });
    // The first folder size whose paths pass 64 KiB as one text: the same format either side.
    let n = 500;
    while (pathText(folderOf(n)).length <= 64 * 1024) n += 50;
    const grown = { ...folderOf(n - 50), "f-999999.bin": H("z") };
    expect(shown(pathParts(folderOf(n - 50)), pathParts(grown))).toEqual({ removed: [], added: ["f-999999.bin"] });
  });

  it('a large folder: parts, each a JSON text of consecutive paths far below the whole, keyed "to" its last path, read back as the whole map', () => {
    const folder = folderOf(20_000);
    const parts = asParts(pathParts(folder));
    const whole = pathText(folder).length;
    expect(Object.keys(parts).length).toBeGreaterThan(10);
    for (const [key, part] of Object.entries(parts)) {
      expect(part.length).toBeLessThan(whole / 5);
      const paths = Object.keys(JSON.parse(part));
      expect(paths.length).toBeGreaterThan(0);
      // Keyed "to" the path that ended it, the last part by "".
      if (key !== "") expect([key, endsPart(paths.at(-1)!)]).toEqual([`to ${paths.at(-1)}`, true]);
    }
    expect(Object.values(parts).flatMap((part) => Object.keys(JSON.parse(part)))).toEqual(Object.keys(folder).sort());
    expect(pathMap(parts)).toEqual(folder);
    expect(recordedManifest({ manifest: parts })).toEqual(folder);
  });

  it("a path added or removed shows as that path alone; one that ends a part, as that part's paths at most, never every part after it", () => {
    const folder = folderOf(20_000);
    const before = asParts(pathParts(folder));
    const plain = pathNamed(false);
    expect(shown(before, asParts(pathParts({ ...folder, [plain]: H("e") })))).toEqual({ removed: [], added: [plain] });
    const { "f-000100.bin": _gone, ...removed } = folder;
    const gone = "f-000100.bin";
    if (!endsPart(gone)) expect(shown(before, asParts(pathParts(removed)))).toEqual({ removed: [gone], added: [] });
    // A path that ends a part splits it: the paths before it in that part move to a new key.
    const ending = pathNamed(true);
    const split = shown(before, asParts(pathParts({ ...folder, [ending]: H("e") })));
    expect(split.added).toContain(ending);
    expect(split.added.length).toBeLessThan(4096);
    expect(split.removed).toEqual(split.added.filter((rel) => rel !== ending));
    // Removed again: the two parts join.
    const joined = shown(asParts(pathParts({ ...folder, [ending]: H("e") })), before);
    expect(joined.removed).toContain(ending);
    expect(joined.removed.length).toBeLessThan(4096);
  });

  it('parts that paths starting "__" end (a __tests__/ folder) are shown: Pulumi hides such keys, the parts\' keys never are', () => {
    const docs = folderOf(5, "0docs/a");
    expect(Object.keys(docs).filter(endsPart)).toEqual([]);
    const folder = { ...docs, ...folderOf(4_000, "__tests__/a"), ...folderOf(4_000, "src/b") };
    const parts = pathParts(folder);
    // The first part holds the docs and ends at a "__" path.
    expect(Object.keys(parts)[0]).toMatch(/^to __tests__\//);
    expect(Object.keys(parts).filter((key) => key.startsWith("__"))).toEqual([]);
    const added = "0docs/a-000002.add";
    expect(shown(parts, pathParts({ ...folder, [added]: H("e") }))).toEqual({ removed: [], added: [added] });
    // A "__" path that ends a part before that one splits it: the docs move to its key, shown as moved, not removed.
    let ender = "";
    for (let i = 0; !ender; i++) if (endsPart(`__tests__/0${i}`)) ender = `__tests__/0${i}`;
    expect(shown(parts, pathParts({ ...folder, [ender]: H("e") }))).toEqual({ removed: Object.keys(docs), added: Object.keys(docs) });
  });

  it("a part that is unreadable makes the whole map unreadable (each path is then found again), not a map with paths missing", () => {
    const parts = asParts(pathParts(folderOf(20_000)));
    const [first] = Object.keys(parts);
    expect(pathMap({ ...parts, [first]: "{not json" })).toEqual({});
    expect(pathMap({ ...parts, [first]: "{}" })).not.toEqual({});
    expect(pathMap({ ...parts, [first]: "[]" })).toEqual({});
    expect(pathMap({ ...parts, [first]: 7 })).toEqual({});
    expect(pathMap({ ...parts, [first]: H("a") })).toEqual({});
  });

  it("paths named like a member of every object, in parts, are paths like any other", () => {
    const folder: Record<string, string> = { ...folderOf(20_000), "d/__proto__": H("a"), constructor: H("b"), toString: H("c") };
    // As a hostile state could record it (a check refuses a top-level file so named).
    Object.defineProperty(folder, "__proto__", { value: H("d"), enumerable: true, writable: true, configurable: true });
    const read = pathMap(pathParts(folder));
    expect(Object.getPrototypeOf(read)).toBe(Object.prototype);
    expect(read).toEqual(folder);
  });
});

describe("the dynamic resource's outputs by path, recorded as texts", () => {
  const blobIds = { "b.css": "blob-b", "a.html": "blob-a", "c.js": "blob-c" };
  const urls = { "b.css": "https://cdn/blob-b", "a.html": "https://cdn/blob-a", "c.js": "https://elsewhere/c" };

  it("blobIds become one text (a path per line); a url that is the base and its blobId is not written again; both read back into the same maps", () => {
    const recorded = withOutputTexts({ path: "site", blobIds, urls, manifestText: "{}" });
    expect(recorded).toEqual({
      path: "site",
      manifestText: "{}",
      blobIdsText: pathText(blobIds),
      urlBase: "https://cdn/",
      urlsText: pathText({ "c.js": "https://elsewhere/c" }),
    });
    expect(String(recorded.blobIdsText).split("\n")).toEqual(["{", '"a.html":"blob-a",', '"b.css":"blob-b",', '"c.js":"blob-c"', "}"]);
    expect(fromOutputTexts(recorded)).toEqual({ path: "site", manifestText: "{}", blobIds, urls });
  });

  it("no url is made up: a path with a blobId and no url leaves every url written out", () => {
    const partial = { "a.html": "https://cdn/blob-a" };
    const recorded = withOutputTexts({ blobIds, urls: partial });
    expect(recorded).toEqual({ blobIdsText: pathText(blobIds), urlsText: pathText(partial) });
    expect(fromOutputTexts(recorded)).toEqual({ blobIds, urls: partial });
    expect(fromOutputTexts(withOutputTexts({ blobIds: {}, urls: {} }))).toEqual({ blobIds: {}, urls: {} });
  });

  it("a path named like a member of every object (constructor, toString) without a url: no url is made up for it, nothing fails", () => {
    for (const other of ["a.txt", "z.txt"]) {
      const ids = { constructor: "blob-k", toString: "blob-t", [other]: "blob-o" };
      const some = { [other]: "https://cdn/blob-o" };
      expect(fromOutputTexts(JSON.parse(JSON.stringify(withOutputTexts({ blobIds: ids, urls: some }))))).toEqual({ blobIds: ids, urls: some });
    }
  });

  it("a long text (a large folder's) is recorded gzipped, in parts of at most 64 KiB, and read back whole; a short one as it is", () => {
    const many = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`dir/file-${String(i).padStart(5, "0")}.bin`, `blob-${i}`.padEnd(43, "x")]));
    const manifestText = pathText(Object.fromEntries(Object.keys(many).map((rel, i) => [rel, H(String(i % 10))])));
    const entries = packEntries(new Map(Object.keys(many).map((rel, i) => [H(String(i % 10)) + rel, entry(String(i % 10))])), {
      manifest: {},
      blobIds: {},
      urls: {},
    });
    const recorded = withOutputTexts({ path: "site", blobIds: many, urls: {}, manifestText, entries });
    for (const field of ["blobIdsText", "manifestText", "entries"]) {
      const parts = recorded[field] as string[];
      expect(Array.isArray(parts) && parts.length > 0).toBe(true);
      expect(parts[0].startsWith("gzip:")).toBe(true);
      expect(parts.every((part) => part.length <= 64 * 1024)).toBe(true);
    }
    // Shorter than the text: a quarter of it, or less, for these.
    expect((recorded.blobIdsText as string[]).join("").length).toBeLessThan(pathText(many).length / 4);
    expect(recorded.urlsText).toBe("{}");
    // Read back as the texts and maps they were, through the stack's JSON (as the engine keeps them).
    expect(fromOutputTexts(JSON.parse(JSON.stringify(recorded)))).toEqual({ path: "site", blobIds: many, urls: {}, manifestText, entries });
    // Parts that no longer join into a gzipped text: nothing recorded, as for any unreadable text.
    const broken = { ...recorded, blobIdsText: (recorded.blobIdsText as string[]).slice(1) };
    expect(fromOutputTexts(broken).blobIds).toEqual({});
  });

  it("the maps the releases before recorded are read as they are; an unreadable text is nothing recorded", () => {
    expect(fromOutputTexts({ path: "site", blobIds, urls })).toEqual({ path: "site", blobIds, urls });
    expect(fromOutputTexts({ blobIdsText: "{not json", urlsText: JSON.stringify({ "a.html": 1 }), urlBase: "https://cdn/" })).toEqual({
      blobIds: {},
      urls: {},
    });
    expect(withOutputTexts({ path: "site" })).toEqual({ path: "site" });
  });
});
