import { SECRET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

// Runs the built CLI (dist/), so it lives in the integration tier, which `npm test` builds first.
describe("pulumi-tuskr summary (the CLI)", () => {
  const cli = path.resolve(__dirname, "../../../dist/provider/cli/main.js");
  // What `pulumi preview --json` prints for a stack with no StoredFile (trimmed), and what `pulumi stack export` prints.
  const stackStep = { op: "same", urn: "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev", newState: { type: "pulumi:pulumi:Stack", custom: false } };
  const realPreview = { steps: [stackStep], duration: 1559853229, changeSummary: { same: 1 } };
  const file = { urn: "urn:pulumi:dev::p::tuskr:index:StoredFile::a", type: "tuskr:index:StoredFile", custom: true, outputs: { blobId: "b1" } };
  const anExport = { version: 3, deployment: { manifest: { version: "v3.274.1" }, resources: [{ ...stackStep.newState, urn: stackStep.urn }, file] } };

  it("reads the preview on stdin and prints Markdown", () => {
    const out = execFileSync(process.execPath, [cli, "summary"], { input: JSON.stringify(realPreview), encoding: "utf8" });
    expect(out).toMatch(/No StoredFile changes/);
  });
  it("exits 2 with a clear message on bad usage or non-JSON input", () => {
    expect(spawnSync(process.execPath, [cli, "sumary"], { encoding: "utf8" }).status).toBe(2);
    const bad = spawnSync(process.execPath, [cli, "summary"], { input: "not json", encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/pipe in the output of `pulumi preview --json`/);
  });
  it("refuses, exit 2 and one line saying what it expected, what is not a preview; a real preview with no StoredFile change says so", () => {
    // `steps: []` included: Pulumi omits an empty list, and every preview has the stack's own step.
    for (const input of [{}, anExport, { steps: [[file]] }, { config: {}, duration: 1 }, { steps: [{ op: "same" }] }, { steps: [] }]) {
      const out = spawnSync(process.execPath, [cli, "summary"], { input: JSON.stringify(input), encoding: "utf8" });
      expect([out.status, out.stdout], JSON.stringify(input)).toEqual([2, ""]);
      expect(out.stderr).toMatch(/^not the output of `pulumi preview --json`: expected an object with a `steps` list[^\n]*\n$/);
    }
    const none = spawnSync(process.execPath, [cli, "summary"], { input: JSON.stringify(realPreview), encoding: "utf8" });
    expect(none.status).toBe(0);
    expect(none.stdout).toMatch(/No StoredFile changes/);
  });

  it("a file step it cannot describe (an op it does not know, an update with neither state) exits 2 with one line naming the op and the file, nothing on stdout", () => {
    const fileUrn = "urn:pulumi:dev::p::pulumi-nodejs:dynamic/tuskr:StoredFile::logo";
    for (const [step, said] of [
      [{ op: "frobnicate", urn: fileUrn }, /^StoredFile "logo": step op "frobnicate" is not one pulumi-tuskr summary can describe[^\n]*\n$/],
      [{ op: "update", urn: fileUrn }, /^StoredFile "logo": its update step has no oldState\.outputs[^\n]*\n$/],
    ] as const) {
      const out = spawnSync(process.execPath, [cli, "summary"], { input: JSON.stringify({ steps: [stackStep, step] }), encoding: "utf8" });
      expect([out.status, out.stdout], JSON.stringify(step)).toEqual([2, ""]);
      expect(out.stderr).toMatch(said);
    }
    // What it knows it says, exit 0: an import is a read, and a read is no "nothing is sent".
    const imported = spawnSync(process.execPath, [cli, "summary"], {
      input: JSON.stringify({
        steps: [
          stackStep,
          { op: "import", urn: fileUrn, newState: { type: "pulumi-nodejs:dynamic/tuskr:StoredFile", importID: "b7", inputs: { blobId: "b7" } } },
        ],
      }),
      encoding: "utf8",
    });
    expect(imported.status).toBe(0);
    expect(imported.stdout).toContain("| `logo` | import | adopt `b7` by reading it: one GET, nothing bought");
    expect(imported.stdout).not.toMatch(/nothing is sent/);
  });

  it("a failed preview (its JSON lists errors, and the steps stop where it failed) is said so, and exits 1; warnings alone do not", () => {
    const diagnostics = (severity: string) => [
      {
        urn: "urn:pulumi:dev::p::tuskr:index:StoredFolder::site",
        prefix: `${severity}: `,
        message: "retainUntil must be at most 52 epochs from now\n",
        severity,
      },
    ];
    // Failed at the first step, or before any (then Pulumi omits `steps`).
    for (const steps of [{ steps: [stackStep] }, {}]) {
      const failed = spawnSync(process.execPath, [cli, "summary"], {
        input: JSON.stringify({ ...steps, diagnostics: diagnostics("error") }),
        encoding: "utf8",
      });
      expect(failed.status).toBe(1);
      expect(failed.stdout).toContain("**The preview failed** (1 error(s)): nothing is summarized");
      expect(failed.stdout).not.toMatch(/No StoredFile changes|retainUntil/);
    }
    const warned = spawnSync(process.execPath, [cli, "summary"], {
      input: JSON.stringify({ ...realPreview, diagnostics: diagnostics("warning") }),
      encoding: "utf8",
    });
    expect(warned.status).toBe(0);
    expect(warned.stdout).toMatch(/No StoredFile changes/);
  });
});

describe("pulumi-tuskr expiry (the alarm)", () => {
  const cli = path.resolve(__dirname, "../../../dist/provider/cli/main.js");
  const now = "2026-11-23T12:00:00.000Z";
  const day = 86_400_000;
  const at = (days: number) => new Date(Date.parse(now) + days * day).toISOString();
  const secret = { [SIG_KEY]: SECRET_SIG, ciphertext: "v1:abc" };
  const exported = {
    version: 3,
    deployment: {
      resources: [
        { urn: "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev", type: "pulumi:pulumi:Stack", outputs: {} },
        {
          urn: "urn:pulumi:dev::p::pulumi-nodejs:dynamic/tuskr:StoredFile::logo",
          type: "pulumi-nodejs:dynamic/tuskr:StoredFile",
          outputs: { blobId: "b-logo", expiresAt: at(20), keepAlive: { minRemainingEpochs: 7, renewEpochs: 30 } },
        },
        {
          urn: "urn:pulumi:dev::p::tuskr:index:StoredFolder$pulumi-nodejs:dynamic/tuskr:StoredFile::site/index.html",
          type: "pulumi-nodejs:dynamic/tuskr:StoredFile",
          outputs: { blobId: "b-index", expiresAt: at(1.5) },
        },
        {
          urn: "urn:pulumi:dev::p::tuskr:index:StoredFolder$pulumi-nodejs:dynamic/tuskr:StoredFile::docs/sha256:0123456789abcdef0123456789abcdef",
          type: "pulumi-nodejs:dynamic/tuskr:StoredFile",
          outputs: { blobId: "b-guide", name: "guide/intro.md", expiresAt: at(30) },
        },
        {
          urn: "urn:pulumi:dev::p::tuskr:index:StoredFile::report",
          type: "tuskr:index:StoredFile",
          outputs: { blobId: "b-report", name: secret, expiresAt: at(-1) },
        },
      ],
    },
  };
  const run = (args: string[], input: unknown) =>
    spawnSync(process.execPath, [cli, "expiry", "--now", now, ...args], { input: JSON.stringify(input), encoding: "utf8" });

  it("lists every StoredFile of both resource types, soonest first, and exits 1 when one ends within the window or has ended", () => {
    const out = run([], exported);
    expect(out.status).toBe(1);
    const rows = out.stdout.split("\n").filter((l) => l.startsWith("| `"));
    expect(rows).toEqual([
      `| \`report\` | \`b-report\` | \`${at(-1)}\` | **expired** | — |`,
      `| \`site/index.html\` | \`b-index\` | \`${at(1.5)}\` | **2** | — |`,
      `| \`logo\` | \`b-logo\` | \`${at(20)}\` | 20 | renews 30 when fewer than 7 left (at an \`up\`) |`,
      `| \`docs/guide/intro.md\` | \`b-guide\` | \`${at(30)}\` | 30 | — |`,
    ]);
    expect(out.stdout).toMatch(/\*\*2 file\(s\) end within 3 epoch\(s\) or have ended\*\*/);
  });

  it("a folder's file kept as a StoredFile of its own is named by its paths from the folder's outputs, not by a name that an override or a drift changes", () => {
    const folderUrn = "urn:pulumi:dev::p::tuskr:index:StoredFolder::docs";
    const stack = {
      version: 3,
      deployment: {
        resources: [
          {
            urn: folderUrn,
            type: "tuskr:index:StoredFolder",
            custom: false,
            outputs: { blobIds: { "b/copy.md": "b-guide", "a/intro.md": "b-guide", "c.md": "b-c" } },
          },
          {
            urn: `urn:pulumi:dev::p::tuskr:index:StoredFolder$pulumi-nodejs:dynamic/tuskr:StoredFile::docs/sha256:0123456789abcdef0123456789abcdef`,
            type: "pulumi-nodejs:dynamic/tuskr:StoredFile",
            parent: folderUrn,
            outputs: { blobId: "b-guide", name: "Guide (renamed)", expiresAt: at(30) },
          },
          {
            urn: `urn:pulumi:dev::p::tuskr:index:StoredFolder$pulumi-nodejs:dynamic/tuskr:StoredFile::docs/sha256:fedcba9876543210fedcba9876543210`,
            type: "pulumi-nodejs:dynamic/tuskr:StoredFile",
            parent: folderUrn,
            outputs: { blobId: "b-c", name: "hacked", expiresAt: at(40) },
          },
        ],
      },
    };
    const rows = run([], stack)
      .stdout.split("\n")
      .filter((l) => l.startsWith("| `"));
    expect(rows).toEqual([
      `| \`docs/a/intro.md (and 1 more path(s))\` | \`b-guide\` | \`${at(30)}\` | 30 | — |`,
      `| \`docs/c.md\` | \`b-c\` | \`${at(40)}\` | 40 | — |`,
    ]);
  });

  it("--within sets the window; nothing within it exits 0; --json gives the same rows", () => {
    const fine = { version: 3, deployment: { resources: exported.deployment.resources.slice(0, 2) } };
    const out = run(["--within", "19"], fine);
    expect(out.status).toBe(0);
    expect(out.stdout).toMatch(/No file ends within 19 epoch\(s\)\./);
    expect(run(["--within", "20"], fine).status).toBe(1);
    const json = JSON.parse(run(["--json"], exported).stdout);
    expect(json).toMatchObject({ withinEpochs: 3, alarm: true });
    expect(json.rows.map((r: { blobId: string; epochsLeft: number }) => [r.blobId, r.epochsLeft])).toEqual([
      ["b-report", 0],
      ["b-index", 2],
      ["b-logo", 20],
      ["b-guide", 30],
    ]);
  });

  it("values from the export cannot format, mention or break the table; a secret or malformed keep-alive is not shown", () => {
    const hostile = {
      version: 3,
      deployment: {
        resources: [
          {
            urn: "urn:pulumi:dev::p::tuskr:index:StoredFile::a",
            type: "tuskr:index:StoredFile",
            outputs: {
              blobId: "b",
              expiresAt: `${at(20)} | @user ![i](http://t/p.png)\n| x | y |`,
              keepAlive: { renewEpochs: "1 | [x](javascript:1)", minRemainingEpochs: "<img src=x>" },
            },
          },
          {
            urn: "urn:pulumi:dev::p::tuskr:index:StoredFile::s",
            type: "tuskr:index:StoredFile",
            outputs: { blobId: "c", expiresAt: at(20), keepAlive: secret },
          },
        ],
      },
    };
    const rows = run(["--within", "1"], hostile)
      .stdout.split("\n")
      .filter((l) => l.startsWith("| `"));
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row.replace(/`[^`]*`/g, "").replace(/\\\|/g, "")).not.toMatch(/[@![\]<]|\|.*\|.*\|.*\|.*\|.*\|.*\|/);
    expect(rows.join("\n")).not.toMatch(/undefined/);
  });

  it("a name, blobId or expiry with control, bidi or zero-width characters shows them escaped", () => {
    const stack = {
      version: 3,
      deployment: {
        resources: [
          {
            urn: "urn:pulumi:dev::p::tuskr:index:StoredFile::lo\u202Egnp.exe",
            type: "tuskr:index:StoredFile",
            outputs: { blobId: "b\u200B1\u2066", expiresAt: `${at(20)}\u0007` },
          },
        ],
      },
    };
    const out = run([], stack).stdout;
    for (const c of ["\u202E", "\u200B", "\u2066", "\u0007"]) expect(out).not.toContain(c);
    expect(out).toContain("| `lo\\u202Egnp.exe` | `b\\u200B1\\u2066` |");
    expect(out).toContain(`\`${at(20)}\\u0007\``);
  });

  it("a stack's epoch length too large to count with, an empty or non-decimal --within, a byte-order mark", () => {
    const huge = {
      version: 3,
      deployment: { resources: [{ type: "pulumi:providers:tuskr", inputs: { epochSeconds: "1e308" } }, ...exported.deployment.resources.slice(1, 2)] },
    };
    expect(run(["--within", "3"], huge).status).toBe(0);
    expect(run(["--within", ""], exported).status).toBe(2);
    expect(run(["--within", "0x20"], exported).status).toBe(2);
    const bom = spawnSync(process.execPath, [cli, "expiry", "--now", now], { input: `\uFEFF${JSON.stringify(exported)}`, encoding: "utf8" });
    expect(bom.status).toBe(1);
  });

  it("a TypeScript stack's settings come from --config (`pulumi config --json`): its window and its epoch's length; without it the report says it used the defaults", () => {
    // The logo ends in 20 days. A stack whose config warns within 20 epochs raises the alarm for it;
    // one whose epochs are 2 days long counts 10 epochs left.
    const logo = { version: 3, deployment: { resources: exported.deployment.resources.slice(0, 2) } };
    const bare = run([], logo);
    expect(bare.status).toBe(0);
    expect(bare.stdout).toMatch(/Counted with the default settings \(an epoch of 86400 s\).*--config <\(pulumi config --json\)/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "expiry-config-"));
    const config = (values: Record<string, string>) => {
      const file = path.join(dir, `${Object.keys(values).join("-") || "none"}.json`);
      const json: Record<string, unknown> = { "tuskr:apiKey": { secret: true } };
      for (const [k, v] of Object.entries(values)) json[k] = { value: v, secret: false };
      fs.writeFileSync(file, JSON.stringify(json));
      return file;
    };
    const warned = run(["--config", config({ "tuskr:expiryWarningEpochs": "20" })], logo);
    expect(warned.status).toBe(1);
    expect(warned.stdout).toMatch(/\*\*1 file\(s\) end within 20 epoch\(s\)/);
    expect(warned.stdout).not.toMatch(/default settings/);
    const long = JSON.parse(run(["--json", "--config", config({ "tuskr:epochSeconds": "172800" })], logo).stdout);
    expect(long).toMatchObject({ settingsFrom: "config", epochSeconds: 172800, withinEpochs: 3 });
    expect(long.rows[0].epochsLeft).toBe(10);
    // --within still wins over the config's window.
    expect(run(["--within", "3", "--config", config({ "tuskr:expiryWarningEpochs": "20" })], logo).status).toBe(0);
    // A secret setting is listed without its value: said, not taken for the default silently.
    const secretFile = path.join(dir, "secret.json");
    fs.writeFileSync(secretFile, JSON.stringify({ "tuskr:epochSeconds": { secret: true } }));
    const hidden = run(["--config", secretFile], logo);
    expect(hidden.stdout).toMatch(/Counted without `tuskr:epochSeconds`: secret in the config given/);
    // What the config does not set, the export's provider (a plugin stack's) still says.
    const plugin = {
      version: 3,
      deployment: { resources: [{ type: "pulumi:providers:tuskr", inputs: { epochSeconds: "172800" } }, ...logo.deployment.resources] },
    };
    expect(JSON.parse(run(["--json", "--config", config({ "tuskr:expiryWarningEpochs": "5" })], plugin).stdout)).toMatchObject({
      epochSeconds: 172800,
      withinEpochs: 5,
      rows: [{ epochsLeft: 10, alarm: false }],
    });
    fs.writeFileSync(path.join(dir, "bad.json"), "[1]");
    const bad = run(["--config", path.join(dir, "bad.json")], logo);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--config: not the output of `pulumi config --json`/);
    expect(run(["--config", path.join(dir, "missing.json")], logo).status).toBe(2);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("refuses, exit 2 and one line saying what it expected, what is not an export; an export holding no file says so, exit 0", () => {
    const stack = { urn: "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev", type: "pulumi:pulumi:Stack", custom: false };
    const file = exported.deployment.resources[1];
    for (const input of [
      {},
      { steps: [{ op: "same", urn: stack.urn, newState: stack }], duration: 1 },
      { version: 3, deployment: { resources: [[stack, file]] } },
      { version: 3, deployment: { resources: [file.urn] } },
      { version: 3 },
      { deployment: { resources: [file] } },
      [exported],
    ]) {
      const out = run([], input);
      expect([out.status, out.stdout], JSON.stringify(input)).toEqual([2, ""]);
      expect(out.stderr).toMatch(/^not the output of `pulumi stack export`: expected version 3 with `deployment.resources`[^\n]*\n$/);
    }
    // A new stack's export has no resources at all; another has no file among them.
    for (const input of [
      { version: 3, deployment: { manifest: { version: "v3.274.1" }, metadata: {} } },
      { version: 3, deployment: { resources: [stack] } },
    ]) {
      const out = run([], input);
      expect(out.status, JSON.stringify(input)).toBe(0);
      expect(out.stdout).toMatch(/No file kept by pulumi-tuskr in this stack/);
      expect(JSON.parse(run(["--json"], input).stdout)).toMatchObject({ rows: [], alarm: false });
    }
  });

  it("exits 2, not 1, on input it cannot read or a bad --within", () => {
    expect(run([], { steps: [] }).status).toBe(2);
    expect(spawnSync(process.execPath, [cli, "expiry"], { input: "not json", encoding: "utf8" }).status).toBe(2);
    expect(run(["--within", "-1"], exported).status).toBe(2);
  });
});
