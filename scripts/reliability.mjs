#!/usr/bin/env node
// `npm run reliability`: runs the reliability and security tests at full size (1,000 randomized
// renew sequences, the 200-file soak, 10,000 cases per property), then writes RELIABILITY.md
// from what they measured. The report is generated, never edited by hand.
//
//   npm run reliability                # full size (about 10 minutes on 2 cores)
//   npm run reliability -- --quick     # the sizes `npm test` runs (a few minutes)
//   npm run reliability -- --from DIR  # only re-render the report from the JSON in DIR
//
// The tests are the "reliability" project of vitest.config.ts, which `npm test` also runs (in
// the unit, integration and e2e tiers, at bounded sizes); TUSKR_RELIABILITY=full makes them
// large and TUSKR_RELIABILITY_OUT tells them where to write their measurements.
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const quick = args.includes("--quick");
const fromIndex = args.indexOf("--from");
const reportPath = path.join(repoRoot, "RELIABILITY.md");
const lastRunPath = path.join(repoRoot, "RELIABILITY.json");

const git = (...a) => {
  try {
    return execFileSync("git", a, { cwd: repoRoot, encoding: "utf8" }).trim();
  } catch {
    return "";
  }
};

let outDir;
let testRun = { exitCode: 0, seconds: 0 };
if (fromIndex >= 0) {
  outDir = path.resolve(args[fromIndex + 1] ?? "");
} else {
  outDir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-reliability-run-"));
  const started = Date.now();
  // The commit the tests ran on, read before they start: a commit made during the run is not it.
  const commit = git("rev-parse", "--short", "HEAD");
  const vitest = path.join(repoRoot, "node_modules", ".bin", "vitest");
  const run = spawnSync(
    vitest,
    ["run", "--project", "reliability", "--reporter=default", "--reporter=json", `--outputFile.json=${path.join(outDir, "vitest.json")}`],
    {
      cwd: repoRoot,
      stdio: "inherit",
      env: { ...process.env, TUSKR_RELIABILITY: quick ? "ci" : "full", TUSKR_RELIABILITY_OUT: outDir },
    },
  );
  testRun = { exitCode: run.status ?? 1, seconds: (Date.now() - started) / 1000, commit };
  fs.writeFileSync(path.join(outDir, "test-run.json"), JSON.stringify(testRun));
}

const read = (name) => {
  try {
    return JSON.parse(fs.readFileSync(path.join(outDir, `${name}.json`), "utf8"));
  } catch {
    return undefined;
  }
};
const data = {
  testRun: read("test-run") ?? testRun,
  vitest: read("vitest"),
  renew: read("renew-sequences"),
  soak: read("soak"),
  failedUp: read("failed-up"),
  rateLimit: read("rate-limit"),
  secrets: read("secrets"),
  crash: read("crash"),
  hostile: read("hostile-responses"),
  properties: read("properties"),
  securityInputs: read("security-inputs"),
  securityAuth: read("security-auth"),
  folderSequences: read("folder-sequences"),
};

let pulumiVersion = "";
try {
  const dir = execFileSync("bash", [path.join(repoRoot, "scripts/ensure-pulumi")], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  pulumiVersion = execFileSync(path.join(dir, "pulumi"), ["version"], { encoding: "utf8", env: { ...process.env, PULUMI_SKIP_UPDATE_CHECK: "true" } }).trim();
} catch {
  /* left blank */
}

// ---------------------------------------------------------------------------------------------
// Rendering.
// ---------------------------------------------------------------------------------------------

const n = (v) => (v === undefined || v === null ? "—" : typeof v === "number" ? v.toLocaleString("en-US") : String(v));
const faults = (f) =>
  f && Object.keys(f).length
    ? Object.entries(f)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => `${k} ${n(v)}`)
        .join(", ")
    : "none";
const rates = (cfg) =>
  cfg?.routes
    ? Object.entries(cfg.routes)
        .map(
          ([route, r]) =>
            `${route}: ${Object.entries(r)
              .map(
                ([k, v]) =>
                  `${k.replace(/Rate$/, "").replace("error5xx", "5xx").replace("applyThenDrop", "apply-then-drop").replace("rateLimit", "429")} ${Math.round(v * 100)}%`,
              )
              .join(" ")}`,
        )
        .join("; ")
    : "—";
