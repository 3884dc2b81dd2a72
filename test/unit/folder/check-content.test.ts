import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { STORED_FOLDER_TYPES } from "../../../provider/engine/urns";
import { PROTO_KEY_STANDIN } from "../../../provider/file/validate";
import { StoredFolder } from "../../../provider/dynamic/stored-folder";

/**
 * One content, one entry: a StoredFolder declares one StoredFile per distinct content, named
 * after the content (so a move keeps it), with the documented name rule and the latest end any
 * of its paths declares; every path still maps to its blobId.
 */

interface Registered {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
}
let registered: Registered[] = [];
let root: string;
beforeAll(() => {
  pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        registered.push({ type: args.type, name: args.name, inputs: args.inputs });
        return { id: `${args.name}-id`, state: { ...args.inputs, blobId: `blob-of-${String(args.inputs.name)}` } };
      },
      call: (args) => args.inputs,
    },
    "proj",
    "stack",
    true,
  );
  root = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-content-"));
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

function tree(name: string, files: Record<string, string>): string {
  const dir = path.join(root, name);
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  }
  return dir;
}

const storedFiles = () => registered.filter((r) => r.type !== "tuskr:index:StoredFolder");
const outputOf = <T>(o: pulumi.Output<T>) => new Promise<T>((resolve) => o.apply(resolve));

