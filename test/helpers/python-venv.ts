import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";

/**
 * A virtualenv with examples/python's requirements.txt (pulumi, mypy) and a generated Python SDK,
 * as that README makes one (`python3 -m venv venv && venv/bin/pip install -r requirements.txt
 * ./sdks/python`), built once per requirements.txt, SDK and python3, cached outside the
 * repository (~/.cache/pulumi-tuskr/python-venvs): what type-checks Python that is not an
 * example's own program (the docs' blocks).
 */
const cacheRoot = process.env.TUSKR_PULUMI_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "pulumi-tuskr");
const run = promisify(execFile);

/** Every file under `dir`, with its bytes, sorted: what a hash of a tree reads. */
function treeHash(hash: ReturnType<typeof createHash>, dir: string): void {
  for (const f of fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).sort()) {
    const p = path.join(dir, f);
    if (fs.statSync(p).isFile()) hash.update(f).update(fs.readFileSync(p));
  }
}

/** The virtualenv's directory, with requirements.txt's packages and the SDK generated in `sdk` installed. */
export async function cachedVenv(requirements: string, sdk: string): Promise<string> {
  const python = (await run("python3", ["-c", "import sys; print(sys.version)"])).stdout;
  const hash = createHash("sha256").update(python).update(fs.readFileSync(requirements));
  treeHash(hash, sdk);
  const venv = path.join(cacheRoot, "python-venvs", hash.digest("hex").slice(0, 16));
  if (!fs.existsSync(path.join(venv, ".complete"))) {
    fs.rmSync(venv, { recursive: true, force: true });
    fs.mkdirSync(path.dirname(venv), { recursive: true });
    await run("python3", ["-m", "venv", venv]);
    await run(path.join(venv, "bin/pip"), ["install", "--quiet", "--disable-pip-version-check", "-r", requirements, sdk], { maxBuffer: 64 << 20 });
    fs.writeFileSync(path.join(venv, ".complete"), "");
  }
  return venv;
}
