import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * Every relative link in README.md, CHANGELOG.md, docs/*.md and examples/*\/README.md points at a
 * file of the repository, and an anchor into a Markdown file at one of its headings: the docs moved
 * out of the README once, and a link broken by the next move should fail here rather than in a
 * reader's browser.
 */
const root = path.resolve(__dirname, "../../..");
const pages = [
  "CHANGELOG.md",
  "README.md",
  ...fs
    .readdirSync(path.join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
  // Each example's README, whose links a copy of the folder keeps reading into this repository's docs.
  ...fs
    .readdirSync(path.join(root, "examples"))
    .map((e) => `examples/${e}/README.md`)
    .filter((f) => fs.existsSync(path.join(root, f))),
];

/** The text outside fenced code blocks and code spans, where a link is a link. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");

/** The anchors GitHub gives a Markdown file's headings (lower case, punctuation dropped, spaces as hyphens, repeats numbered). */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of fs
    .readFileSync(file, "utf8")
    .replace(/^```[\s\S]*?^```/gm, "")
    .matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const slug = m[1]
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** What is wrong with a relative link of `page`, or undefined when it resolves. */
function brokenLink(page: string, target: string): string | undefined {
  const [file, anchor] = target.split("#", 2);
  const resolved = file === "" ? path.join(root, page) : path.resolve(path.dirname(path.join(root, page)), decodeURI(file));
  if (!fs.existsSync(resolved)) return `${page}: ${target} (no such file)`;
  if (anchor && resolved.endsWith(".md") && !anchors(resolved).has(anchor)) return `${page}: ${target} (no such heading)`;
  return undefined;
}

/** The relative links of a page's prose: no scheme, no mail. */
function relativeLinks(page: string): string[] {
  const text = prose(fs.readFileSync(path.join(root, page), "utf8"));
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]).filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

describe("relative links in README.md, CHANGELOG.md and docs/", () => {
  it("are found in every page that has them", () => {
    expect(relativeLinks("README.md").length).toBeGreaterThan(5);
    expect(pages).toContain("docs/_index.md");
  });

  it.each(pages)("%s: each resolves to a file (and heading) of the repository", (page) => {
    expect(relativeLinks(page).flatMap((t) => brokenLink(page, t) ?? [])).toEqual([]);
  });

  it("a link to a missing file or heading is reported", () => {
    expect(brokenLink("README.md", "docs/no-such-page.md")).toBe("README.md: docs/no-such-page.md (no such file)");
    expect(brokenLink("docs/_index.md", "stored-file.md#no-such-heading")).toMatch(/no such heading/);
    expect(brokenLink("docs/_index.md", "stored-file.md#inputs-what-each-change-does")).toBeUndefined();
  });
});
