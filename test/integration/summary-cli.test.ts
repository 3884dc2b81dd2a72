import { execFileSync, spawnSync } from "node:child_process";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

// Runs the built CLI (dist/), so it lives in the integration tier, which `npm test` builds first.
describe("pulumi-tuskr summary (the CLI)", () => {
  const cli = path.resolve(__dirname, "../../dist/provider/cli.js");
  it("reads the preview on stdin and prints Markdown", () => {
    const out = execFileSync(process.execPath, [cli, "summary"], { input: JSON.stringify({ steps: [] }), encoding: "utf8" });
    expect(out).toMatch(/No StoredFile changes/);
  });
  it("exits 2 with a clear message on bad usage or non-JSON input", () => {
    expect(spawnSync(process.execPath, [cli, "sumary"], { encoding: "utf8" }).status).toBe(2);
    const bad = spawnSync(process.execPath, [cli, "summary"], { input: "not json", encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/pipe in the output of `pulumi preview --json`/);
  });
});