const table = (head, rows) =>
  [
    `| ${head.join(" | ")} |`,
    `|${head.map(() => "---").join("|")}|`,
    ...rows.map((r) => `| ${r.map((c) => String(c).replace(/\|/g, "\\|").replace(/\n/g, " ")).join(" | ")} |`),
  ].join("\n");
const secs = (s) => (s === undefined ? "—" : s >= 90 ? `${(s / 60).toFixed(1)} min` : `${s.toFixed(1)} s`);
const code = (s) => `\`${String(s).replace(/`/g, "'")}\``;

const out = [];
const push = (...lines) => out.push(...lines);
const head = git("rev-parse", "--short", "HEAD");
const mode = quick ? "quick (the sizes `npm test` runs)" : "full";
// Only what the measured code and tests are made of: a change to bench/ or a generated report
// does not make this run's figures any less the committed code's.
const dirty =
  git(
    "status",
    "--porcelain",
    "--untracked-files=no",
    "--",
    "provider",
    "emulator",
    "test",
    "scripts",
    "tools",
    "package.json",
    "package-lock.json",
    "tsconfig.json",
    "vitest.config.ts",
  ) !== "";

push(
  "# Reliability report",
  "",
  `<!-- Generated by \`npm run reliability\` (scripts/reliability.mjs) from the tests' measurements. Do not edit: run it again. -->`,
  "",
  `Generated ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC by \`npm run reliability${quick ? " -- --quick" : ""}\` (${mode}) at commit ${code(data.testRun.commit || head || "?")}${data.testRun.commit && data.testRun.commit !== head ? ` (HEAD moved to ${code(head)} during the run)` : ""}${dirty ? " (working tree with uncommitted changes)" : ""}, Node ${process.version}, ${pulumiVersion ? `Pulumi ${pulumiVersion}` : "Pulumi CLI not found"}, ${os.cpus().length} CPU(s).`,
  "Everything below is measured against the local emulator over loopback, through the provider's own code and, where stated, the real Pulumi engine (Automation API and CLI).",
  "",
);

// --- Verdict ---------------------------------------------------------------------------------
const r = data.renew ?? {};
const soakPhases = data.soak?.phases ?? [];
const verdict = [];
if (r.random)
  verdict.push([
    "Randomized renew sequences (random fault mixes)",
    `${n(r.random.sequences)} sequences, ${n(r.random.renewsSent)} renews sent`,
    r.random.violations?.length ? `**${r.random.violations.length} violations**` : "each file ends at its declared end, in every sequence, after every step",
  ]);
if (r.scripted)
  verdict.push([
    "Renew sequences with scripted faults (fast-check)",
    `${n(r.scripted.sequences)} sequences, ${n(r.scripted.renewsSent)} renews sent`,
    "each file ends at its declared end (property held)",
  ]);
for (const p of soakPhases) {
  verdict.push([
    `Soak through the engine, ${p.phase}`,
    `${n(p.files)} files, ${n(p.runs)} up(s)`,
    p.differences?.length
      ? `**${p.differences.length} differences**`
      : `service = declaration exactly; ${n(p.epochsBought)} epochs bought, the ${n(p.epochsLacking ?? p.declaredEpochs)} the declared ends lacked`,
  ]);
}
if (data.failedUp) {
  for (const [k, v] of Object.entries(data.failedUp).filter(([k]) => !["mode", "writtenAt"].includes(k))) {
    verdict.push([
      `Failed up, then the next (${k.replace(/([A-Z])/g, " $1").toLowerCase()})`,
      v.script,
      `${v.epochsBought} epochs bought, the ${v.epochsLacking ?? v.declared} the declared end (${v.declared}) lacked`,
    ]);
  }
}
for (const [service, v] of Object.entries(data.folderSequences ?? {}).filter(([k]) => !["mode", "writtenAt"].includes(k))) {
  verdict.push([
    `Folder sequences (fast-check), ${service}`,
    `${n(v.sequences)} sequences, ${n(v.ups)} ups, ${n(v.kills)} killed`,
    "every content at its latest declared end (property held)",
  ]);
}
if (data.secrets)
  verdict.push([
    "API key in outputs, state, export, config, logs",
    `${data.secrets.placesSearched?.length} places, ${n(data.secrets.bytesSearched)} bytes`,
    data.secrets.leaks?.length ? `**found: ${data.secrets.leaks.join("; ")}**` : "not found anywhere",
  ]);
