import type { JsonObject } from "../api";
import type { EpochClock } from "./clock";

/**
 * What the emulator keeps, behind one interface with two implementations: in memory
 * (store-memory.ts) and on disk (store-disk.ts). Nothing here knows about HTTP or the service's
 * rules: service.ts decides, a store keeps what it decided.
 */

/** Everything the emulator keeps about one file. */
export interface FileEntry {
  id: string;
  blobId: string;
  name: string | null;
  tag: string | null;
  category: string | null;
  metadata: JsonObject;
  size: number;
  mimeType: string;
  /** Creation instant on the virtual clock (see clock.ts). */
  createdAtVirtualMs: number;
  startEpoch: number;
  /** Exclusive: the file is expired once the current epoch is >= endEpoch. */
  endEpoch: number;
  /** Epochs bought by the upload itself. */
  uploadEpochs: number;
  /** Epochs bought through renew, summed; lets tests prove that no purchase happened twice. */
  epochsBought: number;
  renewCount: number;
  updateCount: number;
}

/** A renew or upload made with an Idempotency-Key: the request it answered and the answer to replay. */
export interface IdempotencyRecord {
  key: string;
  /** The route it was made on (absent in states written before uploads took keys: a renew). */
  route?: "renew" | "upload";
  blobId: string;
  epochs: number;
  /** The answer's status (an upload's 201 or 200); absent: 200. */
  status?: number;
  response: JsonObject;
  createdAt: string;
  /** The clock's advanced epochs when it was answered: a replay reports the answer's instants moved back by those advanced since. */
  advancedEpochs?: number;
}

export interface FileStore {
  /** Absolute data directory, or undefined in memory. */
  readonly dataDir: string | undefined;
  readonly clock: EpochClock;
  file(blobId: string): FileEntry | undefined;
  allFiles(): FileEntry[];
  /** Adds or replaces a file; the caller persists. */
  putFile(file: FileEntry): void;
  /** A new file id; stable for a given upload order, so seeded runs give the same ids. */
  nextFileId(blobId: string): string;
  idempotency(key: string): IdempotencyRecord | undefined;
  putIdempotency(record: IdempotencyRecord): void;
  /** Stores a blob's bytes (content-addressed: the same id always holds the same bytes). */
  putBlob(blobId: string, content: Buffer): Promise<void>;
  readBlob(blobId: string): Promise<Buffer | undefined>;
  /** Moves the clock forward and persists it. */
  advance(epochs: number): Promise<void>;
  /** Forgets every file, blob and idempotency record and restarts the clock. */
  reset(): Promise<void>;
  /** Settles once the state as it is now is durably kept (at once in memory). */
  persist(): Promise<void>;
  /** Settles once every write queued so far is done. */
  flush(): Promise<void>;
}

export interface StoreOptions {
  /** Directory for state.json and blobs/; undefined keeps everything in memory. */
  dataDir?: string;
  /** Undefined: the persisted value, or one day for a new store. */
  epochSeconds?: number;
  now?: () => number;
}
