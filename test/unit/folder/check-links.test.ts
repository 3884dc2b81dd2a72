import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoredFolder } from "../../../provider/dynamic/stored-folder";

/**
 * A StoredFolder uploads the regular files inside its directory and nothing else: a symbolic
 * link (to a file or a directory outside, or to the root) or a special file that the globs
 * match fails the program, naming it, before anything is registered; the walk never follows a
 * link, so it never leaves the folder (a link to `/` is not enumerated).
 */

let root: string;
beforeAll(() => {
  pulumi.runtime.setMocks(
    {
      newResource: (args) => ({ id: `${args.name}-id`, state: args.inputs }),
      call: (args) => args.inputs,
    },
    "proj",
    "stack",
    true,
  );
  root = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-links-"));
  fs.mkdirSync(path.join(root, "outside"));
  fs.writeFileSync(path.join(root, "outside", "secret.txt"), "outside the folder");
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

function folder(name: string, build: (dir: string) => void): string {
  const dir = path.join(root, name);
  fs.mkdirSync(path.join(dir, "docs"), { recursive: true });
  fs.writeFileSync(path.join(dir, "index.html"), "<h1>hi</h1>");
  fs.writeFileSync(path.join(dir, "docs", "guide.md"), "# guide");
  build(dir);
  return dir;
}

describe("StoredFolder: links and special files", () => {
  it.each([
    [
      "a link to a file outside",
      (dir: string) => fs.symlinkSync(path.join(root, "outside", "secret.txt"), path.join(dir, "docs", "secret.txt")),
      "docs/secret.txt",
    ],
    ["a link to a directory outside", (dir: string) => fs.symlinkSync(path.join(root, "outside"), path.join(dir, "more")), "more"],
    ["a link to the root", (dir: string) => fs.symlinkSync("/", path.join(dir, "everything")), "everything"],
    ["a link inside the folder", (dir: string) => fs.symlinkSync("index.html", path.join(dir, "copy.html")), "copy.html"],
    ["a link loop", (dir: string) => fs.symlinkSync("..", path.join(dir, "docs", "up")), "docs/up"],
  ])("%s is refused, naming it", (label, build, rel) => {
    const dir = folder(label.replace(/\W+/g, "-"), build);
    expect(() => new StoredFolder("site", { path: dir })).toThrow(
      new RegExp(`StoredFolder site: .*${rel.replace("/", "\\/")} is a symbolic link .*exclude: \\["${rel.replace("/", "\\/")}"\\]`),
    );
  });

  it.each([["etc/passwd"], ["etc/*"], ["etc/**/*.txt"]])("a glob through a linked directory (%s, etc → outside) is refused, naming the link", (glob) => {
    const dir = folder(`through-${glob.replace(/\W+/g, "-")}`, (d) => fs.symlinkSync(path.join(root, "outside"), path.join(d, "etc")));
    fs.writeFileSync(path.join(root, "outside", "passwd"), "root:x:0:0");
    expect(() => new StoredFolder("site", { path: dir, include: [glob] })).toThrow(
      /StoredFolder site: .*etc is a symbolic link .*the globs match etc\/\S+ through it.*exclude: \["etc"\]/,
    );
  });

  it.each([["..{,}/*"], ["..{,}/**/*"], ["..{,}/secret.txt"]])("a brace glob that reaches out (%s) is refused", (glob) => {
    const dir = folder(`brace-${glob.replace(/\W+/g, "-")}`, () => undefined);
    fs.writeFileSync(path.join(root, "secret.txt"), "one level up");
    expect(() => new StoredFolder("site", { path: dir, include: ["**/*", glob] })).toThrow(
      /StoredFolder site: the include glob(s match "\.\.\/.*", outside the folder| .* leaves the folder)/,
    );
  });

  it("a FIFO is refused, naming it", () => {
    const dir = folder("fifo", (d) => require("node:child_process").execFileSync("mkfifo", [path.join(d, "pipe")]));
    expect(() => new StoredFolder("site", { path: dir })).toThrow(/StoredFolder site: .*pipe is not a regular file/);
  });

  it("a file named __proto__ at the top of the folder is refused, naming it (an object's key by that name is dropped): not left out silently", () => {
    const dir = folder("proto", (d) => fs.writeFileSync(path.join(d, "__proto__"), "data"));
    expect(() => new StoredFolder("site", { path: dir })).toThrow(
      /StoredFolder site: .*__proto__: a top-level file named "__proto__" .*exclude: \["__proto__"\]/,
    );
    // Left out by the globs, or under a directory: a path like any other.
    expect(() => new StoredFolder("site-excluded", { path: dir, exclude: ["__proto__"] })).not.toThrow();
    const nested = folder("proto-nested", (d) => fs.writeFileSync(path.join(d, "docs", "__proto__"), "data"));
    expect(() => new StoredFolder("site-nested", { path: nested })).not.toThrow();
  });

  it("a link left out by the globs is no obstacle, and is not uploaded", async () => {
    const dir = folder("excluded", (d) => fs.symlinkSync(path.join(root, "outside", "secret.txt"), path.join(d, "secret.txt")));
    const site = new StoredFolder("site", { path: dir, exclude: ["secret.txt"] });
    expect(Object.keys(site.files)).toEqual(["docs/guide.md", "index.html"]);
    const other = new StoredFolder("md", { path: dir, include: ["**/*.md"] });
    expect(Object.keys(other.files)).toEqual(["docs/guide.md"]);
  });
});

describe("StoredFolder: globs stay in the folder", () => {
  it.each([["../outside/*"], ["/etc/*"], ["docs/../../outside/*"]])("an include glob %s that leaves the folder is refused", (glob) => {
    const dir = folder(`glob-${glob.replace(/\W+/g, "-")}`, () => {});
    expect(() => new StoredFolder("site", { path: dir, include: [glob] })).toThrow(/StoredFolder site: the include glob .* leaves the folder/);
  });

  it("a link under an excluded directory is no obstacle (the directory's files are not uploaded)", () => {
    const dir = folder("excluded-dir", (d) => fs.symlinkSync(path.join(root, "outside", "secret.txt"), path.join(d, "docs", "l.txt")));
    for (const exclude of [["docs"], ["docs/"], ["docs/**"]]) {
      expect(Object.keys(new StoredFolder("site", { path: dir, exclude }).files)).toEqual(["index.html"]);
    }
  });
});