const crashModes = ["honour", "ignore"].filter((m) => data.crash?.[m]);
for (const m of crashModes) {
  const rows = data.crash[m].rows ?? [];
  const off = rows.filter((row) => row.stored !== row.declared);
  verdict.push([
    `SIGKILL mid-request, service that ${m}s Idempotency-Key`,
    `${rows.length} kill points`,
    off.length
      ? `stored until the declared end at ${rows.length - off.length}; **${off.map((row) => `${row.killedDuring}: stored ${row.stored} epochs for ${row.declared} declared`).join("; ")}**`
      : "stored exactly until the declared end, tags and metadata as declared, at every kill point, with no step but cancel, refresh, up",
  ]);
}
if (data.soak?.placesSearched)
  verdict.push([
    "API key after the soak",
    `${data.soak.placesSearched.length} places`,
    data.soak.keyFoundIn?.length ? `**found in ${data.soak.keyFoundIn.join(", ")}**` : "not found anywhere",
  ]);

push("## What was lost", "");
// Computed from the measurements, never assumed: any violation, difference or leak shows here.
const problems = [
  ...(r.random ? [] : ["the randomized renew sequences did not report"]),
  ...(r.random?.violations ?? []),
  ...(r.random?.gaveUp ? [`${r.random.gaveUp} renew sequences gave up`] : []),
  ...(r.scripted ? [] : ["the scripted renew sequences did not report (the property failed?)"]),
  ...(soakPhases.length ? [] : ["the soak did not report"]),
  ...soakPhases.flatMap((p) => p.differences ?? []),
  ...Object.entries(data.failedUp ?? {})
    .filter(([k]) => !["mode", "writtenAt"].includes(k))
    .filter(([, v]) => v.epochsBought !== (v.epochsLacking ?? v.declared))
    .map(([k, v]) => `${k}: ${v.epochsBought} bought, ${v.epochsLacking ?? v.declared} lacking`),
  ...(data.secrets ? (data.secrets.leaks ?? []) : ["the key search did not report"]),
  ...(data.crash?.honour
    ? (data.crash.honour.rows ?? [])
        .filter((row) => row.stored !== row.declared || !row.tagExact)
        .map((row) => `crash (keys honoured), ${row.killedDuring}: stored ${row.stored} epochs for ${row.declared} declared`)
    : ["the crash tier did not report"]),
  ...(data.soak?.keyFoundIn ?? []),
  ...(data.testRun.exitCode === 0 ? [] : [`the test run failed (exit code ${data.testRun.exitCode})`]),
];
push(
  problems.length
    ? `**Something was lost, leaked or not measured:**\n\n${problems.map((p) => `- ${p}`).join("\n")}`
    : "**Nothing.** Under the faults below, nothing was bought twice, nothing declared was dropped and the key leaked nowhere, in every run of the checks below, against a service that honours Idempotency-Key.",
  "",
  "Purchases converge on a declared end: before buying, the provider reads the file's expiry and buys only what it lacks of the end its declaration requires, so what a killed run bought counts and is not bought again.",
  "",
  ...(data.crash?.ignore
    ? (() => {
        const off = (data.crash.ignore.rows ?? []).filter((row) => row.stored !== row.declared);
        return off.length
          ? [
              `Against a service that **ignores** Idempotency-Key: ${off.map((row) => `${row.killedDuring} (stored ${row.stored} epochs for ${row.declared} declared)`).join("; ")}.`,
              "",
            ]
          : ["Against a service that **ignores** Idempotency-Key, every kill point ended exact too.", ""];
      })()
    : []),
  table(["Check", "Size", "Result"], verdict),
  "",
);

// --- Crashes ---------------------------------------------------------------------------------
if (crashModes.length) {
  push(
    "## Crashes: `pulumi up` SIGKILLed mid-request",
    "",
    "Through the real engine (`test/e2e/properties/crash.e2e.test.ts`): the CLI's process group and every descendant SIGKILLed while the listed requests were in flight, the service having applied the writes and held the answers; then what the CLI said to do, and nothing else: `pulumi cancel` (the stack is locked), `pulumi refresh`, `pulumi up` (one program edited after the kill, before the next `up`). Ends are in epochs from the epoch the file's resource was created in.",
    "",
    table(
      ["Service", "Killed during", "Declared end", "Stored until", "Tag and metadata as declared"],
      crashModes.flatMap((m) =>
        (data.crash[m].rows ?? []).map((row) => [
          `${m}s keys`,
          row.killedDuring,
          n(row.declared),
          row.stored === row.declared ? n(row.stored) : `**${n(row.stored)}**`,
          row.tagExact ? "yes" : "**no**",
        ]),
      ),
    ),
    "",
    ...crashModes.flatMap((m) => [`Runs, service that ${m}s keys: ${(data.crash[m].runs ?? []).join(" → ")}.`, ""]),
  );
}

