// Figures and Markdown of `npm run bench`, from the raw measurements bench/run.mjs collects.
// Re-render the report without re-running: node bench/report.mjs [BENCHMARKS.json] > BENCHMARKS.md
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

// The per-file ratios: ≤ 1.2 at first, ≤ 1.15 for the dynamic resource and ≤ 1.1 for the plugin since the folders issue.
export const TARGETS = { ratio: 1.15, pluginRatio: 1.1, stateBytesPerResource: 4096, providerBytes: 2048, linearR2: 0.99 };

const STEP_LABELS = {
  adopt: "`up` from empty (adopt)",
  preview: "`preview`, nothing changed",
  tags: "`up`, every tag changed",
  epochs: "`up`, every retentionEpochs raised",
  refresh: "`refresh`",
  destroy: "`destroy`",
};
const STEP_KEYS = Object.keys(STEP_LABELS);
const FOLDER_LABELS = {
  fcreate: "`up` from empty (every file uploaded)",
  fpreview: "`preview`, nothing changed",
  fedit: "`up`, one file's content edited (a new content: one created, one deleted)",
  fdestroy: "`destroy`",
};
const REQUEST_KINDS = ["get", "patch", "renew", "upload"];
/** A step sent exactly its minimum: every kind, nothing else, every answer 2xx. */
const atMinimum = (s) => REQUEST_KINDS.every((k) => (s.requests[k] ?? 0) === (s.min[k] ?? 0)) && !s.requests.other && s.non2xx === 0;
const UP_STEPS = ["adopt", "tags", "epochs"];
const WRITING_STEPS = ["adopt", "tags", "epochs", "destroy"];

export function stats(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return undefined;
  const mid = Math.floor(v.length / 2);
  const median = v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  return { median, min: v[0], max: v[v.length - 1], count: v.length };
}

/** Least squares y = a + b·x, with R². */
function fit(points) {
  if (points.length < 2) return undefined;
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const slope = sxy / sxx;
  const intercept = my - slope * mx;
  const ssTot = points.reduce((s, [, y]) => s + (y - my) ** 2, 0);
  const ssRes = points.reduce((s, [x, y]) => s + (y - (intercept + slope * x)) ** 2, 0);
  return { slopeMsPerResource: slope, interceptMs: intercept, r2: ssTot === 0 ? 1 : 1 - ssRes / ssTot, points };
}

/** Per N and step: each variant's wall and CPU times, the ratios, and the requests sent. */
function summarizeRuns(allRuns) {
  const ns = [...new Set(allRuns.map((r) => r.n))].sort((a, b) => a - b);
  const variants = [...new Set(allRuns.map((r) => r.variant))];
  const runsOf = (variant, n) => allRuns.filter((r) => r.variant === variant && r.n === n).sort((a, b) => a.rep - b.rep);
  const stepOf = (run, key) => run.steps.find((s) => s.step === key);
  const steps = [];
  for (const n of ns) {
    for (const key of STEP_KEYS) {
      const row = { n, step: key, wall: {}, cpu: {}, contention: {} };
      for (const variant of variants) {
        const rs = runsOf(variant, n)
          .map((r) => stepOf(r, key))
          .filter(Boolean);
        row.wall[variant] = stats(rs.map((s) => s.cliMs));
        row.cpu[variant] = stats(rs.map((s) => s.pulumiCpuMs));
        row.contention[variant] = stats(rs.map((s) => s.contention));
      }
      const sf = runsOf("storedfile", n);
      const noop = runsOf("noop", n);
      if (row.wall.plugin && row.wall.noop) row.pluginRatio = row.wall.plugin.median / row.wall.noop.median;
      if (row.wall.storedfile && row.wall.noop) {
        row.ratio = row.wall.storedfile.median / row.wall.noop.median;
        const paired = stats(sf.map((r, i) => (noop[i] ? stepOf(r, key)?.cliMs / stepOf(noop[i], key)?.cliMs : NaN)));
        if (paired) row.pairedRatio = { min: paired.min, max: paired.max };
        if (row.cpu.storedfile && row.cpu.noop) row.cpuRatio = row.cpu.storedfile.median / row.cpu.noop.median;
      }
      // Requests are checked for both kinds of StoredFile: the dynamic resource and the plugin's.
      const ours = [...sf, ...runsOf("plugin", n)];
      if (ours.length) {
        const seen = ours.map((r) => stepOf(r, key)).filter(Boolean);
        row.min = seen[0]?.min;
        row.requests = seen.map((s) => s.requests);
        row.non2xx = seen.reduce((t, s) => t + s.non2xx, 0);
        row.requestsAtMinimum = seen.every(atMinimum);
      }
      steps.push(row);
    }
  }
  const linearity = {};
  for (const variant of variants) {
    linearity[variant] = {};
    for (const key of STEP_KEYS) {
      const points = ns.map((n) => [n, steps.find((s) => s.n === n && s.step === key)?.wall[variant]?.median]).filter(([, y]) => Number.isFinite(y));
      linearity[variant][key] = fit(points);
    }
  }
  return { ns, variants, steps, linearity, runsOf };
}

/**
 * Folder runs (and the latency run's): per scenario and step, ours next to the floor, the
 * requests, and — with latency — the least time the requests alone take: minimum requests ×
 * latency / the client's concurrency.
 */
function summarizeFolders(runs, concurrency) {
  const rows = [];
  const key = (r) => `${r.n}x${r.bytes ?? 0}@${r.latencyMs ?? 0}`;
  const scenarios = [...new Map(runs.map((r) => [key(r), r])).values()];
  for (const sc of scenarios) {
    const pair = runs.filter((r) => key(r) === key(sc));
    const ours = pair.find((r) => r.variant === "folder" || r.variant === "storedfile");
    const floor = pair.find((r) => r.variant === "noopfolder" || r.variant === "noop");
    for (const step of ours?.steps ?? []) {
      const f = floor?.steps.find((x) => x.step === step.step);
      const minRequests = REQUEST_KINDS.reduce((t, k) => t + (step.min[k] ?? 0), 0);
      rows.push({
        n: sc.n,
        bytes: sc.bytes,
        latencyMs: sc.latencyMs,
        variant: ours.variant,
        step: step.step,
        wallMs: step.cliMs,
        floorMs: f?.cliMs,
        ratio: f?.cliMs ? step.cliMs / f.cliMs : undefined,
        requests: step.requests,
        non2xx: step.non2xx,
        min: step.min,
        exact: atMinimum(step),
        boundMs: sc.latencyMs ? (minRequests * sc.latencyMs) / concurrency : undefined,
        checkpointBytes: step.checkpointBytes,
      });
    }
  }
  return rows;
}

