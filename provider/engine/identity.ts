import * as fs from "node:fs";
import * as path from "node:path";

// The package's identity sits below both the plugin (its version, told to the engine) and the
// client (its user agent), so neither borrows it from the other.

/** The package's own name and version, read from its package.json (source and dist alike). */
function readPackageInfo(): { name: string; version: string } {
  let dir = __dirname;
  for (let i = 0; i < 5; i++) {
    const candidate = path.join(dir, "package.json");
    if (fs.existsSync(candidate)) {
      const pkg = JSON.parse(fs.readFileSync(candidate, "utf8")) as { name?: string; version?: string };
      if (pkg.name === "pulumi-tuskr") return { name: pkg.name, version: pkg.version ?? "0.0.0" };
    }
    dir = path.dirname(dir);
  }
  return { name: "pulumi-tuskr", version: "0.0.0" };
}

const PACKAGE = readPackageInfo();
/** What the client sends as `User-Agent` with every request. */
export const USER_AGENT = `${PACKAGE.name}/${PACKAGE.version} (node ${process.version})`;
/** The plugin's version: its plugin info, its package schema, the version its resources ask for. */
export const PACKAGE_VERSION = PACKAGE.version;
