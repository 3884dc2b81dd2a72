import { isStoredFolderType, parseUrn } from "../engine/urns";
import type { DeclaredInputs } from "./schema";
import { type CheckFailure, checkFailure } from "./validate";
import { wireAsset } from "./source";

/**
 * Which resource (URN) declared each content in this provider's run, and the reverse. The service
 * keeps one entry per content, so a second resource on it is refused at check, naming both. A
 * one-resource folder claims each of its contents under its own URN, by hash: no string is made
 * per file, so a folder of 100,000 costs a map entry each.
 */
export class ContentClaims {
  /** Who declared each uploaded content (by its sha256, hex) and each adopted blobId. */
  private readonly byHash = new Map<string, string>();
  private readonly byBlobId = new Map<string, string>();
  /** What each resource claimed last: a StoredFile one content, a folder each of its contents. */
  private readonly claimed = new Map<string, { hashes: readonly string[]; blobIds: readonly string[] }>();

  /**
   * Records `urn` as the declarer of its content; the failure when another resource declared it
   * first, naming no property when that input is secret (the engine would print its value).
   */
  claim(urn: string, inputs: DeclaredInputs, secretInputs: readonly string[] = []): CheckFailure | undefined {
    const hash = wireAsset(inputs.source)?.hash;
    const blobId = hash === undefined && typeof inputs.blobId === "string" ? inputs.blobId : undefined;
    if (hash === undefined && blobId === undefined) return undefined;
    const field = hash !== undefined ? "source" : "blobId";
    const other = hash !== undefined ? this.byHash.get(hash) : this.byBlobId.get(blobId!);
    if (other !== undefined && other !== urn) return refusal(urn, other, field, secretInputs.includes(field));
    this.release(urn);
    if (hash !== undefined) this.byHash.set(hash, urn);
    else this.byBlobId.set(blobId!, urn);
    this.claimed.set(urn, { hashes: hash !== undefined ? [hash] : [], blobIds: blobId !== undefined ? [blobId] : [] });
    return undefined;
  }

  /**
   * Records the folder `urn` as the declarer of each content of `hashes` (those it declared before
   * and no longer does are freed); the failure of each that another resource declared first.
   */
  claimFolder(urn: string, hashes: readonly string[], secretSource: boolean): Map<string, CheckFailure> {
    this.release(urn);
    const refused = new Map<string, CheckFailure>();
    const kept: string[] = [];
    for (const hash of hashes) {
      const other = this.byHash.get(hash);
      if (other !== undefined && other !== urn) {
        refused.set(hash, refusal(urn, other, "source", secretSource));
        continue;
      }
      this.byHash.set(hash, urn);
      kept.push(hash);
    }
    this.claimed.set(urn, { hashes: kept, blobIds: [] });
    return refused;
  }

  /** Frees what `urn` claimed last (what another resource claimed since stays that one's). */
  private release(urn: string): void {
    const before = this.claimed.get(urn);
    if (!before) return;
    for (const hash of before.hashes) if (this.byHash.get(hash) === urn) this.byHash.delete(hash);
    for (const blobId of before.blobIds) if (this.byBlobId.get(blobId) === urn) this.byBlobId.delete(blobId);
    this.claimed.delete(urn);
  }
}

/** A resource as a refusal names it: a folder's claim is one of its files. */
function claimant(urn: string): string {
  const parsed = parseUrn(urn);
  const name = parsed?.name ?? urn;
  return isStoredFolderType(parsed?.type) ? `StoredFolder ${JSON.stringify(name)} (one of its files)` : `StoredFile ${JSON.stringify(name)}`;
}

function refusal(urn: string, other: string, field: "source" | "blobId", secret: boolean): CheckFailure {
  const reason =
    `${claimant(urn)} declares the same ${field === "source" ? "content" : "blobId"} as ${claimant(other)}: the service keeps one entry per ` +
    "content, so both would buy for it and set its name, tag and metadata. Declare it once";
  return checkFailure(field, [reason], secret);
}
