import { ASSET_SIG, SIG_KEY, UNKNOWN } from "../../../provider/engine/markers";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { packEntries, pathParts, pathText, withOutputTexts } from "../../../provider/folder/entries";
import { code } from "../../../provider/cli/markdown";
import { NotTheInput } from "../../../provider/cli/input";
import { summarizePreview } from "../../../provider/cli/summary";
import { STORED_FILE_TYPES, STORED_FOLDER_TYPES } from "../../../provider/engine/urns";

const TYPE = STORED_FILE_TYPES.dynamic;
const urn = (name: string) => `urn:pulumi:dev::p::${TYPE}::${name}`;
const now = Date.parse("2026-11-22T00:00:00Z");
const DAY = 86_400_000;
const outputs = (extra: Record<string, unknown>) => ({
  blobId: "b1",
  tag: "old",
  retentionEpochs: 2,
  expiresAt: new Date(now + 10 * DAY).toISOString(),
  ...extra,
});

describe("summarizePreview", () => {
  it("lists each changed file with its changes, epochs, new expiry, and totals; ignores other resources", () => {
    const md = summarizePreview(
      {
        config: { "tuskr:epochSeconds": "86400" },
        steps: [
          { op: "same", urn: "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev" },
          {
            op: "update",
            urn: urn("a"),
            oldState: { type: TYPE, outputs: outputs({}) },
            newState: { type: TYPE, inputs: { blobId: "b1", tag: "new", retentionEpochs: 5 } },
          },
          { op: "delete", urn: urn("gone"), oldState: { type: TYPE, outputs: outputs({}) } },
        ],
      },
      { nowMs: now },
    );
    expect(md).toContain("| `a` | update | tag `old` → `new`; retentionEpochs 2 → 5 | 3 | 2026-12-05T00:00:00.000Z |");
    expect(md).toContain("| `gone` | delete | no longer managed; no request, the file keeps its period | — | — |");
    expect(md).toMatch(/1 updated.*1 no longer managed; 1 PATCH on existing files, 1 renew\(s\), \*\*3 epoch\(s\) to buy\*\*/);
  });

  it("a value shown as [secret] is not compared (nor priced), and does not hide the rest of the file's change", () => {
    const md = summarizePreview(
      {
        steps: [
          {
            op: "update",
            urn: urn("s4"),
            oldState: { type: TYPE, outputs: outputs({ metadata: "[secret]", __secretInputs: ["metadata"] }) },
            newState: { type: TYPE, inputs: { blobId: "b1", tag: "old", metadata: "[secret]", retentionEpochs: 6 } },
          },
          {
            op: "update",
            urn: urn("nested"),
            oldState: { type: TYPE, outputs: outputs({ metadata: { token: "[secret]" } }) },
            newState: { type: TYPE, inputs: { blobId: "b1", tag: "new", metadata: { token: "[secret]" }, retentionEpochs: "[secret]" } },
          },
          {
            op: "create",
            urn: urn("fresh"),
            newState: { type: TYPE, inputs: { blobId: "b9", name: "[secret]", retentionEpochs: 3 } },
          },
        ],
      },
      { nowMs: now },
    );
    expect(md).toContain("| `s4` | update | retentionEpochs 2 → 6; `metadata`: secret, not compared | 4 | 2026-12-06T00:00:00.000Z |");
    // A secret end: what the file buys cannot be counted, in its row or in the totals.
    expect(md).toContain("| `nested` | update | tag `old` → `new`; `metadata`, `retentionEpochs`: secret, not compared | not counted | — |");
    expect(md).toContain("| `fresh` | create | adopt `b9`; `name`: secret | 3 | — |");
    expect(md).toMatch(
      /1 PATCH on existing files \(and any of values not shown\), 3 renew\(s\) \(and those of the rows not counted\), \*\*7 epoch\(s\) to buy\*\*, and what 1 row\(s\) marked "not counted" buy/,
    );
    expect(md).not.toMatch(/\*\*replace\*\*|undefined/);
    // A value known only at `up` (another resource's output) is the same.
    const later = summarizePreview(
      {
        steps: [
          {
            op: "update",
            urn: urn("u"),
            oldState: { type: TYPE, outputs: outputs({}) },
            newState: { type: TYPE, inputs: { blobId: "b1", tag: UNKNOWN, retainUntil: UNKNOWN } },
          },
        ],
      },
      { nowMs: now },
    );
    expect(later).toContain("| `u` | update | `retainUntil`, `tag`: known only at `up`, not compared | not counted | — |");
    expect(later).not.toContain(UNKNOWN);
  });

  const before = { "a.html": "h1", "b.css": "h2", "old.js": "h3", "moved.txt": "h4" };
  it.each([
    ["its inputs (what the last run compared)", { inputs: { manifest: before }, outputs: {} }],
    ["the text its outputs record", { outputs: { manifestText: JSON.stringify(before) } }],
    ["the map the first one-resource folders' outputs recorded", { outputs: { manifest: before } }],
  ])("a one-resource folder's row lists the files added, changed and removed, and its uploads (the old manifest from %s)", (_, oldState) => {
    const FOLDER = "tuskr:index:StoredFolder";
    const md = summarizePreview(
      {
        steps: [
          {
            op: "update",
            urn: `urn:pulumi:dev::p::${FOLDER}::site`,
            oldState: { type: FOLDER, ...oldState },
            newState: { type: FOLDER, inputs: { manifest: { "a.html": "h1", "b.css": "h5", "new.svg": "h6", "docs/moved.txt": "h4" } } },
          },
        ],
      },
      { nowMs: now },
    );
    // No entries recorded in these outputs: what the entries buy cannot be counted, and the row says so.
    expect(md).toContain(
      "| `site` | update | folder: 4 file(s); +`docs/moved.txt` +`new.svg` ~`b.css` -`moved.txt` -`old.js`; 2 upload(s); epochs not counted: its recorded entries are not in the preview | not counted | — |",
    );
  });

  it("the dynamic resource's folder row reads its manifests as the texts its inputs record", () => {
    const FOLDER = STORED_FOLDER_TYPES.dynamic;
    const after = { "a.html": "h1", "b.css": "h5", "new.svg": "h6", "docs/moved.txt": "h4" };
    const md = summarizePreview(
      {
        steps: [
          {
            op: "update",
            urn: `urn:pulumi:dev::p::${FOLDER}::site`,
            oldState: { type: FOLDER, inputs: { manifest: pathText(before) }, outputs: { manifestText: pathText({ "other.txt": "h9" }) } },
            newState: { type: FOLDER, inputs: { manifest: pathText(after) } },
          },
        ],
      },
      { nowMs: now },
    );
    expect(md).toContain("folder: 4 file(s); +`docs/moved.txt` +`new.svg` ~`b.css` -`moved.txt` -`old.js`; 2 upload(s)");
  });

  it("the dynamic resource's folder row reads the old manifest from its outputs when they record it gzipped, in parts (a large folder)", () => {
    const FOLDER = STORED_FOLDER_TYPES.dynamic;
    const many = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`f${String(i).padStart(4, "0")}.txt`, `${i}`.padStart(64, "0")]));
    const outputs = withOutputTexts({ manifestText: pathText(many) });
    expect(Array.isArray(outputs.manifestText)).toBe(true);
    const md = summarizePreview(
      {
        steps: [
          {
            op: "update",
            urn: `urn:pulumi:dev::p::${FOLDER}::site`,
            oldState: { type: FOLDER, outputs },
            newState: { type: FOLDER, inputs: { manifest: pathText({ ...many, "new.txt": "f".repeat(64) }) } },
          },
        ],
      },
      { nowMs: now },
    );
    expect(md).toContain("folder: 1001 file(s); +`new.txt`; 1 upload(s)");
  });

  it("the dynamic resource's folder row reads its manifests as the parts its inputs record past 64 KiB (a large folder)", () => {
    const FOLDER = STORED_FOLDER_TYPES.dynamic;
    const many = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`f${String(i).padStart(4, "0")}.txt`, `${i}`.padStart(64, "0")]));
    const [beforeParts, afterParts] = [pathParts(many), pathParts({ ...many, "new.txt": "f".repeat(64) })];
    expect([typeof beforeParts, typeof afterParts]).toEqual(["object", "object"]);
    const md = summarizePreview(
      {
        steps: [
          {
            op: "update",
            urn: `urn:pulumi:dev::p::${FOLDER}::site`,
            // Outputs that record less than the inputs compared (a file whose upload failed): the inputs are read.
            oldState: { type: FOLDER, inputs: { manifest: beforeParts }, outputs: { manifestText: pathText({ "f0000.txt": many["f0000.txt"] }) } },
            newState: { type: FOLDER, inputs: { manifest: afterParts } },
          },
        ],
      },
      { nowMs: now },
    );
    expect(md).toContain("folder: 1001 file(s); +`new.txt`; 1 upload(s)");
  });

  it("a one-resource folder's file named like a member of every object (constructor) is added like any other", () => {
    const FOLDER = "tuskr:index:StoredFolder";
    const step = (before: Record<string, string>, after: Record<string, string>) => ({
      op: "update",
      urn: `urn:pulumi:dev::p::${FOLDER}::site`,
      oldState: { type: FOLDER, inputs: { manifest: before }, outputs: {} },
      newState: { type: FOLDER, inputs: { manifest: after } },
    });
    expect(summarizePreview({ steps: [step({ "a.html": "h1" }, { "a.html": "h1", constructor: "h2" })] }, { nowMs: now })).toContain(
      "folder: 2 file(s); +`constructor`; 1 upload(s)",
    );
    expect(summarizePreview({ steps: [step({ "a.html": "h1", toString: "h2" }, { "a.html": "h1" })] }, { nowMs: now })).toContain(
      "folder: 1 file(s); -`toString`; epochs not counted",
    );
  });

  it("a one-resource folder's purchases are planned entry by entry as its up plans them; entries the preview shows as secret are said not counted", () => {
    const FOLDER = "tuskr:index:StoredFolder";
    const manifest = { "a.html": "h1", "b.css": "h2", "copy.html": "h1" };
    const blobIds = { "a.html": "ba", "b.css": "bb", "copy.html": "ba" };
    const entry = (hash: string, blobId: string, name: string, days: number) => ({
      blobId,
      sourceHash: hash,
      name,
      retentionEpochs: 10,
      tag: "site",
      expiresAt: new Date(now + days * DAY).toISOString(),
    });
    const entries = packEntries(
      new Map([
        ["h1", entry("h1", "ba", "a.html", 10)],
        ["h2", entry("h2", "bb", "b.css", 12)],
      ]),
      { manifest, blobIds, urls: {} },
    );
    const step = (outputs: Record<string, unknown>, inputs: Record<string, unknown>) => ({
      op: "update",
      urn: `urn:pulumi:dev::p::${FOLDER}::site`,
      oldState: { type: FOLDER, inputs: { manifest, tag: "site", retentionEpochs: 10 }, outputs },
      newState: { type: FOLDER, inputs: { manifest: { ...manifest, "new.svg": "h3" }, tag: "site", retentionEpochs: 20, ...inputs } },
    });
    const outputs = { manifestText: JSON.stringify(manifest), blobIds, entries };
    // retentionEpochs 10 → 20: each entry's end moves 10 epochs (counted from its start, as a StoredFile's); new.svg is uploaded for its 20.
    const md = summarizePreview({ steps: [step(outputs, {})] }, { nowMs: now });
    expect(md).toContain("| `site` | update | folder: 4 file(s); +`new.svg`; 1 upload(s) | 40 | — |");
    // One row, one folder updated (its upload is in its row).
    // The stack has not learnt the service's epoch (no entry records it): one renew more, the first, to learn it.
    expect(md).toMatch(
      /0 adopted, 1 updated, 0 replaced, 0 no longer managed; 0 PATCH on existing files, 3 renew\(s\), \*\*40 epoch\(s\) to buy\*\* \(.*1 renew more, the first, to learn the service's epoch\)/,
    );
    // A tag changed for one path: one PATCH.
    expect(summarizePreview({ steps: [step(outputs, { files: { "b.css": { tag: "css" } } })] }, { nowMs: now })).toMatch(/1 PATCH on existing files, 3 renew/);
    // The TypeScript resource's entries are secret in the preview; a secret shared end cannot be counted either.
    for (const [changed, why] of [
      [step({ ...outputs, entries: "[secret]" }, {}), "its recorded entries are secret in the preview"],
      [step(outputs, { retentionEpochs: "[secret]" }), "`retentionEpochs` secret"],
      [step(outputs, { retainUntil: UNKNOWN }), "`retainUntil` known only at `up`"],
    ] as const) {
      const hidden = summarizePreview({ steps: [changed] }, { nowMs: now });
      expect(hidden).toContain(`| \`site\` | update | folder: 4 file(s); +\`new.svg\`; 1 upload(s); epochs not counted: ${why} | not counted | — |`);
      expect(hidden).toMatch(/\*\*0 epoch\(s\) to buy\*\*, and what 1 row\(s\) marked "not counted" buy/);
      // Nor what it PATCHes or renews: not said to be none.
      expect(hidden).toMatch(/0 PATCH on existing files \(and any of values not shown\), 0 renew\(s\) \(and those of the rows not counted\)/);
    }
  });

  it("a folder's row: a secret tag is left out of the plan, keep-alive on new files is said, the TypeScript component adds no row", () => {
    const FOLDER = "tuskr:index:StoredFolder";
    const md = summarizePreview(
      {
        steps: [
          // The TypeScript StoredFolder's component: the plugin resource's type, and nothing kept.
          { op: "create", urn: `urn:pulumi:dev::p::${FOLDER}::web`, newState: { type: FOLDER, custom: false, inputs: {} } },
          {
            op: "create",
            urn: `urn:pulumi:dev::p::${FOLDER}$pulumi-nodejs:dynamic/tuskr:StoredFolder::web`,
            newState: {
              type: "pulumi-nodejs:dynamic/tuskr:StoredFolder",
              custom: true,
              inputs: { manifest: { "a.txt": "h1", "b.txt": "h2" }, tag: "[secret]", retentionEpochs: 2, keepAlive: { minRemainingEpochs: 3, renewEpochs: 4 } },
            },
          },
        ],
      },
      { nowMs: now },
    );
    // Each new file is left 2 epochs by its upload, fewer than 3: keep-alive buys 4 right after it.
    expect(md.split("\n").filter((l) => l.startsWith("| `web`"))).toEqual([
      "| `web` | create | folder: 2 file(s); +`a.txt` +`b.txt`; 2 upload(s); `tag`: secret; keep-alive: 2 new file(s) renewed right after the upload (too few epochs left) | 12 (keep-alive 8) | — |",
    ]);
    expect(md).toMatch(
      /0 adopted, 1 uploaded, 0 updated.*2 renew\(s\), \*\*12 epoch\(s\) to buy\*\* \(adopted files: declared epochs; keep-alive, if any, decides on the expiry it finds; uploads: the declared epochs, or only what the declared end lacks when the service already holds the content\)/,
    );
    // Left 2 or 3 (a date's top-up decides), against a minimum of 3: not known before the upload.
    const until = new Date(now + 1.5 * DAY).toISOString();
    const dated = summarizePreview(
      {
        config: { "tuskr:epochSeconds": "86400" },
        steps: [
          {
            op: "create",
            urn: `urn:pulumi:dev::p::${FOLDER}::dated`,
            newState: {
              type: FOLDER,
              custom: true,
              inputs: { manifest: { "a.txt": "h1" }, retainUntil: until, keepAlive: { minRemainingEpochs: 3, renewEpochs: 4 } },
            },
          },
        ],
      },
      { nowMs: now },
    );
    expect(dated).toMatch(/\| `dated` \| create \| .*keep-alive on 1 new file\(s\) \(what it buys depends on the expiry found\).* \| 2 \| — \|/);
    // Nothing declared changed, and yet the folder changes: said so, not as "values changed".
    const same = { manifest: { "a.txt": "h1" }, tag: "t" };
    const retry = summarizePreview({
      steps: [
        {
          op: "update",
          urn: `urn:pulumi:dev::p::${FOLDER}::site`,
          oldState: { type: FOLDER, inputs: same, outputs: {} },
          newState: { type: FOLDER, inputs: same },
        },
      ],
    });
    expect(retry).toContain("folder: 1 file(s); entries brought to what is declared (a keep-alive renewal, or what an earlier `up` did not finish)");
    // A declared value changed: named.
    const retagged = summarizePreview({
      steps: [
        {
          op: "update",
          urn: `urn:pulumi:dev::p::${FOLDER}::site`,
          oldState: { type: FOLDER, inputs: same, outputs: {} },
          newState: { type: FOLDER, inputs: { ...same, tag: "u", keepAlive: { minRemainingEpochs: 2, renewEpochs: 3 } } },
        },
      ],
    });
    expect(retagged).toContain("folder: 1 file(s); values changed: `tag`, `keepAlive`");
  });

  it("calls out a purchase that will fail at the horizon, in the length the stack learnt", () => {
    const step = (extra: Record<string, unknown>) => ({
      op: "update",
      urn: urn("a"),
      oldState: { outputs: outputs(extra) },
      newState: { type: TYPE, inputs: { blobId: "b1", retentionEpochs: 60 } },
    });
    const md = summarizePreview({ steps: [step({ __epochMsSeen: DAY })] }, { nowMs: now });
    expect(md).toMatch(/\*\*will fail\*\*: buying 58 epoch\(s\) would end the storage 68 epochs ahead/);
    // Not known, the length is no basis for counting the days left as epochs: only what fails in any length is said.
    expect(summarizePreview({ steps: [step({})] }, { nowMs: now })).toMatch(/\*\*will fail\*\*: buying 58 epoch\(s\) would end the storage 59 epochs ahead/);
  });

  it("refuses input that is not a preview", () => {
    expect(() => summarizePreview({ steps: "nope" })).toThrow(/not the output of `pulumi preview --json`/);
  });

  it("refuses, by its shape, input that is not a preview: an empty object, a stack export, no steps, steps of the wrong shape", () => {
    const file = { urn: urn("a"), type: TYPE, outputs: outputs({}) };
    for (const input of [
      {},
      null,
      [],
      "steps",
      { version: 3, deployment: { resources: [file] } },
      { config: { "tuskr:epochSeconds": "86400" }, duration: 1 },
      // Pulumi omits an empty list, and every preview has the stack's own step.
      { steps: [] },
      { steps: [], changeSummary: {}, diagnostics: [{ severity: "warning", message: "w" }] },
      { steps: [[{ op: "update", urn: urn("a") }]] },
      { steps: [{ op: "update" }] },
      { steps: [{ op: "update", urn: urn("a"), newState: [] }] },
    ]) {
      expect(() => summarizePreview(input), JSON.stringify(input)).toThrow(/not the output of `pulumi preview --json`: expected an object with a `steps` list/);
    }
    expect(() => summarizePreview({ steps: [] })).toThrow(/\(steps: empty, which Pulumi never writes: it omits `steps` when there are none\)$/);
  });

  it("takes what `pulumi preview --json` prints for a stack with nothing in it, and a preview that failed before any step", () => {
    const stack = { op: "same", urn: "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev", newState: { type: "pulumi:pulumi:Stack", custom: false } };
    expect(summarizePreview({ steps: [stack], duration: 1559853229, changeSummary: { same: 1 } })).toMatch(/No StoredFile changes/);
    // A program that could not start registers no step, so the list is omitted: its errors say why.
    const failed = { diagnostics: [{ prefix: "error: ", message: "the program could not start\n", severity: "error" }], duration: 1 };
    expect(summarizePreview(failed)).toContain("**The preview failed** (1 error(s))");
  });
});