describe("StoredFolder: one entry per content", () => {
  it("20 identical empty files are one StoredFile, named by the first path; every path maps to its blobId", async () => {
    registered = [];
    const files = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`d${String(i).padStart(2, "0")}/empty.txt`, ""]));
    const folder = new StoredFolder("pkg", { path: tree("empties", { ...files, "README.md": "# hi" }), retentionEpochs: 3 });
    const blobIds = await outputOf(folder.blobIds);
    await new Promise((r) => setTimeout(r, 50));
    const declared = storedFiles();
    expect(declared.map((r) => r.inputs.name).sort()).toEqual(["README.md", "d00/empty.txt"]);
    expect(Object.keys(blobIds)).toHaveLength(21);
    expect(
      new Set(
        Object.entries(blobIds)
          .filter(([rel]) => rel.endsWith("empty.txt"))
          .map(([, b]) => b),
      ).size,
    ).toBe(1);
    expect(declared.every((r) => /^pkg\/sha256:[0-9a-f]{32}$/.test(r.name))).toBe(true);
  });

  it("a moved file keeps its resource (the name is the content's), and the name rule follows the new path", async () => {
    registered = [];
    new StoredFolder("site", { path: tree("before", { "a.txt": "same bytes", "b.txt": "other" }) });
    await new Promise((r) => setTimeout(r, 50));
    const before = storedFiles();
    registered = [];
    new StoredFolder("site", { path: tree("after", { "docs/a.txt": "same bytes", "b.txt": "other" }) });
    await new Promise((r) => setTimeout(r, 50));
    const after = storedFiles();
    const moved = (list: Registered[], name: string) => list.find((r) => r.inputs.name === name)!;
    expect(moved(after, "docs/a.txt").name).toBe(moved(before, "a.txt").name);
  });

  it("copies with different retentionEpochs: the entry takes the largest (the latest end declared for it)", async () => {
    registered = [];
    new StoredFolder("lic", {
      path: tree("licenses", { "a/LICENSE": "MIT", "b/LICENSE": "MIT" }),
      retentionEpochs: 2,
      files: { "b/LICENSE": { retentionEpochs: 9 } },
    });
    await new Promise((r) => setTimeout(r, 50));
    const declared = storedFiles();
    expect(declared).toHaveLength(1);
    expect(declared[0].inputs).toMatchObject({ name: "a/LICENSE", retentionEpochs: 9 });
  });

  it("copies with different retainUntil: the entry takes the latest date; a folder-wide date reaches every file", async () => {
    registered = [];
    new StoredFolder("dated", {
      path: tree("dated", { "a/LICENSE": "BSD", "b/LICENSE": "BSD", "c.txt": "c" }),
      retainUntil: "2027-01-10",
      files: { "b/LICENSE": { retainUntil: "2027-01-20T00:00:00+02:00" } },
    });
    await new Promise((r) => setTimeout(r, 50));
    const declared = storedFiles();
    expect(declared.map((r) => [r.inputs.name, r.inputs.retainUntil]).sort()).toEqual([
      ["a/LICENSE", "2027-01-20T00:00:00+02:00"],
      ["c.txt", "2027-01-10"],
    ]);
  });

  // Some 600 StoredFiles registered through the mocks: seconds, more on a loaded machine.
  it("a folder of more than 300 files kept as one resource per content is told, at every preview, that oneResource: true keeps it as one", async () => {
    const files = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${String(i).padStart(3, "0")}.txt`, `${i % 290}`]));
    const large = tree("large", files(301));
    const warnings: string[] = [];
    const spy = vi.spyOn(pulumi.log, "warn").mockImplementation(async (message: string) => void warnings.push(message));
    try {
      new StoredFolder("large", { path: large });
      new StoredFolder("small", { path: tree("small", files(300)) });
      new StoredFolder("one", { path: large, oneResource: true });
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      spy.mockRestore();
    }
    expect(warnings).toEqual([
      "StoredFolder large: 301 files are 290 resources; `oneResource: true` keeps them as one, about 20× faster at 1,000 files. Switching uploads each content once more (docs/stored-folder.md)",
    ]);
  }, 120_000);

  it("a folder that keeps no file is said (a typo in a glob would otherwise drop every file without a word)", async () => {
    registered = [];
    const warnings: string[] = [];
    const spy = vi.spyOn(pulumi.log, "warn").mockImplementation(async (message: string) => void warnings.push(message));
    try {
      const dir = tree("typo", { "index.html": "<p>" });
      new StoredFolder("typo", { path: dir, include: ["**/*.htm"] });
      new StoredFolder("fine", { path: dir });
      await new Promise((r) => setTimeout(r, 50));
      expect(warnings).toEqual([`StoredFolder typo: no file of ${dir} matches include ["**/*.htm"]: the folder keeps no file`]);
    } finally {
      spy.mockRestore();
    }
  });

  it("a per-file value the StoredFile will refuse is an error naming the file's path (its resource is named after the hash); values not known yet are left to the check", async () => {
    registered = [];
    const errors: string[] = [];
    const spy = vi.spyOn(pulumi.log, "error").mockImplementation(async (message: string) => void errors.push(message));
    try {
      new StoredFolder("site", {
        path: tree("bad-values", { "x.txt": "x", "y.txt": "y", "z.txt": "z" }),
        tag: "ok",
        files: {
          "x.txt": { tag: "t".repeat(300) },
          "y.txt": { retentionEpochs: 1.5, metadata: { owner: pulumi.output("later") } as never },
          "z.txt": { tag: pulumi.secret("s".repeat(300)) },
        },
      });
      // Values that are valid once resolved: promises, a retentionEpochs above 53 (reached in
      // steps; how far it may rise at once is the check's, which knows the state).
      new StoredFolder("later", {
        path: tree("promised", { "a.txt": "a", "b.txt": "b" }),
        tag: Promise.resolve("t") as never,
        retentionEpochs: 60,
        files: { "b.txt": { retainUntil: Promise.resolve("2027-01-01") as never } },
      });
      // A shared value every file takes: said once, with the first paths.
      new StoredFolder("many", { path: tree("many", { "1.txt": "1", "2.txt": "2", "3.txt": "3", "4.txt": "4", "5.txt": "5" }), tag: "m".repeat(300) });
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      spy.mockRestore();
    }
    expect(errors).toEqual([
      expect.stringMatching(/^StoredFolder site: "x\.txt": tag must be at most 256 characters/),
      expect.stringMatching(/^StoredFolder site: "y\.txt": retentionEpochs must be a whole number of epochs/),
      expect.stringMatching(/^StoredFolder many: "1\.txt", "2\.txt", "3\.txt" and 2 more file\(s\): tag must be at most 256 characters/),
    ]);
    expect(storedFiles()).toHaveLength(10);
  });

  it("a key named __proto__ reaches the StoredFile's check under the standin (refused there), and the folder names the file", async () => {
    registered = [];
    const dir = tree("proto", { "a.txt": "a" });
    const errors: string[] = [];
    const spy = vi.spyOn(pulumi.log, "error").mockImplementation(async (message: string) => void errors.push(message));
    try {
      new StoredFolder("site", { path: dir, metadata: JSON.parse('{"__proto__":1,"team":"web"}') });
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      spy.mockRestore();
    }
    expect(storedFiles()[0]?.inputs.metadata).toEqual({ [PROTO_KEY_STANDIN]: 1, team: "web" });
    // Kept as one resource (no StoredFile of its own to rename it): shared and per-file values alike.
    registered = [];
    new StoredFolder("one", {
      path: dir,
      oneResource: true,
      metadata: JSON.parse('{"__proto__":1}'),
      files: { "a.txt": { metadata: JSON.parse('{"__proto__":{"owner":"me"}}') } },
    });
    await new Promise((r) => setTimeout(r, 50));
    const folder = registered.find((r) => r.type === STORED_FOLDER_TYPES.dynamic);
    expect(folder?.inputs.metadata).toEqual({ [PROTO_KEY_STANDIN]: 1 });
    expect(folder?.inputs.files).toEqual({ "a.txt": { metadata: { [PROTO_KEY_STANDIN]: { owner: "me" } } } });
    expect(errors).toEqual([expect.stringMatching(/^StoredFolder site: "a\.txt": metadata\.__proto__: a key named __proto__/)]);
  });
});