export function summarize(results) {
  const main = summarizeRuns(results.runs);
  const { ns, variants, steps, linearity, runsOf } = main;
  const concurrency = results.settings.clientConcurrency ?? 8;
  const folders = summarizeFolders(results.folderRuns ?? [], concurrency);
  const latency = summarizeFolders(results.latencyRuns ?? [], concurrency);
  const requestMisses = [
    ...steps
      .filter((s) => s.requests && !s.requestsAtMinimum)
      .map(
        (s) => `N=${s.n} ${s.step}: sent ${s.requests.map(fmtRequests).join(" / ")}${s.non2xx ? ` (${s.non2xx} non-2xx)` : ""}, minimum ${fmtRequests(s.min)}`,
      ),
    ...[...folders, ...latency]
      .filter((r) => !r.exact)
      .map(
        (r) =>
          `${r.variant} N=${r.n}${r.bytes ? `×${r.bytes} B` : ""}${r.latencyMs ? ` (${r.latencyMs} ms latency)` : ""} ${r.step}: sent ${fmtRequests(r.requests)}${r.non2xx ? ` (${r.non2xx} non-2xx)` : ""}, minimum ${fmtRequests(r.min)}`,
      ),
  ];

  const largest = (run) => Math.max(...run.steps.filter((s) => s.step !== "destroy").map((s) => s.checkpointBytes));
  const state = [];
  for (const variant of variants) {
    for (const n of ns) {
      const runs = runsOf(variant, n);
      state.push({
        variant,
        n,
        // The largest checkpoint any step left (destroy leaves an empty stack), over N.
        checkpointBytesPerResource: stats(runs.map((r) => largest(r) / n)),
        gzipBytesPerResource: stats(runs.map((r) => r.checkpointGzipBytes / n)),
        providerBytes: runs[0]?.providerBytes,
        providerCopiesPerResource: runs[0]?.providerCopiesPerResource,
        resourceBytes: runs[0]?.resourceBytes,
        resourceBreakdown: runs[0]?.resourceBreakdown,
      });
    }
  }
  const marginal = {};
  if (ns.length >= 2) {
    for (const variant of variants) {
      const size = (n) => stats(runsOf(variant, n).map(largest))?.median;
      marginal[variant] = (size(ns.at(-1)) - size(ns[0])) / (ns.at(-1) - ns[0]);
    }
  }

  const load = [];
  for (const route of ["get", "patch", "renew"]) {
    for (const c of [...new Set((results.load ?? []).map((l) => l.concurrency))]) {
      const rows = results.load.filter((l) => l.route === route && l.concurrency === c);
      if (!rows.length) continue;
      load.push({
        route,
        concurrency: c,
        rps: stats(rows.map((l) => l.rps)),
        p50Ms: stats(rows.map((l) => l.p50Ms)),
        p99Ms: stats(rows.map((l) => l.p99Ms)),
        requests: stats(rows.map((l) => l.requests)),
        allOk: rows.every((l) => l.ok === l.requests),
        stoppedBy: [...new Set(rows.map((l) => l.stoppedBy))].join("/"),
      });
    }
  }

  const diagRuns = results.diagnostics?.skipCheckpoints ?? [];
  const diagnostic = diagRuns.length ? summarizeRuns(diagRuns) : undefined;

  // Targets, judged at the largest N measured (the brief names N = 500).
  const nMax = ns.at(-1);
  const targets = [];
  if (nMax !== undefined && variants.includes("storedfile") && variants.includes("noop")) {
    const at = steps.filter((s) => s.n === nMax);
    // Each front door's ratio to the floor: the step's field and its target share a name.
    for (const [id, label] of [
      ["ratio", "StoredFile"],
      ["pluginRatio", "plugin StoredFile"],
    ]) {
      if (id === "pluginRatio" && !variants.includes("plugin")) continue;
      targets.push({
        id,
        target: `wall-time ratio ${label} / floor ≤ ${TARGETS[id]} for every step at N=${nMax}`,
        measured: at.map((s) => `${s.step} ${s[id]?.toFixed(2)}`).join(", "),
        met: at.every((s) => s[id] !== undefined && s[id] <= TARGETS[id]),
        failing: at.filter((s) => !(s[id] <= TARGETS[id])).map((s) => s.step),
      });
    }
  }
  if (variants.includes("storedfile")) {
    targets.push({
      id: "requests",
      target: "requests per step = the minimum, exactly (every N, every repetition)",
      measured: requestMisses.length
        ? `${requestMisses.length} cell(s) off: ${requestMisses.join("; ")}`
        : `all ${steps.filter((s) => s.requests).length + folders.length + latency.length} step × N cells exact (folders and the latency run included)`,
      met: requestMisses.length === 0,
    });
    const st = state.find((s) => s.variant === "storedfile" && s.n === nMax);
    const floor = state.find((s) => s.variant === "noop" && s.n === nMax);
    targets.push({
      id: "state",
      target: `state per resource ≤ ${TARGETS.stateBytesPerResource} B (checkpoint bytes / N at N=${nMax})`,
      measured: st?.checkpointBytesPerResource
        ? `${fmtBytes(st.checkpointBytesPerResource.median)}${floor?.checkpointBytesPerResource ? ` (floor: ${fmtBytes(floor.checkpointBytesPerResource.median)})` : ""}`
        : "n/a",
      met: (st?.checkpointBytesPerResource?.median ?? Infinity) <= TARGETS.stateBytesPerResource,
    });
    targets.push({
      id: "provider",
      target: `serialized provider (\`__provider\`) ≤ ${TARGETS.providerBytes} B`,
      measured:
        st?.providerBytes !== undefined
          ? `${fmtBytes(st.providerBytes)}${floor?.providerBytes ? ` (floor's, required by name too: ${fmtBytes(floor.providerBytes)})` : ""}`
          : "n/a",
      met: (st?.providerBytes ?? Infinity) <= TARGETS.providerBytes,
    });
    const linearTarget = (id, lin, fitNs, what) => ({
      id,
      target: `\`up\` time linear in N${what} (least squares over N = ${fitNs.join(", ")}, R² ≥ ${TARGETS.linearR2})`,
      measured: lin
        .map(
          ([k, f, g]) =>
            `${k}: ${f.slopeMsPerResource.toFixed(1)} ms/resource, R² ${f.r2.toFixed(3)}${g ? ` (floor ${g.slopeMsPerResource.toFixed(1)} ms, R² ${g.r2.toFixed(3)})` : ""}`,
        )
        .join("; "),
      met: lin.every(([, f]) => f.r2 >= TARGETS.linearR2),
    });
    if (ns.length >= 3) {
      const lin = UP_STEPS.map((k) => [k, linearity.storedfile[k], linearity.noop?.[k]]).filter(([, f]) => f);
      targets.push(linearTarget("linear", lin, ns, ", as the engine runs by default (its file backend rewrites the whole checkpoint after each resource)"));
    }
    // The same fit with the engine's per-resource checkpoint writes off: what is left is the
    // provider's work and the engine's other per-resource work; both should be linear.
    if (diagnostic && diagnostic.ns.length >= 3) {
      const lin = UP_STEPS.map((k) => [k, diagnostic.linearity.storedfile?.[k], diagnostic.linearity.noop?.[k]]).filter(([, f]) => f);
      if (lin.length)
        targets.push(
          linearTarget(
            "linearOwn",
            lin,
            diagnostic.ns,
            " without the engine's per-resource checkpoint writes (`PULUMI_SKIP_CHECKPOINTS=true`, one repetition)",
          ),
        );
    }
  }
  return {
    ns,
    variants,
    steps,
    requestMisses,
    state,
    marginalBytesPerResource: marginal,
    linearity,
    load,
    folders,
    latency,
    diagnostic: diagnostic && { ns: diagnostic.ns, steps: diagnostic.steps, linearity: diagnostic.linearity },
    targets,
  };
}

const fmtRequests = (r) => {
  const parts = [`${r.get ?? 0} GET`, `${r.patch ?? 0} PATCH`, `${r.renew ?? 0} renew`];
  if (r.upload) parts.push(`${r.upload} upload`);
  if (r.other) parts.push(`${r.other} other`);
  return parts.join(" + ");
};
const sec = (ms) => (ms / 1000).toFixed(2);
const fmtTime = (s) => (s ? (s.count > 1 ? `${sec(s.median)} s (${sec(s.min)}–${sec(s.max)})` : `${sec(s.median)} s`) : "—");
const fmtBytes = (b) => (b === undefined || !Number.isFinite(b) ? "—" : `${Math.round(b).toLocaleString("en-US")} B`);
const pct = (s) => (s ? `${Math.round(s.median * 100)}%` : "—");

/** The report as Markdown; `findings` (hand-written analysis) is appended when given. */
export function render(results, { findings } = {}) {
  const s = results.summary ?? summarize(results);
  const m = results.machine;
  const lines = [];
  const p = (...l) => lines.push(...l);
  const reps = Object.entries(results.settings.reps)
    .map(([n, r]) => `N=${n}: ${r}`)
    .join(", ");
  p(
    "# Benchmarks",
    "",
    `Generated by \`${results.generatedBy}\` (bench/run.mjs; re-render with \`node bench/report.mjs > BENCHMARKS.md\`). ` +
      "Do not edit by hand: the analysis at the end is bench/FINDINGS.md.",
    "",
    `**Machine:** ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB RAM, ${m.os}; Node ${m.node}; Pulumi CLI ${m.pulumi} ` +
      `(@pulumi/pulumi ${m.pulumiNodejsSdk}); commit ${m.commit}${m.dirty ? " with uncommitted changes in provider/ or emulator/" : ""}; ` +
      `${m.date}. The whole run took ${(results.wallSeconds / 60).toFixed(1)} min.`,
    "",
    "**How:** one emulator, in memory, on loopback; each repetition is a fresh stack (its own temp `file://` backend and " +
      "PULUMI_HOME) over N freshly uploaded files, driven through the Automation API. A time is the `pulumi <op>` process " +
      "alone (what you wait for at the CLI, without the Automation API's follow-up `stack output`/`history`): median of the " +
      `repetitions, min–max in brackets. Repetitions: ${reps}. In each repetition the variants' stacks run in lockstep (step 1 ` +
      "of each, then step 2 of each, …), and which variant goes first alternates between repetitions" +
      `${results.settings.warmup ? "; one unrecorded warm-up repetition at N=10 comes first" : ""}. ` +
      `Engine parallelism: ${typeof results.settings.parallel === "number" ? `\`--parallel ${results.settings.parallel}\`` : `not set, i.e. the CLI's ${results.settings.parallel}`}. ` +
      "Programs are type-checked by the engine, as users' are (every variant alike). " +
      "**The floor** is the same program with each StoredFile replaced by a `pulumi.dynamic.Resource` with the same inputs " +
      "whose provider does nothing (create returns an id, diff/update compare inputs, read returns the state): same " +
      "engine, backend, config and number of resources. Its provider is a package of its own (bench/noop-provider), so " +
      'Pulumi serializes it as `require("tuskr-bench-noop")`, as it does ours: the two states are alike in size, and ' +
      "the ratio isolates pulumi-tuskr's work.",
    "",
    "**CPU and contention:** each step also records the CPU time of the whole pulumi process tree (engine, language host, " +
      "program, provider; from the reaped children's rusage) and how much of the machine *other* processes used meanwhile " +
      "(from /proc/stat, minus ours). When others load the machine, wall times stretch and so do ratios: read them with the " +
      "contention column. Before each step the runner waits (≤ " +
      `${results.settings.quietGate.maxMsPerStep / 1000} s, ≤ ${results.settings.quietGate.budgetMs / 60000} min in all) for a quiet moment.`,
    "",
  );

  if (s.targets.length) {
    p("## Targets", "", "| Target | Measured | Met |", "|---|---|---|");
    for (const t of s.targets) p(`| ${t.target} | ${t.measured} | ${t.met ? "yes" : "**no**"} |`);
    p("");
  }

  const timeTable = (steps, ns, { cpu = true } = {}) => {
    for (const n of ns) {
      const rows = steps.filter((r) => r.n === n);
      const plugin = rows.some((r) => r.wall.plugin);
      p(`### N = ${n}`, "");
      p(
        `| Step | StoredFile | Floor (no-op) | Ratio (paired min–max) |${cpu ? " CPU ratio | Others' load (SF / floor) |" : ""}${plugin ? " Plugin | Plugin / floor |" : ""}`,
        `|---|---|---|---|${cpu ? "---|---|" : ""}${plugin ? "---|---|" : ""}`,
      );
      for (const row of rows) {
        const ratio =
          row.ratio === undefined
            ? "—"
            : `${row.ratio.toFixed(2)}${row.pairedRatio && row.wall.storedfile?.count > 1 ? ` (${row.pairedRatio.min.toFixed(2)}–${row.pairedRatio.max.toFixed(2)})` : ""}`;
        const extra = cpu ? ` ${row.cpuRatio?.toFixed(2) ?? "—"} | ${pct(row.contention.storedfile)} / ${pct(row.contention.noop)} |` : "";
        const pluginCells = plugin ? ` ${fmtTime(row.wall.plugin)} | ${row.pluginRatio?.toFixed(2) ?? "—"} |` : "";
        p(`| ${STEP_LABELS[row.step]} | ${fmtTime(row.wall.storedfile)} | ${fmtTime(row.wall.noop)} | ${ratio} |${extra}${pluginCells}`);
      }
      p("");
    }
  };
  p(
    "## Wall time per step: StoredFile next to the no-op floor",
    "",
    "StoredFile = the TypeScript dynamic resource. Plugin = the same files declared as `tuskr:index:StoredFile`, served by " +
      "the tuskr provider plugin (PulumiPlugin.yaml) from the same TypeScript program.",
    "",
  );
  timeTable(s.steps, s.ns);

  if (s.steps.some((r) => r.requests)) {
    p(
      "## Requests per step (StoredFile, dynamic and plugin), from the emulator's log",
      "",
      "The minimum used: **adopt** = N GET (each file must be read once), and 1 GET more, once per stack: the first renew's " +
        "record read to learn the service's epoch, since the stack has no `tuskr:epochSeconds` and no answer has shown it (the " +
        "renews are 1 epoch each, so that renew is the one that learns it; a first purchase of more epochs is 1 renew more too) + what the declaration requires — here the " +
        "declared tag (`v1`) and metadata differ from the upload's and the name is equal, so one PATCH per file (every " +
        "changed field in one body), and `retentionEpochs: 11` on files stored for 10 epochs, so one renew per file; **preview**, nothing changed = 0; **every tag " +
        "changed** = N PATCH; **every retentionEpochs raised** = N GET + N renews (a purchase reads the expiry it buys from); **refresh** = N GET; **destroy** = 0 (blobs " +
        "cannot be deleted through the API). Any other request, or any non-2xx answer, also counts as a miss.",
      "",
      "| N | Step | Sent (every repetition) | Minimum | Exact |",
      "|---|---|---|---|---|",
    );
    for (const row of s.steps.filter((r) => r.requests)) {
      const sent = [...new Set(row.requests.map(fmtRequests))].join(" / ");
      p(
        `| ${row.n} | ${STEP_LABELS[row.step]} | ${sent}${row.non2xx ? ` (${row.non2xx} non-2xx)` : ""} | ${fmtRequests(row.min)} | ${row.requestsAtMinimum ? "yes" : "**no**"} |`,
      );
    }
    p("");
  }

  p(
    "## State",
    "",
    "Checkpoint bytes / N = the stack's checkpoint file in the `file://` backend (`.pulumi/stacks/<project>/<stack>.json`, the " +
      "largest any step left) divided by N; it includes the stack's fixed part (Stack resource, default provider with the " +
      "encrypted config, secrets provider), which weighs most at N=10. One resource = that resource's JSON in the " +
      "checkpoint. Gzipped = that checkpoint gzipped, as the file backend stores it with `PULUMI_SELF_MANAGED_STATE_GZIP=true`. " +
      "`__provider` = the serialized provider; the engine stores it in each resource's inputs *and* outputs.",
    "",
    "| Variant | N | Checkpoint bytes / N | Gzipped / N | One resource | `__provider` | Copies per resource |",
    "|---|---|---|---|---|---|---|",
  );
  const variantName = (v) => ({ noop: "floor (no-op)", plugin: "StoredFile (plugin)" })[v] ?? "StoredFile";
  for (const st of s.state) {
    const c = st.checkpointBytesPerResource;
    const spread = c && c.count > 1 ? ` (${Math.round(c.min)}–${Math.round(c.max)})` : "";
    p(
      `| ${variantName(st.variant)} | ${st.n} | ${c ? `${fmtBytes(c.median)}${spread}` : "—"} | ${fmtBytes(st.gzipBytesPerResource?.median)} | ` +
        `${fmtBytes(st.resourceBytes)} | ${fmtBytes(st.providerBytes)} | ${st.providerCopiesPerResource ?? "—"} |`,
    );
  }
  const breakdowns = s.state.filter((st) => st.n === s.ns.at(-1) && st.resourceBreakdown);
  if (breakdowns.length) {
    p(
      "",
      `What one resource's record is made of (N=${s.ns.at(-1)}, after the last \`up\`; JSON bytes as stored, so the provider's text is escaped): ` +
        "both copies of `__provider`; the engine's own fields (URN, type, id, parent, provider reference, property " +
        "dependencies, timestamps); the stack trace and source position the engine records at registration; the inputs " +
        "and outputs without `__provider`.",
      "",
      "| Variant | Total | `__provider` × 2 | Engine fields | Stack trace | Inputs | Outputs |",
      "|---|---|---|---|---|---|---|",
    );
    for (const st of breakdowns) {
      const b = st.resourceBreakdown;
      p(
        `| ${variantName(st.variant)} | ${fmtBytes(st.resourceBytes)} | ${fmtBytes(b.providerCopies)} | ${fmtBytes(b.engineRecord)} | ${fmtBytes(b.stackTrace)} | ${fmtBytes(b.inputs)} | ${fmtBytes(b.outputs)} |`,
      );
    }
  }
  if (Object.keys(s.marginalBytesPerResource).length) {
    p(
      "",
      `Marginal checkpoint bytes per added resource (N=${s.ns[0]} → N=${s.ns.at(-1)}): ` +
        Object.entries(s.marginalBytesPerResource)
          .map(([v, b]) => `${variantName(v)} ${fmtBytes(b)}`)
          .join(", ") +
        ".",
    );
  }
  p("");

  const stepLabel = (k) => FOLDER_LABELS[k] ?? STEP_LABELS[k];
  const size = (b) => (b >= 1 << 20 ? `${b / (1 << 20)} MiB` : `${b / 1024} KiB`);
  if (s.folders?.length) {
    p(
      "## Folders: StoredFolder next to the no-op floor",
      "",
      "A directory of N files of one size, kept by a `StoredFolder` (tag and one epoch declared, carried by the upload; " +
        "no metadata) and, as the floor, by N no-op resources with the same inputs (the `source` asset included) under a " +
        "component of their own. One repetition per scenario, the two stacks in lockstep; the emulator in memory. " +
        "Minimum: create = N uploads, each read back with one GET before its blobId is recorded; preview = 0; one file " +
        "edited = 1 upload and its GET (the old file is left as it is); destroy = 0.",
      "",
      "| N × size | Step | StoredFolder | Floor | Ratio | Requests sent | Minimum | Exact |",
      "|---|---|---|---|---|---|---|---|",
    );
    for (const r of s.folders) {
      p(
        `| ${r.n} × ${size(r.bytes)} | ${stepLabel(r.step)} | ${sec(r.wallMs)} s | ${r.floorMs !== undefined ? `${sec(r.floorMs)} s` : "—"} | ${r.ratio?.toFixed(2) ?? "—"} | ` +
          `${fmtRequests(r.requests)}${r.non2xx ? ` (${r.non2xx} non-2xx)` : ""} | ${fmtRequests(r.min)} | ${r.exact ? "yes" : "**no**"} |`,
      );
    }
    p("");
  }
  if (s.latency?.length) {
    const ms = s.latency[0].latencyMs;
    p(
      `## With ${ms} ms of latency on every request`,
      "",
      `The emulator delays every \`/v1\` request by ${ms} ms (a fault setting), at N=${s.latency[0].n}. The bound is the least ` +
        `time the minimum requests alone can take: requests × ${ms} ms / ${results.settings.clientConcurrency ?? 8} (the provider's ` +
        "requests in flight at most, `tuskr:maxConcurrency`). The floor sends nothing, so ours minus the floor is roughly the " +
        "time spent waiting on the service.",
      "",
      "| Resources | Step | Ours | Floor | Ours − floor | Bound | Requests (exact?) |",
      "|---|---|---|---|---|---|---|",
    );
    for (const r of s.latency) {
      const diff = r.floorMs !== undefined ? `${sec(r.wallMs - r.floorMs)} s` : "—";
      p(
        `| ${r.variant === "folder" ? `StoredFolder, ${r.n} × ${size(r.bytes)}` : `StoredFile × ${r.n}`} | ${stepLabel(r.step)} | ${sec(r.wallMs)} s | ` +
          `${r.floorMs !== undefined ? `${sec(r.floorMs)} s` : "—"} | ${diff} | ${sec(r.boundMs)} s | ${fmtRequests(r.requests)} (${r.exact ? "yes" : "**no**"}) |`,
      );
    }
    p("");
  }

  if (s.ns.length >= 2) {
    p(
      "## Time against N (least squares over the medians)",
      "",
      "| Step | StoredFile: per resource + fixed, R² | Floor: per resource + fixed, R² |",
      "|---|---|---|",
    );
    const cell = (f) => (f ? `${f.slopeMsPerResource.toFixed(1)} ms + ${sec(f.interceptMs)} s, R² ${f.r2.toFixed(3)}` : "—");
    for (const key of STEP_KEYS) p(`| ${STEP_LABELS[key]} | ${cell(s.linearity.storedfile?.[key])} | ${cell(s.linearity.noop?.[key])} |`);
    p("");
  }

  if (s.diagnostic) {
    p(
      "## Diagnostic: the same steps without the engine's intermediate checkpoint writes",
      "",
      "One repetition per variant with `PULUMI_SKIP_CHECKPOINTS=true` (an engine setting that writes the checkpoint only at " +
        "the end of an operation; *not* a recommendation — an interrupted `up` then loses its record). The difference from " +
        "the tables above is the `file://` backend rewriting the whole checkpoint after each resource operation, which makes " +
        "writing steps quadratic in N.",
      "",
    );
    timeTable(s.diagnostic.steps, s.diagnostic.ns);
    if (s.diagnostic.ns.length >= 2) {
      const lo = s.diagnostic.ns[0];
      const hi = s.diagnostic.ns.at(-1);
      p(`Per added resource between N=${lo} and N=${hi}, without checkpoint writes → with them (main tables):`, "");
      p("| Step | StoredFile | Floor |", "|---|---|---|");
      for (const key of WRITING_STEPS) {
        const per = (steps, v) => {
          const a = steps.find((r) => r.n === lo && r.step === key)?.wall[v]?.median;
          const b = steps.find((r) => r.n === hi && r.step === key)?.wall[v]?.median;
          return Number.isFinite(a) && Number.isFinite(b) ? ((b - a) / (hi - lo)).toFixed(1) : "—";
        };
        p(
          `| ${STEP_LABELS[key]} | ${per(s.diagnostic.steps, "storedfile")} → ${per(s.steps, "storedfile")} ms | ${per(s.diagnostic.steps, "noop")} → ${per(s.steps, "noop")} ms |`,
        );
      }
      p("");
    }
  }

  if (s.load.length) {
    const l = results.settings.load;
    p(
      "## The emulator alone",
      "",
      "Requests per second from a second process (bench/load.mjs: node:http, keep-alive, loopback only), each run bounded to " +
        `${l.maxRequests} requests or ${l.maxSeconds} s, ${l.reps} repetition(s); the emulator in memory, request log on, no ` +
        "faults. Each PATCH changes the tag; each renew buys 1 epoch with its own Idempotency-Key. On " +
        `${m.cpus} cores the load generator and the emulator share the CPU.`,
      "",
      "| Route | In flight | Requests/s | p50 latency | p99 latency | All 2xx |",
      "|---|---|---|---|---|---|",
    );
    for (const r of s.load) {
      const f = (x) => (x.count > 1 ? `${x.median.toFixed(0)} (${x.min.toFixed(0)}–${x.max.toFixed(0)})` : x.median.toFixed(0));
      p(
        `| ${r.route === "renew" ? "POST renew" : r.route.toUpperCase()} | ${r.concurrency} | ${f(r.rps)} | ${r.p50Ms.median.toFixed(2)} ms | ${r.p99Ms.median.toFixed(2)} ms | ${r.allOk ? "yes" : "**no**"} |`,
      );
    }
    p("");
  }

  if (results.problems?.length) p("## Problems", "", ...results.problems.map((x) => `- ${x}`), "");
  p(
    `Phases: ${Object.entries(results.phasesMs)
      .map(([k, v]) => `${k} ${(v / 60000).toFixed(1)} min`)
      .join(", ")}. ` + "Raw figures (every repetition, CPU, contention, engine change summaries): BENCHMARKS.json.",
    "",
  );
  if (findings) p(findings.trim(), "");
  return `${lines.join("\n")}\n`;
}