describe("examples/gitops CI workflow", () => {
  const dir = path.resolve(__dirname, "../../../examples/gitops/.github/workflows");
  type Job = {
    concurrency?: { group: string; "cancel-in-progress": unknown };
    strategy?: { "fail-fast"?: boolean };
    steps: Array<{ run?: string; if?: string; env?: Record<string, string> }>;
  };
  const text = fs.readFileSync(path.join(dir, "tuskr.yml"), "utf8");
  const applyText = fs.readFileSync(path.join(dir, "tuskr-apply.yml"), "utf8");
  const wf = parse(text) as { on: Record<string, unknown>; jobs: Record<string, Job> };
  const preview = wf.jobs.preview;
  const up = (parse(applyText) as { jobs: Record<string, Job> }).jobs.up;

  it("is valid YAML that previews with the summary on pull requests and applies on merge, the key as a secret", () => {
    expect(Object.keys(wf.on).sort()).toEqual(["pull_request", "pull_request_target", "push", "schedule", "workflow_dispatch"]);
    const runs = preview.steps.map((s) => `${s.if ?? ""} ${s.run ?? ""}`).join("\n");
    expect(runs).toMatch(/pulumi preview --refresh --json > preview\.json[\s\S]*npx pulumi-tuskr summary < preview\.json/);
    expect(up.steps.map((s) => s.run ?? "").join("\n")).toMatch(/pulumi up --yes/);
    for (const job of [preview, up]) expect(job.steps.map((s) => s.run ?? "").join("\n")).toMatch(/pulumi config set --secret tuskr:apiKey "\$TUSKR_API_KEY"/);
    expect(text + applyText).not.toMatch(/tsk_(live|test)_/);
  });

  it("never cancels an up: one queue per stack for applies, cancel-in-progress only for pull-request previews", () => {
    expect(up.concurrency?.group).toContain("${{ inputs.stack }}");
    expect(up.concurrency?.group).toContain("apply");
    expect(up.concurrency?.["cancel-in-progress"]).toBe(false);
    expect(preview.concurrency?.group).toContain("${{ matrix.stack }}");
    expect(preview.concurrency?.group).toContain("pr-${{ github.event.pull_request.number }}");
    expect(preview.concurrency?.["cancel-in-progress"]).toBe(true);
    expect(preview.strategy?.["fail-fast"]).toBe(false);
  });

  it("keeps one pull-request comment per stack, found by its marker and updated in place", () => {
    const comment = preview.steps.find((s) => s.run?.includes("gh api"))!;
    expect(comment.env?.MARKER).toBe("<!-- tuskr-summary:${{ matrix.stack }} -->");
    expect(comment.run).toMatch(/select\(\.body \| startswith\(env\.MARKER\)\)/);
    expect(comment.run).toMatch(/--method PATCH "repos\/\$REPO\/issues\/comments\/\$id"/);
    expect(preview.steps.find((s) => s.run?.includes("comment.md") && s.run.includes("tuskr-summary"))?.run).toMatch(/marker="<!-- tuskr-summary:\$STACK -->"/);
    expect(text).not.toMatch(/gh pr comment/);
  });
});

