import { DEFAULT_EPOCH_SECONDS } from "../api";
import * as fs from "node:fs";
import * as path from "node:path";
import { EpochClock } from "./clock";
import type { FileEntry, IdempotencyRecord } from "./store";
import { MemoryFileStore } from "./store-memory";

/**
 * The store on disk: everything but the request log in `<dataDir>/state.json`, blob bytes in
 * `<dataDir>/blobs/<blobId>`. Every change is durably written (temp file, fsync, rename, fsync
 * of the directory) before the request that made it is answered; writes are queued so an older
 * snapshot never lands after a newer one.
 */
export const STATE_FILE = "state.json";
const STATE_FORMAT = "tuskr-emulator-state";
const STATE_VERSION = 1;

interface PersistedState {
  format: typeof STATE_FORMAT;
  version: typeof STATE_VERSION;
  genesisMs: number;
  epochSeconds: number;
  advancedEpochs: number;
  counters: { uploads: number };
  files: FileEntry[];
  idempotency: IdempotencyRecord[];
}

export class DiskFileStore extends MemoryFileStore {
  override readonly dataDir: string;
  /** Writes run one after another; this is the tail of that queue. */
  private writeQueue: Promise<void> = Promise.resolve();
  private tempCounter = 0;

  private constructor(dataDir: string, clock: EpochClock) {
    super(clock);
    this.dataDir = dataDir;
  }

  static async openDir(dir: string, options: { epochSeconds?: number; now?: () => number } = {}): Promise<DiskFileStore> {
    const now = options.now ?? Date.now;
    const dataDir = path.resolve(dir);
    await fs.promises.mkdir(path.join(dataDir, "blobs"), { recursive: true });
    const statePath = path.join(dataDir, STATE_FILE);
    const loaded = await readState(statePath);
    if (loaded === undefined) {
      // Blobs without a state file: the state was lost, not never written. Starting empty would
      // overwrite what is left with a state that knows none of these files.
      const blobs = (await fs.promises.readdir(path.join(dataDir, "blobs"))).filter((name) => !name.startsWith("."));
      if (blobs.length > 0) {
        throw new Error(
          `tuskr emulator: ${dataDir} holds ${blobs.length} blob(s) in blobs/ but no ${STATE_FILE}. The emulator will not ` +
            `start over it and lose track of them; restore ${STATE_FILE}, or move blobs/ away, or use another data directory.`,
        );
      }
      const clock = new EpochClock({ genesisMs: now(), epochSeconds: options.epochSeconds ?? DEFAULT_EPOCH_SECONDS, advancedEpochs: 0, now });
      const store = new DiskFileStore(dataDir, clock);
      await store.persist(); // the genesis is fixed from the first start on
      return store;
    }
    if (options.epochSeconds !== undefined && options.epochSeconds !== loaded.epochSeconds) {
      throw new Error(
        `tuskr emulator: ${statePath} was written with epochSeconds=${loaded.epochSeconds}, ` +
          `but epochSeconds=${options.epochSeconds} was asked for. Changing the epoch length would renumber ` +
          "every stored epoch; start with the same value, or use another data directory.",
      );
    }
    const clock = new EpochClock({ genesisMs: loaded.genesisMs, epochSeconds: loaded.epochSeconds, advancedEpochs: loaded.advancedEpochs, now });
    const store = new DiskFileStore(dataDir, clock);
    for (const file of loaded.files) store.files.set(file.blobId, file);
    for (const record of loaded.idempotency) store.idempotencyRecords.set(record.key, record);
    store.uploads = loaded.counters.uploads;
    return store;
  }

  /** blobIds of uploads are base64url, safe as file names. */
  override async putBlob(blobId: string, content: Buffer): Promise<void> {
    const blobs = path.join(this.dataDir, "blobs");
    if (fs.existsSync(path.join(blobs, blobId))) return; // content-addressed: same id, same bytes
    await this.writeAtomic(blobs, blobId, content);
  }

