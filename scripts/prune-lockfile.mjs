// The registry mirror our machines reach lacks some platform-only optional packages (rollup's
// android/darwin/... builds). npm then writes a lockfile that names them as optional
// dependencies without entries, and `npm ci` refuses it ("Missing: … from lock file").
// This drops the names that have no entry, so `npm ci` works here and anywhere else.
// Run after changing dependencies: `npm run lock`.
import fs from "node:fs";

const file = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(fs.readFileSync(file, "utf8"));
const dropped = [];
for (const [where, pkg] of Object.entries(lock.packages)) {
  for (const dep of Object.keys(pkg.optionalDependencies ?? {})) {
    const nested = where ? `${where}/node_modules/${dep}` : `node_modules/${dep}`;
    if (!lock.packages[nested] && !lock.packages[`node_modules/${dep}`]) {
      delete pkg.optionalDependencies[dep];
      dropped.push(dep);
    }
  }
}
fs.writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`prune-lockfile: dropped ${dropped.length} optional dependencies with no lockfile entry`);