describe("summarizePreview with the stack's settings and hostile names", () => {
  it("warns as the stack's tuskr:expiryWarningEpochs says, not the default", () => {
    const step = (warn?: string) =>
      summarizePreview(
        {
          config: { "tuskr:epochSeconds": "86400", ...(warn ? { "tuskr:expiryWarningEpochs": warn } : {}) },
          steps: [
            {
              op: "update",
              urn: urn("a"),
              oldState: { type: TYPE, outputs: outputs({ expiresAt: new Date(now + 5 * DAY - 3_600_000).toISOString() }) },
              newState: { type: TYPE, inputs: { blobId: "b1", tag: "new" } },
            },
          ],
        },
        { nowMs: now },
      );
    expect(step()).not.toMatch(/expiring soon/);
    expect(step("7")).toMatch(/`a`: expiring soon: 5 epoch\(s\) left/);
  });

  it("a pipe, a backtick or a line break in a name, tag or metadata key never breaks the table", () => {
    const md = summarizePreview(
      {
        steps: [
          {
            op: "update",
            urn: urn("we|ird`\nname"),
            oldState: { type: TYPE, outputs: outputs({ tag: "a|b", metadata: { "k|1": 1 } }) },
            newState: { type: TYPE, inputs: { blobId: "b1", tag: "x`y\nz|w", metadata: { "k|1": 2, "new\nkey": 1 } } },
          },
        ],
      },
      { nowMs: now },
    );
    const rows = md.split("\n").filter((line) => line.startsWith("| ") && !line.startsWith("| File") && !line.startsWith("|---"));
    expect(rows).toHaveLength(1);
    // Five cells: the only unescaped pipes are the six borders.
    expect(rows[0].replace(/\\\|/g, "").split("|")).toHaveLength(7);
    expect(rows[0]).toContain("``we\\|ird`↵name``");
    expect(rows[0]).toContain("tag `a\\|b` → ``x`y↵z\\|w``");
    expect(rows[0]).toContain("metadata ~`k\\|1` +`new↵key`");
    // A CRLF is not shown as a LF: a tag whose line break the service holds as CRLF is a change to see.
    const crlf = summarizePreview(
      {
        steps: [
          {
            op: "update",
            urn: urn("c"),
            oldState: { type: TYPE, outputs: outputs({ tag: "a\r\nb" }) },
            newState: { type: TYPE, inputs: { blobId: "b1", tag: "a\nb" } },
          },
        ],
      },
      { nowMs: now },
    );
    expect(crlf).toContain("tag `a␍↵b` → `a↵b`");
  });
});

