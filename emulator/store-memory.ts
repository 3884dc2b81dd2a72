import { DEFAULT_EPOCH_SECONDS } from "../api";
import { createHash } from "node:crypto";
import { EpochClock } from "./clock";
import type { FileEntry, FileStore, IdempotencyRecord } from "./store";

/** The store that keeps everything in memory; the disk store builds on it. */
export class MemoryFileStore implements FileStore {
  readonly dataDir: string | undefined = undefined;
  protected readonly files = new Map<string, FileEntry>();
  protected readonly idempotencyRecords = new Map<string, IdempotencyRecord>();
  private readonly blobs = new Map<string, Buffer>();
  protected uploads = 0;

  constructor(readonly clock: EpochClock) {}

  static open(options: { epochSeconds?: number; now?: () => number } = {}): MemoryFileStore {
    const now = options.now ?? Date.now;
    return new MemoryFileStore(new EpochClock({ genesisMs: now(), epochSeconds: options.epochSeconds ?? DEFAULT_EPOCH_SECONDS, advancedEpochs: 0, now }));
  }

  file(blobId: string): FileEntry | undefined {
    return this.files.get(blobId);
  }

  allFiles(): FileEntry[] {
    return [...this.files.values()];
  }

  putFile(file: FileEntry): void {
    this.files.set(file.blobId, file);
  }

  nextFileId(blobId: string): string {
    this.uploads += 1;
    return `file_${createHash("sha256").update(`${blobId}\n${this.uploads}`).digest("hex").slice(0, 24)}`;
  }

  idempotency(key: string): IdempotencyRecord | undefined {
    return this.idempotencyRecords.get(key);
  }

  putIdempotency(record: IdempotencyRecord): void {
    this.idempotencyRecords.set(record.key, record);
  }

  async putBlob(blobId: string, content: Buffer): Promise<void> {
    this.blobs.set(blobId, content);
  }

  async readBlob(blobId: string): Promise<Buffer | undefined> {
    return this.blobs.get(blobId);
  }

  async advance(epochs: number): Promise<void> {
    this.clock.advance(epochs);
    await this.persist();
  }

  async reset(): Promise<void> {
    this.files.clear();
    this.idempotencyRecords.clear();
    this.blobs.clear();
    this.uploads = 0;
    this.clock.restart();
    await this.persist();
  }

  persist(): Promise<void> {
    return Promise.resolve();
  }

  flush(): Promise<void> {
    return Promise.resolve();
  }
}
