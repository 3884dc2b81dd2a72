#!/usr/bin/env node
// Summarizes what `node bench/run.mjs --profile DIR` (or `--split DIR`) leaves for each step:
//   - each node process's whole CPU (ROLE.PID.cpu.json: every thread) and the step's pulumi process
//     tree (step.json), so the engine and its language hosts are the tree minus the node processes;
//   - with --profile, the V8 profiles (ROLE.PID.cpuprofile, the main thread's samples): per role
//     (the program under the language host, the dynamic provider, the provider plugin), its busy
//     time and where that time went by package and function. The engine's own profile, with
//     --profile, is ENGINE.PID.cpu (`go tool pprof -top`).
//
//   node bench/profile.mjs DIR [--top 15]
import * as fs from "node:fs";
import * as path from "node:path";

const dir = process.argv[2];
const topAt = process.argv.indexOf("--top");
const top = topAt > 0 ? Number(process.argv[topAt + 1]) : 15;
if (!Number.isInteger(top) || top < 1) throw new Error(`--top: ${process.argv[topAt + 1]} is not a count`);
if (!dir) throw new Error("usage: node bench/profile.mjs DIR [--top N]");

const files = [];
const walk = (d) => {
  for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (e.name.endsWith(".cpuprofile")) files.push(p);
    else if (e.name.endsWith(".cpu.json") || e.name === "step.json") cpuFiles.push(p);
  }
};
const cpuFiles = [];
walk(dir);

/** Which package a script URL belongs to; "(pulumi-tuskr)" for our code wherever it is installed. */
function owner(url) {
  if (!url) return "(native/idle)";
  if (url.startsWith("node:")) return "node:*";
  const m = /.*node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  return url.includes("/bench/project/") || url.includes("/project/index.ts") ? "(bench program)" : "(other)";
}

// What pulumi-tuskr brings that the floor does not load at all.
const OUR_DEPENDENCIES = new Set([
  "pulumi-tuskr",
  "axios",
  "zod",
  "form-data",
  "follow-redirects",
  "proxy-from-env",
  "combined-stream",
  "asynckit",
  "mime-types",
  "mime-db",
  "delayed-stream",
]);
const ROLES = { program: "program", provider: "dynamic provider", plugin: "provider plugin" };
/** A file's JSON, or undefined (said once) when it cannot be read: one bad file does not lose the summary. */
const readJson = (file) => {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    console.error(`skipped ${file}: ${e.message}`);
    return undefined;
  }
};
const byGroup = new Map();
for (const file of files) {
  const prof = readJson(file);
  if (!prof || !Array.isArray(prof.nodes) || !Array.isArray(prof.samples) || !Array.isArray(prof.timeDeltas)) continue;
  const nodes = new Map(prof.nodes.map((n) => [n.id, n]));
  const dt = new Map();
  for (let i = 0; i < prof.samples.length; i++) dt.set(prof.samples[i], (dt.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0));
  // bench/cpu-prof.cjs names each profile by the role of its process.
  const role = ROLES[path.basename(file).split(".")[0]] ?? "other";
  if (role === "other") continue;
  const parent = new Map();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  /** Inside our code: a pulumi-tuskr frame on the stack, or a package only we load. */
  const ours = (id) => {
    if (OUR_DEPENDENCIES.has(owner(nodes.get(id).callFrame.url))) return true;
    for (let at = id; at !== undefined; at = parent.get(at)) if (nodes.get(at).callFrame.url.includes("/pulumi-tuskr/")) return true;
    return false;
  };
  let busy = 0;
  let oursUs = 0;
  const perPackage = new Map();
  const perFunction = new Map();
  for (const [id, us] of dt) {
    const n = nodes.get(id);
    const name = n.callFrame.functionName;
    if (name === "(idle)") continue;
    busy += us;
    if (ours(id)) oursUs += us;
    const pkg = name === "(garbage collector)" ? "(gc)" : name === "(program)" ? "(native)" : owner(n.callFrame.url);
    perPackage.set(pkg, (perPackage.get(pkg) ?? 0) + us);
    const fn = `${name || "(anonymous)"} ${n.callFrame.url.replace(/.*node_modules\//, "")}:${n.callFrame.lineNumber + 1}`;
    perFunction.set(fn, (perFunction.get(fn) ?? 0) + us);
  }
  const group = path.relative(dir, path.dirname(file));
  const g = byGroup.get(group) ?? [];
  g.push({
    file: path.basename(file),
    pid: path.basename(file).split(".")[1],
    role,
    wallMs: (prof.endTime - prof.startTime) / 1000,
    busyMs: busy / 1000,
    oursMs: oursUs / 1000,
    perPackage,
    perFunction,
  });
  byGroup.set(group, g);
}