describe("a truthful summary", () => {
  const update = (name: string, olds: Record<string, unknown>, news: Record<string, unknown>, op = "update") => ({
    op,
    urn: urn(name),
    oldState: { type: TYPE, outputs: outputs(olds) },
    newState: { type: TYPE, inputs: { blobId: "b1", ...news } },
  });
  const soon = new Date(now + 2 * DAY - 3_600_000).toISOString();

  it("a file that keep-alive renews in this up gets no 'expiring soon'; one that will lapse does, with its date", () => {
    const keepAlive = { minRemainingEpochs: 3, renewEpochs: 5 };
    const md = summarizePreview(
      {
        steps: [
          update("kept", { expiresAt: soon, keepAlive }, { tag: "old", keepAlive, retentionEpochs: 2 }),
          update("lapsing", { expiresAt: soon }, { tag: "new", retentionEpochs: 2 }),
        ],
      },
      { nowMs: now },
    );
    expect(md).not.toMatch(/`kept`: expiring soon/);
    expect(md).toMatch(/\| `kept` \| update \| keep-alive renewal due/);
    expect(md).toContain(`\`lapsing\`: expiring soon: 2 epoch(s) left (expires ${soon})`);
  });

  it("keep-alive due with no room under the horizon is a notice: it buys nothing, so it is no change of the row", () => {
    const keepAlive = { minRemainingEpochs: 60, renewEpochs: 5 };
    const far = new Date(now + 53 * DAY - 3_600_000).toISOString();
    const md = summarizePreview({ steps: [update("far", { expiresAt: far, keepAlive }, { tag: "new", keepAlive })] }, { nowMs: now });
    expect(md).toContain("`far`: keep-alive renewal due (53 epoch(s) left");
    expect(md).toMatch(/horizon leaves no room; nothing bought/);
  });

  it("a --refresh preview's refresh steps of unchanged files add no rows, only a count", () => {
    const md = summarizePreview(
      { steps: [update("same-a", {}, { tag: "old", retentionEpochs: 2 }, "refresh"), update("same-b", {}, { tag: "old", retentionEpochs: 2 }, "read")] },
      { nowMs: now },
    );
    // Each is a GET, which the summary counts: "nothing is sent" would be untrue.
    expect(md).toContain("No StoredFile changes: 2 read (a GET per file); nothing else is sent and no epochs are bought.");
  });

  it("uploads are counted as uploads, not as renews", () => {
    const source = { [SIG_KEY]: ASSET_SIG, path: "files/a.txt", hash: "ab".repeat(32) };
    const md = summarizePreview(
      { steps: [{ op: "create", urn: urn("a.txt"), newState: { type: TYPE, inputs: { source, retentionEpochs: 3 } } }] },
      { nowMs: now },
    );
    expect(md).toMatch(/1 uploaded, .*0 renew\(s\), \*\*3 epoch\(s\) to buy\*\*/);
  });

  it("metadata keys can neither format, mention nor link in GitHub's Markdown", () => {
    const keys = ["![px](https://tracker.example/p.png)", "@someone please approve", "[click](javascript:alert(1))", "**bold**", "", "x``@user``"];
    const md = summarizePreview(
      { steps: [update("a", { metadata: {} }, { tag: "old", retentionEpochs: 2, metadata: Object.fromEntries(keys.map((k) => [k, 1])) })] },
      { nowMs: now },
    );
    const row = md.split("\n").find((l) => l.startsWith("| `a`"))!;
    // Every span closes where it opened: an even number of backtick runs of each length.
    for (const key of keys.filter((k) => k !== "" && !k.includes("`"))) expect(row).toContain(`+\`${key}\``);
    expect(row).toContain("+`  `");
    // Nothing of a key outside a code span.
    expect(row.replace(/`[^`]*`/g, "")).not.toMatch(/[@![\]*]/);
  });

  it("an end declared as before but past the recorded expiry is said as the gap bought, not as a change of retentionEpochs", () => {
    // What a preview after an `up` whose renew did not finish shows: the state records the end, the expiry is short of it.
    // Its retention start 26 epochs before the expiry: 4 short of the 30 declared.
    const short = { blobId: "b1", retentionEpochs: 30, retentionStartEpochs: 26, expiresAt: new Date(now + 6 * DAY).toISOString() };
    const md = summarizePreview(
      {
        config: { "tuskr:epochSeconds": "86400" },
        steps: [
          {
            op: "update",
            urn: urn("epochs"),
            oldState: { type: TYPE, outputs: short },
            newState: { type: TYPE, inputs: { blobId: "b1", retentionEpochs: 30 } },
          },
          {
            op: "update",
            urn: urn("date"),
            oldState: { type: TYPE, outputs: { ...short, retainUntil: "2026-12-10" } },
            newState: { type: TYPE, inputs: { blobId: "b1", retentionEpochs: 30, retainUntil: "2026-12-10" } },
          },
        ],
      },
      { nowMs: now },
    );
    expect(md).toContain(
      "| `epochs` | update | the declared end (retentionEpochs 30) is past the recorded expiry 2026-11-28T00:00:00.000Z: the gap is bought | 4 | 2026-12-02T00:00:00.000Z |",
    );
    expect(md).toContain(
      "| `date` | update | the declared end (retentionEpochs 30, retainUntil `2026-12-10`) is past the recorded expiry 2026-11-28T00:00:00.000Z: the gap is bought | 12 | 2026-12-10T00:00:00.000Z |",
    );
    expect(md).not.toContain("30 → 30");
  });

  it("an upload to a retainUntil date says the one epoch a renew may add after it; one whose count decides does not", () => {
    const source = { [SIG_KEY]: ASSET_SIG, path: "files/a.txt", hash: "ab".repeat(32) };
    const until = new Date(now + 10.5 * DAY).toISOString();
    const FOLDER = "tuskr:index:StoredFolder";
    const md = summarizePreview(
      {
        config: { "tuskr:epochSeconds": "86400" },
        steps: [
          { op: "create", urn: urn("dated"), newState: { type: TYPE, inputs: { source, retainUntil: until } } },
          { op: "create", urn: urn("counted"), newState: { type: TYPE, inputs: { source, retainUntil: until, retentionEpochs: 20 } } },
          {
            op: "create",
            urn: `urn:pulumi:dev::p::${FOLDER}::site`,
            newState: { type: FOLDER, custom: true, inputs: { manifest: { "a.txt": "h1", "b.txt": "h2", "c.txt": "h2" }, retainUntil: until } },
          },
        ],
      },
      { nowMs: now },
    );
    const row = (name: string) => md.split("\n").find((l) => l.startsWith(`| \`${name}\``));
    expect(row("dated")).toMatch(/to the `retainUntil` date: up to 1 more epoch, by a renew after the upload .* \| 11 \|/);
    expect(row("counted")).not.toContain("retainUntil");
    expect(row("site")).toMatch(/2 upload\(s\) to the `retainUntil` date: up to 1 more epoch, by a renew after the upload .* \| 22 \|/);
    expect(md).toMatch(/\*\*53 epoch\(s\) to buy\*\* \(.*; up to 3 more by renews after uploads to a `retainUntil` date\)/);
    expect(md).toContain("uploads: the declared epochs, or only what the declared end lacks when the service already holds the content");
  });
});