// A time not measured (undefined, or NaN stored as null) prints as a dash.
const seconds = (ms) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : "—");
const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b ? (a / b).toFixed(2) : "—");
const sent = (r) =>
  REQUEST_KINDS.filter((k) => r[k])
    .map((k) => `${r[k]} ${k}`)
    .join(" + ") || "0";

/** The "Folders" section, from bench/folders.mjs's results (BENCHMARKS-folders.json): a run of its own. */
/** The runs a median was taken of, as the report lists them. */
/** Each run's ratio, where two steps ran in turn (the first `up` and the plain script). */
const pairs = (ups, plains) =>
  ups && plains && ups.length > 1 && ups.length === plains.length ? ` Run by run, in turn: ${ups.map((u, i) => ratio(u, plains[i])).join(", ")}.` : "";
const runs = (samples) => (samples && samples.length > 1 ? ` (median of ${samples.map(seconds).join(", ")})` : "");

const mib = (x) => (Number.isFinite(x) ? `${Math.round(x)} MiB` : "—");
const count = (n) => n.toLocaleString("en");
/** The targets of the one-resource folder (issue 46): each ratio and its bound. */
const FOLDER_TARGETS = { firstUp: 1.1, preview: 2, change: 1.2, peakMiB: 512 };
const meets = (value, bound) => (Number.isFinite(value) ? `${value.toFixed(2)}${value <= bound ? "" : " **(over)**"}` : "—");

