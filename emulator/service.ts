import { createHash } from "node:crypto";
import { z } from "zod";
import {
  LIMITS,
  RenewBodySchema,
  UpdateFileBodySchema,
  applyMergePatch,
  isPlainObject,
  jsonBytes,
  textLength,
  tooDeepAt,
  type FileRecord,
  type JsonObject,
  type RenewRecord,
  type UpdateFileBody,
  type UploadRecord,
} from "../api";
import { ERRORS, emulatorError, jsonKind } from "./errors";
import type { FileEntry, FileStore, IdempotencyRecord } from "./store";

/**
 * The service's rules: what an upload, a read, an update and a renew do, and which requests
 * they refuse. No HTTP here; the route table (routes.ts) parses requests and calls these, and the
 * library's direct helpers call them too.
 */

/** The renew answer: the contract's, plus the end epoch (an emulator extra, for tests). */
export type RenewAnswer = RenewRecord & { endEpoch: number };

/** What `GET /_emulator/files` and `files()` show: the record plus everything kept about the file. */
export interface InspectedFile
  extends FileRecord,
    Pick<FileEntry, "id" | "category" | "startEpoch" | "endEpoch" | "uploadEpochs" | "epochsBought" | "renewCount" | "updateCount"> {
  expired: boolean;
}

export interface UploadInput {
  content: Buffer;
  filename?: string;
  mimeType?: string;
  name?: string;
  tag?: string;
  category?: string;
  epochs?: number;
}

/** blobId = unpadded base64url of the content's SHA-256: the same bytes always get the same id. */
export function blobIdOf(content: Buffer): string {
  return createHash("sha256").update(content).digest("base64url");
}

/** Whether renew honours `Idempotency-Key` (the project's assumption) or ignores it, as a service that never heard of it would. */
export type IdempotencyMode = "honour" | "ignore";

/**
 * What an upload of bytes already stored (a live entry) does, undocumented for the real service:
 * `existing` answers with that entry unchanged (200); `purchase` takes it as a new purchase on
 * that entry (its name, tag and category overwritten, the upload's epochs added; 201); `refuse`
 * answers 409 ALREADY_STORED naming it.
 */
export type DuplicateUploadMode = "existing" | "purchase" | "refuse";
export const DUPLICATE_UPLOAD_MODES: readonly DuplicateUploadMode[] = ["existing", "purchase", "refuse"];

export class FileService {
  constructor(
    private readonly store: FileStore,
    private readonly baseUrl: string,
    private readonly idempotency: IdempotencyMode = "honour",
    /** Epochs each API key may buy in all (one credit an epoch); undefined: no limit. */
    private readonly prepaidBalance?: number,
    private readonly duplicateUpload: DuplicateUploadMode = "existing",
  ) {}

  /** Credits spent per account (API key digest); kept in memory, so a restart or a reset refills balances. */
  private readonly spent = new Map<string, number>();

  /** Refills every balance (reset). */
  refillBalances(): void {
    this.spent.clear();
  }

  private get clock() {
    return this.store.clock;
  }

  isExpired(file: FileEntry): boolean {
    return this.clock.currentEpoch() >= file.endEpoch;
  }

  view(file: FileEntry): FileRecord {
    return {
      blobId: file.blobId,
      url: this.cdnUrl(file.blobId),
      name: file.name,
      tag: file.tag,
      metadata: structuredClone(file.metadata),
      size: file.size,
      mimeType: file.mimeType,
      createdAt: this.clock.toWall(file.createdAtVirtualMs).toISOString(),
      expiresAt: this.clock.epochStart(file.endEpoch).toISOString(),
    };
  }

  uploadView(file: FileEntry): UploadRecord {
    const v = this.view(file);
    return {
      id: file.id,
      blob_id: v.blobId,
      url: v.url,
      size: v.size,
      mime_type: v.mimeType,
      tag: v.tag,
      category: file.category,
      created_at: v.createdAt,
      expires_at: v.expiresAt,
    };
  }

  internalView(file: FileEntry): InspectedFile {
    return {
      ...this.view(file),
      id: file.id,
      category: file.category,
      startEpoch: file.startEpoch,
      endEpoch: file.endEpoch,
      uploadEpochs: file.uploadEpochs,
      epochsBought: file.epochsBought,
      renewCount: file.renewCount,
      updateCount: file.updateCount,
      expired: this.isExpired(file),
    };
  }

  dump(): InspectedFile[] {
    return this.store.allFiles().map((file) => this.internalView(file));
  }