describe("inert text: control, bidi and zero-width characters are shown escaped", () => {
  // What a reviewer would otherwise not see, or see reordered: each shown as its code point.
  const HIDDEN = [
    "\u034F",
    "\uFE0F",
    "\u3164",
    "\u115F",
    "\uFFA0",
    "\u2800",
    "\u202E",
    "\u2066",
    "\u200F",
    "\u061C",
    "\u200B",
    "\u200D",
    "\u2060",
    "\uFEFF",
    "\u0007",
    "\u001B",
    "\u0085",
    "\u2028",
    "\u{E0041}",
  ];
  const raw = new RegExp(`[${HIDDEN.join("")}]`, "u");
  const shown = (c: string) =>
    `\\u${(c.codePointAt(0) ?? 0) > 0xffff ? `{${c.codePointAt(0)!.toString(16).toUpperCase()}}` : c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;

  it("code() escapes each, and still shows a carriage return as ␍ and a line feed as ↵", () => {
    for (const c of HIDDEN) expect(code(`a${c}b`)).toBe(`\`a${shown(c)}b\``);
    expect(code("v1\u202E2v")).toBe("`v1\\u202E2v`");
    expect(code("a\r\nb")).toBe("`a␍↵b`");
    expect(code("\uFEFF")).toBe("`\\uFEFF`");
  });

  it("names, tags, metadata keys, paths, blobIds and messages in the comment carry none raw", () => {
    const source = { [SIG_KEY]: ASSET_SIG, path: "files/\u202Egnp.exe", hash: "ab".repeat(32) };
    const md = summarizePreview(
      {
        steps: [
          {
            op: "update",
            urn: urn("lo\u202Ego"),
            oldState: { type: TYPE, outputs: outputs({ tag: "v1", mimeType: "image/png", contentType: "image/png", metadata: { team: 1 } }) },
            newState: { type: TYPE, inputs: { blobId: "b1", tag: "v1\u200B", contentType: "text/html\u2066", metadata: { "te\u200Dam": 1 } } },
          },
          { op: "create", urn: urn("up\u0007"), newState: { type: TYPE, inputs: { source, retentionEpochs: 1 } } },
          { op: "create", urn: urn("adopted"), newState: { type: TYPE, inputs: { blobId: "b\uFEFF9", tag: "\u2028x" } } },
          { op: "delete", urn: urn("gone\u061C"), oldState: { type: TYPE, outputs: outputs({}) } },
        ],
      },
      { nowMs: now },
    );
    expect(md).not.toMatch(raw);
    for (const escaped of [
      "`lo\\u202Ego`",
      "`v1\\u200B`",
      "+`te\\u200Dam`",
      "`files/\\u202Egnp.exe`",
      "`up\\u0007`",
      "`b\\uFEFF9`",
      "`\\u2028x`",
      "`gone\\u061C`",
    ])
      expect(md).toContain(escaped);
    // A provider's message quoting a declared value (a notice, not a code span) is escaped too.
    expect(md).toContain("contentType text/html\\u2066:");
  });
});