/** Per step: each role's whole-process CPU and the step's process tree. */
const cpuByGroup = new Map();
for (const file of cpuFiles) {
  const group = path.relative(dir, path.dirname(file));
  const g = cpuByGroup.get(group) ?? { roles: new Map() };
  const data = readJson(file);
  cpuByGroup.set(group, g);
  // A process whose record is unreadable: the tree minus the others would credit it to the engine.
  const isStep = path.basename(file) === "step.json";
  if (!data || (!isStep && !Number.isFinite(data.cpuMs))) {
    if (data) console.error(`skipped ${file}: no CPU time in it`);
    g.incomplete = true;
    continue;
  }
  if (isStep) g.step = data;
  else {
    const role = ROLES[path.basename(file).split(".")[0]] ?? "other";
    const r = g.roles.get(role) ?? { cpuMs: 0, aliveMs: 0, processes: 0 };
    r.cpuMs += data.cpuMs;
    r.aliveMs += Number(data.aliveMs) || 0;
    r.processes++;
    g.roles.set(role, r);
  }
  cpuByGroup.set(group, g);
}

const ms = (us) => `${Math.round(us / 1000)} ms`;
for (const group of [...new Set([...byGroup.keys(), ...cpuByGroup.keys()])].sort()) {
  const procs = byGroup.get(group) ?? [];
  console.log(`\n## ${group}`);
  const cpu = cpuByGroup.get(group);
  if (cpu) {
    const parts = [...cpu.roles].map(([role, r]) => `${role} ${Math.round(r.cpuMs)} ms (${r.processes} process(es), ${Math.round(r.aliveMs)} ms alive)`);
    const nodeMs = [...cpu.roles.values()].reduce((sum, r) => sum + r.cpuMs, 0);
    const tree = Number.isFinite(cpu.step?.pulumiCpuMs) ? `the pulumi process tree ${cpu.step.pulumiCpuMs} ms in ${cpu.step.cliMs} ms` : undefined;
    if (tree && cpu.roles.size > 0 && !cpu.incomplete)
      parts.push(`engine and language hosts (the tree minus these) ${Math.round(cpu.step.pulumiCpuMs - nodeMs)} ms`);
    if (cpu.incomplete) parts.push("a record unreadable (above): no engine share");
    console.log(`\nCPU, whole processes: ${[tree, ...parts].filter(Boolean).join("; ") || "none recorded"}`);
  }
  for (const role of Object.values(ROLES)) {
    const ps = procs.filter((p) => p.role === role);
    if (!ps.length) continue;
    const busy = ps.reduce((s, p) => s + p.busyMs, 0);
    const wall = ps.reduce((s, p) => s + p.wallMs, 0);
    const oursMs = ps.reduce((s, p) => s + p.oursMs, 0);
    console.log(
      `\n${role}: ${new Set(ps.map((p) => p.pid)).size} process(es) (${ps.length} profile(s)), busy ${Math.round(busy)} ms of ${Math.round(wall)} ms alive; in pulumi-tuskr and its dependencies: ${Math.round(oursMs)} ms`,
    );
    const merge = (key) => {
      const m = new Map();
      for (const p of ps) for (const [k, v] of p[key]) m.set(k, (m.get(k) ?? 0) + v);
      return [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
    };
    console.log(
      "  by package:",
      merge("perPackage")
        .map(([k, v]) => `${k} ${ms(v)}`)
        .join(", "),
    );
    console.log("  top functions (self time):");
    for (const [k, v] of merge("perFunction")) console.log(`    ${ms(v).padStart(8)}  ${k}`);
  }
}