  cdnUrl(blobId: string): string {
    return `${this.baseUrl}/cdn/${blobId}`;
  }

  /**
   * Uploads content. The same bytes uploaded again while the file is alive give back the existing
   * file unchanged (`created: false`, 200): the blob is content-addressed, as on Walrus. With an
   * Idempotency-Key (honoured), the first accepted upload's answer is replayed for the same key.
   */
  async upload(input: UploadInput, headerKey?: string): Promise<{ status: number; body: UploadRecord; replayed: boolean; key?: string }> {
    const { epochs, name } = uploadFields(input);
    const blobId = blobIdOf(input.content);
    const idempotencyKey = this.idempotency === "honour" ? headerKey : undefined;
    if (idempotencyKey !== undefined) {
      const replay = await this.replay(idempotencyKey, "upload", blobId, epochs);
      if (replay) return { status: replay.status ?? 200, body: this.replayed(replay) as unknown as UploadRecord, replayed: true, key: idempotencyKey };
    }
    const { created, file } = await this.store_(input, blobId, name, epochs);
    const body = this.uploadView(file);
    const status = created ? 201 : 200;
    if (idempotencyKey !== undefined) {
      this.store.putIdempotency({
        key: idempotencyKey,
        route: "upload",
        blobId,
        epochs,
        status,
        response: structuredClone(body) as unknown as JsonObject,
        createdAt: new Date().toISOString(),
        advancedEpochs: this.clock.advancedEpochs,
      });
      await this.store.persist();
    }
    return { status, body, replayed: false, key: idempotencyKey };
  }

  /** Library upload (no HTTP, no key): the file as kept. */
  async uploadDirect(input: UploadInput): Promise<FileEntry> {
    const { epochs, name } = uploadFields(input);
    return (await this.store_(input, blobIdOf(input.content), name, epochs)).file;
  }

  private async store_(input: UploadInput, blobId: string, name: string | null, epochs: number): Promise<{ created: boolean; file: FileEntry }> {
    const existing = this.store.file(blobId);
    if (existing !== undefined && !this.isExpired(existing)) {
      if (this.duplicateUpload === "refuse") throw emulatorError(ERRORS.alreadyStored, blobId);
      if (this.duplicateUpload === "existing") return { created: false, file: existing };
      const ahead = existing.endEpoch + epochs - this.clock.currentEpoch();
      if (ahead > LIMITS.maxEpochsAhead) throw emulatorError(ERRORS.renewBeyondHorizon, epochs, ahead, this.clock.currentEpoch(), existing.endEpoch);
      existing.name = name;
      existing.tag = input.tag ?? null;
      existing.category = input.category ?? null;
      existing.endEpoch += epochs;
      existing.epochsBought += epochs;
      await this.store.persist();
      return { created: true, file: existing };
    }
    const currentEpoch = this.clock.currentEpoch();
    const file: FileEntry = {
      id: this.store.nextFileId(blobId),
      blobId,
      name,
      tag: input.tag ?? null,
      category: input.category ?? null,
      metadata: {},
      size: input.content.length,
      mimeType: input.mimeType ?? "application/octet-stream",
      createdAtVirtualMs: this.clock.virtualNow(),
      startEpoch: currentEpoch,
      endEpoch: currentEpoch + epochs,
      uploadEpochs: epochs,
      epochsBought: 0,
      renewCount: 0,
      updateCount: 0,
    };
    this.store.putFile(file);
    await this.store.putBlob(blobId, input.content);
    await this.store.persist();
    return { created: true, file };
  }

  /**
   * The remembered answer of a key, if it was used for this very request; 422 if it was used for
   * another one (another route, file or number of epochs); undefined if it is new.
   */
  private async replay(key: string, route: "renew" | "upload", blobId: string, epochs: number) {
    if (!/^[\x21-\x7e]{1,255}$/.test(key)) throw emulatorError(ERRORS.idempotencyKeyInvalid, key.length);
    const prior = this.store.idempotency(key);
    if (prior === undefined) return undefined;
    if ((prior.route ?? "renew") !== route || prior.blobId !== blobId || prior.epochs !== epochs) {
      throw emulatorError(ERRORS.idempotencyKeyReused, prior.blobId, prior.epochs);
    }
    await this.store.flush(); // the first request may still be on its way to disk
    return prior;
  }