  override async readBlob(blobId: string): Promise<Buffer | undefined> {
    try {
      return await fs.promises.readFile(path.join(this.dataDir, "blobs", blobId));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  override async reset(): Promise<void> {
    await super.reset();
    const blobs = path.join(this.dataDir, "blobs");
    for (const name of await fs.promises.readdir(blobs)) await fs.promises.rm(path.join(blobs, name), { force: true });
  }

  /** Writes the state as it is at the moment of the call; settles once it is on disk. */
  override persist(): Promise<void> {
    const snapshot = JSON.stringify(this.snapshot(), null, 2);
    const write = this.writeQueue.then(() => this.writeAtomic(this.dataDir, STATE_FILE, snapshot));
    this.writeQueue = write.catch(() => undefined);
    return write;
  }

  override async flush(): Promise<void> {
    await this.writeQueue;
  }

  private snapshot(): PersistedState {
    return {
      format: STATE_FORMAT,
      version: STATE_VERSION,
      genesisMs: this.clock.genesisMs,
      epochSeconds: this.clock.epochSeconds,
      advancedEpochs: this.clock.advancedEpochs,
      counters: { uploads: this.uploads },
      files: this.allFiles(),
      idempotency: [...this.idempotencyRecords.values()],
    };
  }

  /** Temp file in the same directory, fsync, rename over the target, fsync the directory. */
  private async writeAtomic(dir: string, name: string, data: string | Buffer): Promise<void> {
    this.tempCounter += 1;
    const temp = path.join(dir, `.${name}.tmp-${process.pid}-${this.tempCounter}`);
    try {
      const handle = await fs.promises.open(temp, "w", 0o600);
      try {
        await handle.writeFile(data);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fs.promises.rename(temp, path.join(dir, name));
    } catch (error) {
      await fs.promises.rm(temp, { force: true }).catch(() => undefined);
      throw error;
    }
    await fsyncDirectory(dir);
  }
}

async function fsyncDirectory(dir: string): Promise<void> {
  let handle: fs.promises.FileHandle | undefined;
  try {
    handle = await fs.promises.open(dir, "r");
    await handle.sync();
  } catch (error) {
    // Some platforms (Windows) cannot open or sync a directory; the rename is all they offer.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EISDIR" && code !== "EPERM" && code !== "EINVAL" && code !== "EBADF") throw error;
  } finally {
    await handle?.close();
  }
}

/**
 * Reads state.json. Only that file counts: a temp file left by a crash is never read. A file that
 * cannot be understood stops the start, because starting empty would lose the data in it.
 */
async function readState(statePath: string): Promise<PersistedState | undefined> {
  let text: string;
  try {
    text = await fs.promises.readFile(statePath, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const fail = (why: string): never => {
    throw new Error(
      `tuskr emulator: cannot load ${statePath}: ${why}. The emulator will not start over it and lose its ` +
        "contents; fix or move the file away, or use another data directory.",
    );
  };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return fail(`not valid JSON (${(error as Error).message})`);
  }
  const problem = stateProblem(raw);
  if (problem !== undefined) fail(problem);
  return raw as PersistedState;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const isInt = (value: unknown): boolean => Number.isSafeInteger(value);
const isStringOrNull = (value: unknown): boolean => value === null || typeof value === "string";

function stateProblem(raw: unknown): string | undefined {
  if (!isObject(raw)) return "the top level is not an object";
  if (raw.format !== STATE_FORMAT) return `"format" is not "${STATE_FORMAT}"`;
  if (raw.version !== STATE_VERSION) return `"version" ${JSON.stringify(raw.version)} is not supported (expected ${STATE_VERSION})`;
  if (typeof raw.genesisMs !== "number" || !Number.isFinite(raw.genesisMs)) return '"genesisMs" is not a number';
  if (typeof raw.epochSeconds !== "number" || !(raw.epochSeconds > 0)) return '"epochSeconds" is not a positive number';
  if (!isInt(raw.advancedEpochs)) return '"advancedEpochs" is not an integer';
  if (!isObject(raw.counters) || !isInt(raw.counters.uploads)) return '"counters.uploads" is not an integer';
  if (!Array.isArray(raw.files)) return '"files" is not an array';
  for (const [i, f] of raw.files.entries()) {
    const where = `files[${i}]`;
    if (!isObject(f)) return `${where} is not an object`;
    for (const key of ["id", "blobId", "mimeType"] as const) {
      if (typeof f[key] !== "string") return `${where}.${key} is not a string`;
    }
    for (const key of ["name", "tag", "category"] as const) {
      if (!isStringOrNull(f[key])) return `${where}.${key} is not a string or null`;
    }
    if (!isObject(f.metadata)) return `${where}.metadata is not an object`;
    for (const key of ["size", "startEpoch", "endEpoch", "uploadEpochs", "epochsBought", "renewCount", "updateCount"] as const) {
      if (!isInt(f[key])) return `${where}.${key} is not an integer`;
    }
    if (typeof f.createdAtVirtualMs !== "number") return `${where}.createdAtVirtualMs is not a number`;
  }
  if (!Array.isArray(raw.idempotency)) return '"idempotency" is not an array';
  for (const [i, r] of raw.idempotency.entries()) {
    const where = `idempotency[${i}]`;
    if (!isObject(r)) return `${where} is not an object`;
    if (typeof r.key !== "string" || typeof r.blobId !== "string" || typeof r.createdAt !== "string") {
      return `${where} lacks key, blobId or createdAt`;
    }
    if (!isInt(r.epochs)) return `${where}.epochs is not an integer`;
    if (!isObject(r.response)) return `${where}.response is not an object`;
  }
  return undefined;
}
