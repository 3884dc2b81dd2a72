// Preloaded by `node bench/run.mjs --profile DIR` or `--split DIR` (NODE_OPTIONS=--require …),
// because Node 20 refuses --cpu-prof in NODE_OPTIONS. In the node processes an engine run starts
// — the program (@pulumi/pulumi/cmd/run), the dynamic provider (cmd/dynamic-provider) and the
// provider plugin (cmd/run-plugin) — it writes into BENCH_CPU_PROF_DIR:
//   - ROLE.PID.cpu.json: the whole process's CPU time (process.cpuUsage(): every thread, GC and
//     compiler threads included, which a profile's samples of the main thread leave out);
//   - with --profile (BENCH_CPU_PROF_SAMPLE=1), ROLE.PID.cpuprofile: the V8 profiler's samples,
//     written when the process ends, including when the engine stops the provider with a signal.
"use strict";
const script = process.argv[1] ?? "";
const role = script.includes("dynamic-provider")
  ? "provider"
  : /cmd[/\\]run-plugin/.test(script)
    ? "plugin"
    : /cmd[/\\]run/.test(script)
      ? "program"
      : undefined;
const dir = process.env.BENCH_CPU_PROF_DIR;
if (role && dir) {
  const fs = require("node:fs");
  const path = require("node:path");
  fs.mkdirSync(dir, { recursive: true });
  // Written whole or not at all (a temp file renamed): a SIGKILL mid-write leaves the last one.
  const writeWhole = (file, text) => {
    fs.writeFileSync(`${file}.part`, text);
    fs.renameSync(`${file}.part`, file);
  };
  const cpuFile = path.join(dir, `${role}.${process.pid}.cpu.json`);
  const recordCpu = () => {
    const { user, system } = process.cpuUsage();
    writeWhole(cpuFile, JSON.stringify({ cpuMs: (user + system) / 1000, aliveMs: process.uptime() * 1000 }));
  };
  let written = false;
  let part = 0;
  let flush = (then) => then?.();
  if (process.env.BENCH_CPU_PROF_SAMPLE === "1") {
    const inspector = require("node:inspector");
    const session = new inspector.Session();
    session.connect();
    session.post("Profiler.enable");
    session.post("Profiler.setSamplingInterval", { interval: 1000 });
    session.post("Profiler.start");
    // An in-thread inspector session answers synchronously, so this works in an exit handler.
    flush = (then) =>
      session.post("Profiler.stop", (error, result) => {
        if (!error && result) {
          const suffix = role === "plugin" ? `.${part++}` : "";
          writeWhole(path.join(dir, `${role}.${process.pid}${suffix}.cpuprofile`), JSON.stringify(result.profile));
        }
        then?.();
      });
    // A provider plugin is stopped with SIGKILL by the language host (Go's exec.CommandContext),
    // which no handler sees: its profile is written in parts, one every half second.
    if (role === "plugin") setInterval(() => written || flush(() => session.post("Profiler.start")), 500).unref();
  }
  // The same SIGKILL: the plugin's CPU is recorded every 50 ms (a few bytes), so at most that is missing.
  if (role === "plugin") setInterval(recordCpu, 50).unref();
  const write = () => {
    if (written) return;
    written = true;
    flush();
    recordCpu();
  };
  process.on("exit", write);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.on(signal, () => {
      write();
      process.exit(0);
    });
  }
}