  /**
   * A remembered answer as it is replayed now: its instants are on the timeline the clock reports,
   * moved back by the epochs advanced since (as every record's are), so it names the same moments.
   */
  private replayed(prior: IdempotencyRecord): JsonObject {
    const response = structuredClone(prior.response);
    const shiftMs = (this.clock.advancedEpochs - (prior.advancedEpochs ?? this.clock.advancedEpochs)) * this.clock.epochMs;
    for (const field of ["createdAt", "expiresAt", "created_at", "expires_at"]) {
      const at = response[field];
      if (shiftMs !== 0 && typeof at === "string" && !Number.isNaN(Date.parse(at))) response[field] = new Date(Date.parse(at) - shiftMs).toISOString();
    }
    return response;
  }

  /** The file if it exists and is alive; 404 or 410 otherwise. */
  liveFile(blobId: string): FileEntry {
    if (textLength(blobId) > LIMITS.blobIdMaxLength) throw emulatorError(ERRORS.blobIdTooLong, textLength(blobId));
    const file = this.store.file(blobId);
    if (file === undefined) throw emulatorError(ERRORS.fileNotFound, blobId);
    const currentEpoch = this.clock.currentEpoch();
    if (currentEpoch >= file.endEpoch) throw emulatorError(ERRORS.fileExpired, blobId, file.endEpoch, currentEpoch);
    return file;
  }

  get(blobId: string): FileRecord {
    return this.view(this.liveFile(blobId));
  }

  /**
   * Update File as JSON Merge Patch: fields present replace (null clears), `metadata` is merged
   * recursively (null members removed; `metadata: null` clears it). Limits are checked on the
   * result, so a patch that removes keys can bring an over-full record back under them.
   */
  async patch(blobId: string, body: unknown): Promise<FileRecord> {
    const patch = parsePatchBody(body);
    const file = this.liveFile(blobId);

    const name = patch.name === undefined ? file.name : patch.name;
    const tag = patch.tag === undefined ? file.tag : patch.tag;
    let metadata = file.metadata;
    if (patch.metadata === null) metadata = {};
    else if (patch.metadata !== undefined) metadata = applyMergePatch(file.metadata, patch.metadata) as JsonObject;

    checkLength("name", name, LIMITS.nameMaxLength);
    checkLength("tag", tag, LIMITS.tagMaxLength);
    const keys = Object.keys(metadata).length;
    if (keys > LIMITS.metadataMaxKeys) throw emulatorError(ERRORS.metadataTooManyKeys, keys);
    const bytes = jsonBytes(metadata);
    if (bytes > LIMITS.metadataMaxBytes) throw emulatorError(ERRORS.metadataTooLarge, bytes);

    if (Object.keys(patch).length === 0) return this.view(file);
    file.name = name;
    file.tag = tag;
    file.metadata = metadata;
    file.updateCount += 1;
    await this.store.persist();
    return this.view(file);
  }

  /**
   * Epoch Renewal. With an Idempotency-Key, the first accepted request is remembered with its
   * answer; the same key and request again replays that answer without buying again, and the
   * same key with another request is refused.
   */
  async renew(blobId: string, body: unknown, headerKey?: string, account = ""): Promise<{ body: RenewAnswer; replayed: boolean; key?: string }> {
    const epochs = parseRenewBody(body);
    const idempotencyKey = this.idempotency === "honour" ? headerKey : undefined;
    if (idempotencyKey !== undefined) {
      const prior = await this.replay(idempotencyKey, "renew", blobId, epochs);
      if (prior) return { body: this.replayed(prior) as unknown as RenewAnswer, replayed: true, key: idempotencyKey };
    }

    const file = this.liveFile(blobId);
    const currentEpoch = this.clock.currentEpoch();
    const ahead = file.endEpoch + epochs - currentEpoch;
    if (ahead > LIMITS.maxEpochsAhead) {
      throw emulatorError(ERRORS.renewBeyondHorizon, epochs, ahead, currentEpoch, file.endEpoch);
    }
    if (this.prepaidBalance !== undefined) {
      const balance = this.prepaidBalance - (this.spent.get(account) ?? 0);
      if (balance < epochs) throw emulatorError(ERRORS.insufficientBalance, epochs, balance);
      this.spent.set(account, (this.spent.get(account) ?? 0) + epochs);
    }
    file.endEpoch += epochs;
    file.epochsBought += epochs;
    file.renewCount += 1;
    const response: RenewAnswer = { ...this.view(file), epochsAdded: epochs, endEpoch: file.endEpoch };
    if (idempotencyKey !== undefined) {
      this.store.putIdempotency({
        key: idempotencyKey,
        route: "renew",
        blobId,
        epochs,
        response: structuredClone(response) as unknown as JsonObject,
        createdAt: new Date().toISOString(),
        advancedEpochs: this.clock.advancedEpochs,
      });
    }
    await this.store.persist();
    return { body: response, replayed: false, key: idempotencyKey };
  }
}