describe("every step op Pulumi writes, for what it is", () => {
  const FOLDER = "tuskr:index:StoredFolder";
  const recorded = { type: TYPE, id: "b1", inputs: { blobId: "b1", retentionEpochs: 2 }, outputs: outputs({}) };
  const step = (op: string, name: string, states: Record<string, unknown> = { oldState: recorded, newState: recorded }) => ({ op, urn: urn(name), ...states });
  const summary = (...steps: unknown[]) => summarizePreview({ steps }, { nowMs: now });
  const row = (md: string, name: string) => md.split("\n").find((l) => l.startsWith(`| \`${name}\``));

  it("refuses a file's or a folder's step whose op it does not know, naming the op and the resource; another resource's is not its business", () => {
    for (const [input, line] of [
      [step("frobnicate", "a"), 'StoredFile "a": step op "frobnicate" is not one pulumi-tuskr summary can describe'],
      // Pulumi's own ops that never show a resource's change: refused too, not taken for "nothing".
      [step("diff", "a"), 'StoredFile "a": step op "diff" is not one pulumi-tuskr summary can describe'],
      [
        { op: "extend-parameterize", urn: `urn:pulumi:dev::p::${FOLDER}::site`, newState: { type: FOLDER, custom: true } },
        'StoredFolder "site": step op "extend-parameterize"',
      ],
      // The provider refuses to import a folder, so no preview that succeeded has such a step.
      [
        { op: "import", urn: `urn:pulumi:dev::p::${FOLDER}::site`, newState: { type: FOLDER, custom: true, importID: "x", inputs: { manifest: {} } } },
        'StoredFolder "site": step op "import" is not one pulumi-tuskr summary can describe',
      ],
      // One line, whatever the name and op hold.
      [step("new\nop", "we\u202Eird\nname"), 'StoredFile "we\\u202Eird\\nname": step op "new\\nop" is not one'],
    ] as const) {
      let thrown: unknown;
      try {
        summary(input);
      } catch (e) {
        thrown = e;
      }
      expect(thrown, JSON.stringify(input)).toBeInstanceOf(NotTheInput);
      expect((thrown as Error).message.startsWith(line), (thrown as Error).message).toBe(true);
      expect((thrown as Error).message).not.toMatch(/[\n\u202E]/);
      expect((thrown as Error).message.split(/\s+/).length).toBeLessThanOrEqual(30);
    }
    expect(summary({ op: "frobnicate", urn: "urn:pulumi:dev::p::aws:s3/bucket:Bucket::b" })).toMatch(/No StoredFile changes/);
  });

  it("an import adopts a file by reading it: a row saying one GET and nothing bought, counted as imported", () => {
    const md = summary(step("import", "imp", { newState: { type: TYPE, importID: "b7", inputs: { blobId: "b7", tag: "t", retentionEpochs: 5 } } }));
    expect(row(md, "imp")).toBe(
      "| `imp` | import | adopt `b7` by reading it: one GET, nothing bought (Pulumi refuses the import if the declaration differs) | — | — |",
    );
    expect(md).toMatch(
      /\*\*Totals:\*\* 0 adopted, 1 imported, 0 updated, 0 replaced, 0 no longer managed; 0 PATCH on existing files, 0 renew\(s\), \*\*0 epoch\(s\) to buy\*\*\./,
    );
    expect(md).not.toMatch(/No StoredFile changes|nothing is sent/);
  });

  it("refresh and read steps are reads: no row each, but counted, and never said to send nothing", () => {
    const external = { type: TYPE, id: "b3", external: true, outputs: outputs({ blobId: "b3" }) };
    // A one-resource folder's refresh reads each of its files.
    const folder = {
      op: "refresh",
      urn: `urn:pulumi:dev::p::${FOLDER}::site`,
      oldState: { type: FOLDER, custom: true, outputs: {} },
      newState: { type: FOLDER, custom: true, outputs: {} },
    };
    const reads = summary(step("refresh", "r1"), step("read", "r2", { newState: external }), folder);
    expect(reads).toContain("No StoredFile changes: 3 read (a GET per file); nothing else is sent and no epochs are bought.");
    expect(reads).not.toContain("nothing is sent");
    // Beside changes, in the totals.
    const mixed = summary(step("refresh", "r1"), step("update", "u", { oldState: recorded, newState: { type: TYPE, inputs: { blobId: "b1", tag: "new" } } }));
    expect(mixed).toMatch(/0 adopted, 1 updated, 0 replaced, 0 no longer managed; 1 read \(a GET per file\), 1 PATCH on existing files, 0 renew\(s\)/);
    expect(row(mixed, "r1")).toBeUndefined();
  });

  it("a discard forgets a read file: a row saying no request, counted as forgotten, not taken for half of a replace", () => {
    const md = summary(step("discard", "was-read", { oldState: { ...recorded, external: true } }));
    expect(row(md, "was-read")).toBe("| `was-read` | discard | no longer read by the program: forgotten from the state; no request | — | — |");
    const folder = summary({ op: "discard", urn: `urn:pulumi:dev::p::${FOLDER}::site`, oldState: { type: FOLDER, custom: true, external: true, outputs: {} } });
    expect(row(folder, "site")).toBe("| `site` | discard | no longer read by the program: forgotten from the state; no request | — | — |");
    expect(md).toMatch(
      /0 adopted, 0 updated, 0 replaced, 0 no longer managed, 1 forgotten; 0 PATCH on existing files, 0 renew\(s\), \*\*0 epoch\(s\) to buy\*\*\./,
    );
  });

  it("the halves of a replace add nothing; a replace by an import or of a read file says what it sends", () => {
    const halves = ["create-replacement", "delete-replaced", "read-replacement", "discard-replaced", "import-replacement", "remove-pending-replace", "same"];
    expect(summary(...halves.map((op) => step(op, "half")))).toContain("No StoredFile changes: nothing is sent to the service and no epochs are bought.");
    // The engine's rule: a goal whose import ID is not the recorded one's is an import (here replacing the recorded file).
    const imported = { type: TYPE, importID: "b2", inputs: { blobId: "b2", retentionEpochs: 5 } };
    const md = summary(step("replace", "x", { oldState: recorded, newState: imported }));
    expect(row(md, "x")).toBe(
      "| `x` | replace | **replace** by an import: adopt `b2` by reading it: one GET, nothing bought (Pulumi refuses the import if the declaration differs); the old file `b1` is left as it is, stored until 2026-12-02T00:00:00.000Z | — | — |",
    );
    expect(md).toMatch(/0 adopted, 1 imported, 0 updated, 1 replaced, .*\*\*0 epoch\(s\) to buy\*\*\./);
    // A file imported before keeps its import ID: its replace is a replace.
    const again = summary(
      step("replace", "y", {
        oldState: { ...recorded, importID: "b1" },
        newState: { type: TYPE, importID: "b1", inputs: { blobId: "b9", retentionEpochs: 5 } },
      }),
    );
    expect(row(again, "y")).toMatch(/\*\*replace\*\*: blobId `b1` → `b9` .* \| 5 \|/);
    // A read file whose id changed is read again.
    const reread = summary(step("replace", "z", { oldState: { ...recorded, external: true }, newState: { type: TYPE, id: "b4", external: true, inputs: {} } }));
    expect(reread).toContain("No StoredFile changes: 1 read (a GET per file); nothing else is sent and no epochs are bought.");
  });

  it("refuses a step without the state its op describes (an update with neither state), rather than a row of dashes", () => {
    for (const [input, line] of [
      [step("update", "a", {}), 'StoredFile "a": its update step has no oldState.outputs'],
      [step("update", "a", { oldState: { type: TYPE }, newState: { type: TYPE } }), 'StoredFile "a": its update step has no oldState.outputs'],
      [step("update", "a", { oldState: recorded }), 'StoredFile "a": its update step has no newState.inputs'],
      [step("replace", "a", { newState: recorded }), 'StoredFile "a": its replace step has no oldState.outputs'],
      [step("create", "a", {}), 'StoredFile "a": its create step has no newState.inputs'],
      [step("import", "a", { newState: { type: TYPE, inputs: { blobId: "b7" } } }), 'StoredFile "a": its import step has no newState.importID'],
      [{ op: "update", urn: `urn:pulumi:dev::p::${FOLDER}::site` }, 'StoredFolder "site": its update step has no oldState.outputs'],
    ] as const) {
      expect(() => summary(input), JSON.stringify(input)).toThrow(NotTheInput);
      expect(() => summary(input)).toThrow(line);
    }
  });
});
