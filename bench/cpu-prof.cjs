// Preloaded by `node bench/run.mjs --profile DIR` (NODE_OPTIONS=--require …), because Node 20
// refuses --cpu-prof in NODE_OPTIONS. In the two node processes an engine run starts — the
// program (@pulumi/pulumi/cmd/run) and the dynamic provider (cmd/dynamic-provider) — it starts
// the V8 profiler and writes a .cpuprofile into BENCH_CPU_PROF_DIR when the process ends,
// including when the engine stops the provider with a signal.
"use strict";
const script = process.argv[1] ?? "";
const role = script.includes("dynamic-provider") ? "provider" : /cmd[/\\]run/.test(script) ? "program" : undefined;
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
  const write = () => {
    if (written) return;
    written = true;
    // An in-thread inspector session answers synchronously, so this works in an exit handler.
    session.post("Profiler.stop", (error, result) => {
      if (error || !result) return;
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, `${role}.${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  };
  process.on("exit", write);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.on(signal, () => {
      write();
      process.exit(0);
    });
  }
}