/**
 * A JSON body checked against its schema in the contract (api/files.ts); the first problem is
 * answered with the catalogue's entry for it, naming the field and the limit.
 */
function parseJsonBody<S extends z.ZodObject>(schema: S, body: unknown): z.infer<S> {
  const object = requireObject(body, Object.keys(schema.shape));
  const parsed = schema.safeParse(object);
  // The body as sent, once it checks out: a parsed copy would drop keys such as `__proto__`, which are data here.
  if (parsed.success) return object as z.infer<S>;
  const issue = parsed.error.issues[0]!;
  const field = String(issue.path[0] ?? "");
  const value = object[field];
  const fieldSchema = schema.shape[field] as z.ZodType;
  if (value === undefined) throw emulatorError(ERRORS.requiredField, field);
  if (issue.code === "custom" && typeof value === "string") {
    const { max } = (issue.params ?? {}) as { max?: number };
    if (max !== undefined) throw emulatorError(ERRORS.tooLong, field, textLength(value), max);
  }
  if ((issue.code === "too_small" || issue.code === "too_big") && typeof value === "number") {
    const { minValue, maxValue } = unwrapped(fieldSchema) as z.ZodNumber;
    throw emulatorError(ERRORS.integerOutOfRange, field, String(value), minValue ?? 1, maxValue ?? LIMITS.maxEpochsAhead);
  }
  // A number of the wrong kind (1.5 for an integer) is shown as it is; anything else by its kind.
  const got = typeof value === "number" && unwrapped(fieldSchema) instanceof z.ZodNumber ? String(value) : jsonKind(value);
  throw emulatorError(ERRORS.wrongType, field, expectedOf(fieldSchema), got);
}

/** The schema inside `.optional()` / `.nullable()`. */
function unwrapped(schema: z.ZodType): z.ZodType {
  let inner = schema;
  while (inner instanceof z.ZodOptional || inner instanceof z.ZodNullable) inner = inner.unwrap() as z.ZodType;
  return inner;
}

/** What a field must be, as messages say it ("a string or null", "an integer"). */
function expectedOf(schema: z.ZodType): string {
  const inner = unwrapped(schema);
  const kind = inner instanceof z.ZodNumber ? (inner.isInt ? "an integer" : "a number") : inner instanceof z.ZodString ? "a string" : "an object";
  return schema.safeParse(null).success ? `${kind} or null` : kind;
}

function parsePatchBody(body: unknown): UpdateFileBody {
  // Checked without recursion, before anything recursive (the schema, a merge, a clone) touches the value.
  const metadata = isPlainObject(body) ? body.metadata : undefined;
  if (isPlainObject(metadata) && tooDeepAt(metadata, LIMITS.metadataMaxDepth) !== undefined) throw emulatorError(ERRORS.metadataTooDeep);
  return parseJsonBody(UpdateFileBodySchema, body);
}

const parseRenewBody = (body: unknown): number => parseJsonBody(RenewBodySchema, body).epochs;

/** The body must be an object (400 otherwise: it is not a request at all) with known fields only. */
export function requireObject(body: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (!isPlainObject(body)) throw emulatorError(ERRORS.bodyNotObject, jsonKind(body));
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) throw emulatorError(ERRORS.unknownField, key, allowed);
  }
  return body;
}

/** An upload's fields, checked: epochs 1..53 (default 1), the name (default: the filename), lengths. */
function uploadFields(input: UploadInput): { epochs: number; name: string | null } {
  const epochs = input.epochs ?? 1;
  checkIntegerRange("epochs", epochs, 1, LIMITS.maxEpochsAhead);
  const name = input.name ?? input.filename ?? null;
  checkLength("name", name, LIMITS.nameMaxLength);
  checkLength("tag", input.tag ?? null, LIMITS.tagMaxLength);
  checkLength("category", input.category ?? null, LIMITS.tagMaxLength);
  return { epochs, name };
}

function checkLength(field: string, value: string | null, max: number): void {
  if (value !== null && textLength(value) > max) throw emulatorError(ERRORS.tooLong, field, textLength(value), max);
}

function checkIntegerRange(field: string, value: number, min: number, max: number): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw emulatorError(ERRORS.integerOutOfRange, field, String(value), min, max);
  }
}