// --- Hostile responses -----------------------------------------------------------------------
if (data.hostile?.outcomes) {
  push(
    "## Hostile responses",
    "",
    "A service on loopback answering wrongly on purpose (`test/integration/client/hostile-answers.test.ts`): what the provider did with each answer.",
    "",
    table(
      ["Answer", "Outcome"],
      Object.entries(data.hostile.outcomes).map(([k, v]) => [k, v]),
    ),
    "",
  );
}

// --- Faults tried ----------------------------------------------------------------------------
push(
  "## Faults tried",
  "",
  "Each request of the listed routes drew at most one fault at the stated rates (the emulator's seeded generator), or took the scripted one.",
  "",
);
const faultRows = [];
for (const p of r.random?.profiles ?? []) {
  faultRows.push([
    `renew sequences: ${p.profile}`,
    rates(p.faults),
    n(p.requests),
    faults(p.faultsInjected),
    n(p.clientRetries),
    Object.entries(p.outcomes)
      .map(([k, v]) => `${k} ${v}`)
      .join(", "),
  ]);
}
if (r.scripted)
  faultRows.push([
    "renew sequences: scripted per request (fast-check)",
    "renew/get/patch: none, 5xx, reset, apply-then-drop per request",
    n(r.scripted.requests),
    faults(r.scripted.faultsInjected),
    n(r.scripted.clientRetries),
    Object.entries(r.scripted.outcomes)
      .map(([k, v]) => `${k} ${v}`)
      .join(", "),
  ]);
for (const p of soakPhases)
  faultRows.push([
    `soak (engine), ${p.phase}`,
    rates(p.faults ?? data.soak.faults),
    n(p.requests),
    faults(p.faultsInjected),
    "—",
    `${p.runs} up(s), ${p.failedRuns} failed`,
  ]);
for (const [k, v] of Object.entries(data.failedUp ?? {}).filter(([k]) => !["mode", "writtenAt"].includes(k)))
  faultRows.push([`failed up (engine): ${k}`, v.script, "—", "scripted", "—", `${v.firstUp ?? "failed"}; then ${v.secondUp}`]);
const rl = data.rateLimit ?? {};
if (rl.concurrency)
  faultRows.push([
    `concurrency (engine), tuskr:maxConcurrency ${rl.concurrency.maxConcurrency}`,
    `latency ${rl.concurrency.latencyMs} ms on every route`,
    n(rl.concurrency.requests),
    "latency",
    "—",
    `peak open requests ${rl.concurrency.peakOpen}`,
  ]);
for (const key of ["rateLimit", "rateLimitLow"]) {
  const v = rl[key];
  if (v)
    faultRows.push([
      `rate limit (engine), ${v.files} files`,
      `token bucket ${v.requestsPerSecond} requests/s`,
      n(v.requests),
      `429 ${n(v.status429)}`,
      n(v.retriesAfter429),
      `${v.upOk ? "up ok" : "**up failed**"}; shortest wait after a 429: ${n(v.minWaitMs)} ms; waits shorter than asked: ${n(v.waitsShorterThanAsked)}`,
    ]);
}
push(table(["Where", "Faults", "Requests", "Faults injected", "Client retries", "Outcomes"], faultRows), "");
push("Outcomes are per `up` of one resource: `ok`, `partial` (failed, with the work done recorded), `failed` (failed, state unchanged).", "");