/** One scenario's figures against the targets, by the Automation API call (`ms`) and by the `pulumi` process (`opMs`). */
function folderRatios(sc) {
  const step = (k) => sc.steps.find((s) => s.step === k);
  const floor = sc.emptyPreviewMs + sc.hashMs;
  const by = (field) => ({
    firstUp: step("create")?.[field] / sc.plainMs,
    preview: step("preview")?.[field] / floor,
    edit: step("edit")?.[field] / step("preview")?.[field],
    add: step("add")?.[field] / step("preview")?.[field],
  });
  return { wall: by("ms"), op: by("opMs"), peakMiB: Math.max(...sc.steps.map((s) => s.providerPeakMiB ?? 0)) };
}

export function renderFolders(f) {
  const lines = [];
  const p = (...l) => lines.push(...l);
  p(
    "## Folders: StoredFolder as one resource",
    "",
    `Generated by \`npm run bench:folders\` (bench/folders.mjs), a run of its own: commit ${f.commit}, ${f.date}, Node ${f.node}, ${f.minutes} min. ` +
      "`StoredFolder` with `oneResource: true` (the TypeScript dynamic resource over the same folder core as the plugin's `tuskr:index:StoredFolder`), declared with `parts` as docs/stored-folder.md advises (the column `parts`), " +
      `one emulator in memory on loopback, a fresh stack per folder. **Wall** is the Automation API call; **\`pulumi\` process** is the \`pulumi <op>\` process inside it alone (what a user waits for at the command line; an \`up\`'s call adds the API's follow-up \`stack output\` and \`stack history\`, and a preview's call reads the engine's event log back). One repetition, except the first \`up\` and the plain script (run in turn, each \`up\` on a stack of its own), the unchanged preview, the empty folder's preview, one file edited and one added: each the median of the runs listed with it (each edit or add run changes a file of its own). **Plain script** = the same uploads sent by fetch + FormData, ${f.concurrency} at a time (the client's bound), to the same emulator, from a process of its own (bench/plain-upload.mjs), timed from its start to its exit; **with read-back**, each upload followed by a GET of its blobId, as the provider's gate reads every upload back; **bare**, the same two requests by Node's own HTTP client (\`http.request\`) with the body written by hand, each answer checked by its status alone (the provider sends through undici, which costs less CPU a request). **Empty folder** = the preview of the same program over an empty folder. **Hashing** = walking and hashing the folder once, in one process (what a preview must do for each file). **Provider peak RSS** = the highest VmHWM of the provider process during the step (the dynamic provider's; the plugin's for the plugin's folder), of the bench's own project. **Checkpoint** = the bytes of the stack's state file after the step (the file backend's), per file: the first \`up\`'s less the empty folder's.`,
    "",
    "**Requests** are every request the emulator answered during the step (its counts by route and status, not its log, which keeps the latest 10,000), and the run fails when a step's differ from the minimum: a first `up` makes one upload and one read-back GET per content; an unchanged preview nothing; an edit or an added file one upload and its GET; a destroy nothing (the files keep their periods). `tuskr:epochSeconds` is left unset, as on a user's first stack. The bench declares `retentionEpochs: 1`, which each upload carries: no purchase depends on the epoch's length, so the length probe (one renew and one GET more, once per stack, made when a purchase would count in an unknown epoch) does not arise.",
    "",
  );
  const sized = f.scenarios.filter((sc) => sc.bytes === 1024);
  if (sized.length > 0) {
    const w = (x, bound) => meets(x, bound);
    p(
      "### Against the targets, side by side",
      "",
      `Targets: first \`up\` ≤ ${FOLDER_TARGETS.firstUp} × the plain script; unchanged preview ≤ ${FOLDER_TARGETS.preview} × (the empty folder's preview + hashing); one file edited or added ≤ ${FOLDER_TARGETS.change} × the unchanged preview; provider peak RSS ≤ ${FOLDER_TARGETS.peakMiB} MiB in every step. Each ratio by the \`pulumi\` process, which the targets are judged by (what a pipeline's \`pulumi up\` waits for), then (in brackets) by the Automation API call, whose \`up\` adds the follow-up \`stack output\` and \`stack history\` that its preview does not run.`,
      "",
      "| 1 KiB files | `parts` | first `up` / plain script | unchanged preview (empty folder's; hashing) | / (empty + hashing) | one file edited / added | / unchanged preview | provider peak RSS (highest step) | checkpoint per file |",
      "|---|---|---|---|---|---|---|---|---|",
    );
    for (const sc of sized) {
      const step = (k) => sc.steps.find((s) => s.step === k);
      const r = folderRatios(sc);
      p(
        `| ${count(sc.n)} | ${sc.parts ?? 1} | ${seconds(step("create")?.opMs)} / ${seconds(sc.plainMs)} = ${w(r.op.firstUp, FOLDER_TARGETS.firstUp)} (${w(r.wall.firstUp, FOLDER_TARGETS.firstUp)}) | ${seconds(step("preview")?.opMs)} (${seconds(sc.emptyPreviewMs)}; ${seconds(sc.hashMs)}) | ${w(r.op.preview, FOLDER_TARGETS.preview)} (${w(r.wall.preview, FOLDER_TARGETS.preview)}) | ${seconds(step("edit")?.opMs)} / ${seconds(step("add")?.opMs)} | ${w(r.op.edit, FOLDER_TARGETS.change)} / ${w(r.op.add, FOLDER_TARGETS.change)} (${w(r.wall.edit, FOLDER_TARGETS.change)} / ${w(r.wall.add, FOLDER_TARGETS.change)}) | ${mib(r.peakMiB)}${r.peakMiB > FOLDER_TARGETS.peakMiB ? " **(over)**" : ""} | ${sc.checkpointBytesPerFile === undefined ? "—" : `${sc.checkpointBytesPerFile} B`} |`,
      );
    }
    p("");
  }
  if (f.memoryGrowth) {
    p(
      `Provider peak RSS against the number of files (least squares over ${sized.map((sc) => count(sc.n)).join(", ")} × 1 KiB), per step: ` +
        Object.entries(f.memoryGrowth)
          .map(([step, g]) => `${FOLDER_BENCH_LABELS[step]} ${g.kibPerFile} KiB per file (${g.miBAtNone} MiB at none)`)
          .join("; ") +
        ".",
      "",
    );
  }
  for (const sc of f.scenarios) {
    const size = sc.bytes >= 1048576 ? `${sc.bytes / 1048576} MiB` : `${sc.bytes / 1024} KiB`;
    const step = (k) => sc.steps.find((s) => s.step === k);
    p(
      `### ${count(sc.n)} files × ${size}${(sc.parts ?? 1) > 1 ? `, in ${sc.parts} parts` : ""}`,
      "",
      "| Step | Wall | `pulumi` process | Requests sent | Minimum | Exact | Provider peak RSS | Checkpoint |",
      "|---|---|---|---|---|---|---|---|",
    );
    for (const s of sc.steps)
      p(
        `| ${FOLDER_BENCH_LABELS[s.step]} | ${seconds(s.ms)} | ${seconds(s.opMs)} | ${sent(s.requests)}${s.other ? ` + ${s.other} other` : ""} | ${sent(s.min)} | ${s.exact ? "yes" : "**no**"} | ${s.providerPeakMiB} MiB | ${s.checkpointBytes === undefined ? "—" : `${(s.checkpointBytes / 1048576).toFixed(1)} MiB`} |`,
      );
    const create = step("create")?.ms;
    const preview = step("preview")?.ms;
    const floor = sc.emptyPreviewMs + sc.hashMs;
    p(
      "",
      `- First \`up\` / plain script, by the \`pulumi\` process: ${seconds(step("create")?.opMs)}${runs(step("create")?.opSamplesMs)} / ${seconds(sc.plainMs)}${runs(sc.plainSamplesMs)} = **${ratio(step("create")?.opMs, sc.plainMs)}** (target ≤ ${FOLDER_TARGETS.firstUp}; by the API call ${ratio(create, sc.plainMs)}).${pairs(step("create")?.opSamplesMs, sc.plainSamplesMs)}`,
      ...(sc.plainReadBackMs !== undefined
        ? [
            `- The same script reading each upload back: ${seconds(sc.plainReadBackMs)}; the first \`up\` by the \`pulumi\` process is ${ratio(step("create")?.opMs, sc.plainReadBackMs)} × that.` +
              (sc.bareReadBackMs !== undefined
                ? ` By Node's bare HTTP client, each answer checked by its status alone: ${seconds(sc.bareReadBackMs)}; the first \`up\` is ${ratio(step("create")?.opMs, sc.bareReadBackMs)} × that.`
                : ""),
          ]
        : []),
      `- Unchanged \`preview\` / (the same program's preview over an empty folder + hashing): ${seconds(preview)}${runs(step("preview")?.samplesMs)} / (${seconds(sc.emptyPreviewMs)}${runs(sc.emptyPreviewSamplesMs)} + ${seconds(sc.hashMs)}) = **${ratio(preview, floor)}** (target ≤ ${FOLDER_TARGETS.preview}).`,
      ...(step("preview")?.cliMs !== undefined && sc.emptyPreviewCliMs !== undefined
        ? [
            `- The same two previews as \`pulumi preview\` on the command line (no event log for the API to read back): ${seconds(step("preview").cliMs)}${runs(step("preview").cliSamplesMs)} / (${seconds(sc.emptyPreviewCliMs)}${runs(sc.emptyPreviewCliSamplesMs)} + ${seconds(sc.hashMs)}) = **${ratio(step("preview").cliMs, sc.emptyPreviewCliMs + sc.hashMs)}**.`,
          ]
        : []),
      `- One file edited / added, next to the unchanged preview, by the \`pulumi\` processes: ${seconds(step("edit")?.opMs)}${runs(step("edit")?.opSamplesMs)} / ${seconds(step("add")?.opMs)}${runs(step("add")?.opSamplesMs)} against ${seconds(step("preview")?.opMs)}${runs(step("preview")?.opSamplesMs)} = **${ratio(step("edit")?.opMs, step("preview")?.opMs)} / ${ratio(step("add")?.opMs, step("preview")?.opMs)}** (target ≤ ${FOLDER_TARGETS.change}; by the API call ${ratio(step("edit")?.ms, preview)} / ${ratio(step("add")?.ms, preview)}).`,
      `- Hashing the folder: ${seconds(sc.hashMs)}, ${preview ? Math.round((100 * sc.hashMs) / preview) : "—"}% of the unchanged preview.`,
      ...(sc.checkpointBytesPerFile !== undefined ? [`- The checkpoint grows by ${sc.checkpointBytesPerFile} bytes per file.`] : []),
      "",
    );
  }
  if (f.compare) {
    const c = f.compare;
    p(
      `### Next to the default StoredFolder (one StoredFile per content), ${c.n.toLocaleString("en")} files × 1 KiB`,
      "",
      "Target: every step ≥ 5 × faster. Wall (the Automation API call) and, in brackets, the `pulumi` process alone." +
        (c.pluginfolder
          ? " The one resource through each front door: the TypeScript dynamic resource (`oneResource: true`) and the provider plugin's `tuskr:index:StoredFolder` (what YAML, Python, Go and .NET programs declare; here from the same TypeScript program)."
          : ""),
      "",
    );
    const op = (x) => (!Number.isFinite(x?.opMs) ? "" : ` (${seconds(x.opMs)})`);
    const faster = (one, other) => `**${ratio(other?.ms, one?.ms)} ×** | ${!Number.isFinite(one?.opMs) ? "—" : `**${ratio(other?.opMs, one.opMs)} ×**`}`;
    if (c.pluginfolder) {
      p(
        "| Step | One resource (dynamic) | One resource (plugin) | One StoredFile per content | Dynamic: faster by (wall) | (`pulumi` process) | Plugin: faster by (wall) | (`pulumi` process) |",
        "|---|---|---|---|---|---|---|---|",
      );
      for (const s of c.onefolder) {
        const plugin = c.pluginfolder.find((x) => x.step === s.step);
        const other = c.folder.find((x) => x.step === s.step);
        p(
          `| ${FOLDER_BENCH_LABELS[s.step]} | ${seconds(s.ms)}${op(s)} | ${seconds(plugin?.ms)}${op(plugin)} | ${seconds(other?.ms)}${op(other)} | ${faster(s, other)} | ${faster(plugin, other)} |`,
        );
      }
    } else {
      p("| Step | One resource | One StoredFile per content | Faster by (wall) | Faster by (`pulumi` process) |", "|---|---|---|---|---|");
      for (const s of c.onefolder) {
        const other = c.folder.find((x) => x.step === s.step);
        p(`| ${FOLDER_BENCH_LABELS[s.step]} | ${seconds(s.ms)}${op(s)} | ${seconds(other?.ms)}${op(other)} | ${faster(s, other)} |`);
      }
    }
    p("");
  }
  if (f.problems?.length) p("**Problems:**", "", ...f.problems.map((x) => `- ${x}`), "");
  return lines.join("\n");
}
const FOLDER_BENCH_LABELS = {
  create: "`up` from empty (every file uploaded)",
  preview: "`preview`, nothing changed",
  edit: "`up`, one file edited",
  add: "`up`, one file added",
  destroy: "`destroy`",
};

/** BENCHMARKS.md as the files beside it make it: the main run, the folders' run if there is one, the findings. */
export function renderFile(root) {
  const results = JSON.parse(fs.readFileSync(path.join(root, "BENCHMARKS.json"), "utf8"));
  const findings = path.join(root, "bench", "FINDINGS.md");
  const folders = path.join(root, "BENCHMARKS-folders.json");
  const main = render({ ...results, summary: summarize(results) }, { findings: fs.existsSync(findings) ? fs.readFileSync(findings, "utf8") : undefined });
  return fs.existsSync(folders) ? `${main}\n${renderFolders(JSON.parse(fs.readFileSync(folders, "utf8")))}\n` : main;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  process.stdout.write(renderFile(path.join(here, "..")));
}
