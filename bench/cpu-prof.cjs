// Preloaded by `node bench/run.mjs --profile DIR` (NODE_OPTIONS=--require …), because Node 20
// refuses --cpu-prof in NODE_OPTIONS. In the node processes an engine run starts — the program
// (@pulumi/pulumi/cmd/run), the dynamic provider (cmd/dynamic-provider) and the provider plugin
// (cmd/run-plugin) — it starts the V8 profiler and writes a .cpuprofile into BENCH_CPU_PROF_DIR
// when the process ends, including when the engine stops the provider with a signal.
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
  const inspector = require("node:inspector");
  const session = new inspector.Session();
  session.connect();
  session.post("Profiler.enable");
  session.post("Profiler.setSamplingInterval", { interval: 1000 });
  session.post("Profiler.start");
  let written = false;
  let part = 0;
  // An in-thread inspector session answers synchronously, so this works in an exit handler.
  const flush = (then) =>
    session.post("Profiler.stop", (error, result) => {
      if (!error && result) {
        fs.mkdirSync(dir, { recursive: true });
        const suffix = role === "plugin" ? `.${part++}` : "";
        fs.writeFileSync(path.join(dir, `${role}.${process.pid}${suffix}.cpuprofile`), JSON.stringify(result.profile));
      }
      then?.();
    });
  const write = () => {
    if (written) return;
    written = true;
    flush();
  };
  // A provider plugin is stopped with SIGKILL by the language host (Go's exec.CommandContext),
  // which no handler sees: its profile is written in parts, one every half second.
  if (role === "plugin") setInterval(() => written || flush(() => session.post("Profiler.start")), 500).unref();
  process.on("exit", write);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.on(signal, () => {
      write();
      process.exit(0);
    });
  }
}