// --- Runs ------------------------------------------------------------------------------------
push("## Runs", "");
if (r.random) {
  push(
    `**Randomized renew sequences.** ${n(r.random.sequences)} sequences (fast-check, seed ${r.random.seed}), ${r.random.concurrency} at a time through one shared client (${r.random.maxConcurrency} requests in flight at most), driven like the engine drives the provider: create, then raise \`retentionEpochs\` a few times (sometimes with a tag change, so PATCH and renew share an update); a failed step is re-run from the recorded state (partial failure → its properties; plain failure → the old state), at most ${r.random.maxRunsPerStep} times (30 in the hostile profile). After every step: the emulator's \`epochsBought\` equals what the declared end lacked (files are stored for 5 epochs before they are declared), so each file ends exactly at its declared end.`,
    "",
    table(
      ["Profile", "Sequences", "Steps", "Ups", "Renews sent", "Epochs the declared ends lacked", "Epochs bought", "Gave up", "Time"],
      r.random.profiles.map((p) => [
        p.profile,
        n(p.sequences),
        n(p.steps),
        n(p.ups),
        n(p.renewsSent),
        n(p.epochsLacking ?? p.declaredEpochs),
        n(p.epochsBought),
        n(p.gaveUp),
        secs(p.seconds),
      ]),
    ),
    "",
  );
}
if (r.scripted)
  push(
    `**Scripted renew sequences.** ${n(r.scripted.sequences)} fast-check cases (seed ${r.scripted.seed}): each draws a sequence and, per route, the fault of each successive request; ${n(r.scripted.ups)} ups, ${n(r.scripted.renewsSent)} renews sent. A failure here shrinks to the smallest sequence and fault script.`,
    "",
  );
if (soakPhases.length) {
  push(
    `**Soak through the real engine.** ${n(data.soak.files)} StoredFiles of test/e2e/fixture: created, then updated (tags, metadata keys removed and added, epochs raised) with every route failing ${Math.round(Object.values(data.soak.faults.routes["*"]).reduce((a, b) => a + b, 0) * 100)}% of the time, then updated again under far harsher faults (see the table above) so that ups fail for real. Each time \`pulumi up\` is repeated until it succeeds (at most ${data.soak.maxRuns} runs); then the service is compared with the declaration (tag, name, metadata, epochs bought) and with the stack's state, and a preview must find nothing to do.`,
    "",
    table(
      [
        "Phase",
        "Files",
        "Ups",
        "Failed ups",
        "Time",
        "Requests (get/patch/renew)",
        "Epochs the declared ends lacked",
        "Epochs bought",
        "Differences",
        "Preview after",
      ],
      soakPhases.map((p) => [
        p.phase,
        n(p.files),
        n(p.runs),
        n(p.failedRuns),
        secs(p.seconds),
        `${n(p.requests)} (${n(p.byRoute.get)}/${n(p.byRoute.patch)}/${n(p.byRoute.renew)})`,
        n(p.epochsLacking ?? p.declaredEpochs),
        n(p.epochsBought),
        n(p.differences.length),
        JSON.stringify(p.previewAfter),
      ]),
    ),
    "",
  );
  const errs = soakPhases.flatMap((p) => p.firstErrors ?? []);
  if (errs.length) push("First errors of failed soak runs:", "", ...errs.map((e) => `- ${code(e.slice(0, 240))}`), "");
}

