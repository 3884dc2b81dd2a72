import { execFile, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";

/**
 * Shared Pulumi state backends on loopback, as a team's runners share one: a private PostgreSQL
 * cluster (Debian's package) and an S3-compatible server (moto). Each is started in a temp
 * directory and stopped, directory and all, by `close()`. `.ci/run` installs moto and checks the
 * PostgreSQL binaries.
 */
export interface StateBackend {
  kind: "postgres" | "s3";
  /** PULUMI_BACKEND_URL. */
  url: string;
  /** What every runner needs besides the URL (S3 credentials). */
  env: Record<string, string>;
  close(): Promise<void>;
}

const run = promisify(execFile);

/** A port free now on loopback (the servers below cannot pick their own and tell it). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The newest Debian PostgreSQL's binaries (`/usr/lib/postgresql/<major>/bin`). */
function postgresBin(): string {
  const root = "/usr/lib/postgresql";
  const majors = fs.existsSync(root) ? fs.readdirSync(root).filter((d) => fs.existsSync(path.join(root, d, "bin", "initdb"))) : [];
  const newest = majors.sort((a, b) => Number(b) - Number(a))[0];
  if (newest === undefined) throw new Error(`no PostgreSQL under ${root}: install Debian's postgresql-15 (apt-get install postgresql-15)`);
  return path.join(root, newest, "bin");
}

/**
 * A PostgreSQL cluster of its own: trust authentication, loopback only, its socket in its
 * directory. initdb refuses root, so as root the cluster belongs to the `postgres` user.
 */
export async function startPostgres(): Promise<StateBackend> {
  const bin = postgresBin();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-postgres-"));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number((await run("id", ["-u", "postgres"])).stdout);
    const gid = Number((await run("id", ["-g", "postgres"])).stdout);
    fs.chownSync(dir, uid, gid);
  }
  const pg = (tool: string, args: string[]) =>
    asRoot ? run("runuser", ["-u", "postgres", "--", path.join(bin, tool), ...args]) : run(path.join(bin, tool), args);
  const data = path.join(dir, "data");
  const port = await freePort();
  const stop = () => pg("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).catch(() => undefined);
  try {
    await pg("initdb", ["--no-sync", "-A", "trust", "-U", "postgres", "-D", data]);
    await pg("pg_ctl", ["-w", "-D", data, "-l", path.join(dir, "log"), "-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, "start"]);
  } catch (e) {
    await stop();
    fs.rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    kind: "postgres",
    url: `postgres://postgres@127.0.0.1:${port}/postgres?sslmode=disable`,
    env: {},
    async close() {
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** moto's S3 server with one bucket, and the dummy credentials the AWS SDK wants. */
export async function startS3(): Promise<StateBackend> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-s3-"));
  const port = await freePort();
  const log = fs.openSync(path.join(dir, "log"), "w");
  const server = spawn("python3", ["-m", "moto.server", "-H", "127.0.0.1", "-p", String(port)], { cwd: dir, detached: true, stdio: ["ignore", log, log] });
  fs.closeSync(log);
  let failed: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    server.on("exit", () => resolve());
    server.on("error", (e) => {
      failed = e;
      resolve();
    });
  });
  const close = async () => {
    try {
      process.kill(-server.pid!, "SIGKILL");
    } catch {
      /* already gone */
    }
    await exited;
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const endpoint = `http://127.0.0.1:${port}`;
  const bucket = "pulumi-state";
  try {
    for (let deadline = Date.now() + 30_000; ; ) {
      if (failed !== undefined || server.exitCode !== null)
        throw new Error(
          `moto did not start (${failed?.message ?? `exit ${server.exitCode}`}): ${fs.readFileSync(path.join(dir, "log"), "utf8")}; .ci/run installs it: pip install 'moto[server]'`,
        );
      const up = await fetch(`${endpoint}/moto-api/`).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      if (Date.now() > deadline) throw new Error(`moto did not answer on ${endpoint} within 30 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const created = await fetch(`${endpoint}/${bucket}`, { method: "PUT" });
    if (!created.ok) throw new Error(`creating bucket ${bucket}: ${created.status} ${await created.text()}`);
  } catch (e) {
    await close();
    throw e;
  }
  return {
    kind: "s3",
    url: `s3://${bucket}?endpoint=127.0.0.1:${port}&disableSSL=true&s3ForcePathStyle=true&region=us-east-1`,
    // moto sends no response checksums: the AWS SDK would warn on every read (docs/gitops.md).
    env: { AWS_ACCESS_KEY_ID: "test", AWS_SECRET_ACCESS_KEY: "test", AWS_REGION: "us-east-1", AWS_RESPONSE_CHECKSUM_VALIDATION: "when_required" },
    close,
  };
}