// --- Inputs tried ----------------------------------------------------------------------------
push("## Inputs tried", "");
const props = data.properties?.runs ?? {};
if (Object.keys(props).length) {
  push(
    `**Properties** (fast-check, seed ${data.properties.seed}) of \`check\` (validateInputs) and \`planChange\`:`,
    "",
    table(
      ["Property", "Cases"],
      Object.entries(props).map(([k, v]) => [k, n(v)]),
    ),
    "",
  );
}
const si = data.securityInputs;
if (si) {
  const ids = si.blobIds ?? [];
  const distinct = [...new Set(ids.map((b) => JSON.stringify(b.id)))];
  push(
    `**Untrusted blobIds**: ${distinct.length} distinct ids, through the client (GET, PATCH, renew) and through the provider (check, create, read): each one path segment reaching the emulator as exactly that id, or refused before any request; no other route reached, nothing written.`,
    "",
    distinct
      .map((d) =>
        code(d.replace(/[\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)),
      )
      .join(", "),
    "",
    `**Field values** stored exactly as declared: ${(si.fieldValues ?? []).join("; ")}.`,
    "",
    "**Request bodies** refused with a clear status, changing nothing:",
    "",
    table(
      ["Body", "Status"],
      (si.bodies ?? []).map((b) => [b.body, b.expected]),
    ),
    "",
  );
}
if (data.securityAuth)
  push(
    `**Keys**: near misses and misplaced keys, each answered 401 on every route but health with nothing changed: ${data.securityAuth.nearMisses.join("; ")}. Also checked: ${data.securityAuth.checks.join("; ")}.`,
    "",
  );

// --- Secrets ---------------------------------------------------------------------------------
if (data.secrets) {
  push(
    "## Where the API key was looked for",
    "",
    `A key unique to the test (and an equally unique wrong key) was searched for after these runs: ${data.secrets.runs.map((x) => `${x.run} (${x.ok ? "ok" : "failed"})`).join(", ")}.`,
    "",
    table(
      ["Place", "Key found"],
      data.secrets.placesSearched.map((p) => [p, data.secrets.leaks.some((l) => l.startsWith(p)) ? "**yes**" : "no"]),
    ),
    "",
  );
  const v = data.secrets.verboseEngineLog;
  if (v) {
    push(
      v.keyFound
        ? `Not counted above, because it is Pulumi's log and not this provider's: with \`-v=9 --logtostderr\` the **engine** logs each provider config value it marshals, and the key is among them in clear (${code(v.line)}). Never share logs taken at that verbosity.`
        : "With `-v=9 --logtostderr` the engine's log did not contain the key either.",
      "",
    );
  }
}

// --- Scenarios: one content, one entry; purchases converge -----------------------------------
const vt = data.vitest;
const SCENARIO_FILES = {
  "test/integration/properties/crash-safety.test.ts": "provider ↔ emulator, a new provider per run",
  "test/integration/folder/sequences.test.ts": "StoredFolder ↔ provider ↔ emulator, randomized",
  "test/unit/folder/check-content.test.ts": "StoredFolder, what it declares",
  "test/integration/file/check-one-declaration.test.ts": "check, two StoredFiles on one content",
  "test/integration/file/update-ends.test.ts": "an outsider's review: reads that would move the end",
  "test/unit/folder/check-links.test.ts": "StoredFolder, links and special files",
  "test/integration/file/read-gone.test.ts": "refresh against wrong routes",
  "test/integration/file/create-recorded-is-sent.test.ts": "a file rewritten during up",
  "test/integration/client/hostile-answers.test.ts": "answers checked before they are acted on",
  "test/e2e/properties/inline-preview.e2e.test.ts": "inline Automation API preview",
};
if (vt) {
  const rows = (vt.testResults ?? []).flatMap((f) => {
    const rel = path.relative(repoRoot, f.name);
    const where = SCENARIO_FILES[rel];
    if (!where) return [];
    return (f.assertionResults ?? []).map((t) => [t.title, where, t.status === "passed" ? "held" : `**${t.status}**`]);
  });
  if (rows.length) {
    push(
      "## Scenarios: one content, one entry, purchases converge",
      "",
      'Each scenario is a test of this run. The emulator plays each kind of service: keys honoured or ignored, and a second upload of stored bytes answered with the existing entry, taken as a purchase on it, or refused with 409 naming it (docs/purchases-and-expiry.md, "What depends on the service", says what each means).',
      "",
      table(["Scenario", "Where", "Result"], rows),
      "",
    );
  }
}

// --- Test run --------------------------------------------------------------------------------
push("## The test run", "");
if (vt) {
  const files = (vt.testResults ?? []).map((f) => {
    const rel = path.relative(repoRoot, f.name);
    const tests = f.assertionResults ?? [];
    const secsOf = (f.endTime - f.startTime) / 1000;
    return [
      code(rel),
      n(tests.length),
      n(tests.filter((t) => t.status === "passed").length),
      n(tests.filter((t) => t.status === "failed").length),
      secs(secsOf),
    ];
  });
  push(
    `${n(vt.numTotalTests)} tests in ${n(vt.numTotalTestSuites)} suites: ${n(vt.numPassedTests)} passed, ${n(vt.numFailedTests)} failed. Exit code ${data.testRun.exitCode}, ${secs(data.testRun.seconds)} in all.`,
    "",
    table(["File", "Tests", "Passed", "Failed", "Time"], files),
    "",
  );
} else {
  push(`Exit code ${data.testRun.exitCode}, ${secs(data.testRun.seconds)}.`, "");
}
push("Re-run: `npm run reliability` (full) or `npm run reliability -- --quick`. The measurements behind this report are in `RELIABILITY.json`.", "");

fs.writeFileSync(reportPath, `${out.join("\n").replace(/\n{3,}/g, "\n\n")}`);
const { vitest: _omit, ...kept } = data;
fs.writeFileSync(lastRunPath, `${JSON.stringify(kept, null, 2)}\n`);
console.log(`\nreliability: wrote ${path.relative(repoRoot, reportPath)} and ${path.relative(repoRoot, lastRunPath)} (measurements in ${outDir})`);
process.exit(data.testRun.exitCode);
