import { isStoredFolderType, parseUrn, resourceUrnOf } from "../engine/urns";
import type { DeclaredInputs } from "./schema";
import { type CheckFailure, checkFailure } from "./validate";
import { wireAsset } from "./source";

/**
 * Which resource (URN) declared each content in this provider's run, and the reverse. The service
 * keeps one entry per content, so a second resource on it is refused at check, naming both.
 */
export class ContentClaims {
  private readonly claims = new Map<string, string>();
  private readonly claimOf = new Map<string, string>();

  /**
   * Records `urn` as the declarer of its content; the failure when another resource declared it
   * first, naming no property when that input is secret (the engine would print its value).
   */
  claim(urn: string, inputs: DeclaredInputs, secretInputs: readonly string[] = []): CheckFailure | undefined {
    const hash = wireAsset(inputs.source)?.hash;
    const field = hash ? "source" : typeof inputs.blobId === "string" ? "blobId" : undefined;
    if (!field) return undefined;
    const content = hash ? `sha256:${hash}` : `blobId:${String(inputs.blobId)}`;
    const other = this.claims.get(content);
    if (other !== undefined && other !== urn) {
      // A folder's entry goes by its folder's URN and its hash (folderEntryUrn): said as the folder.
      const name = (u: string) => {
        const resource = resourceUrnOf(u);
        const parsed = parseUrn(resource);
        const last = parsed?.name ?? resource;
        return resource !== u && isStoredFolderType(parsed?.type)
          ? `StoredFolder ${JSON.stringify(last)} (one of its files)`
          : `StoredFile ${JSON.stringify(last)}`;
      };
      const reason =
        `${name(urn)} declares the same ${hash ? "content" : "blobId"} as ${name(other)}: the service keeps one entry per ` +
        "content, so both would buy for it and set its name, tag and metadata. Declare it once";
      return checkFailure(field, [reason], secretInputs.includes(field));
    }
    const before = this.claimOf.get(urn);
    if (before !== undefined && before !== content) this.claims.delete(before);
    this.claims.set(content, urn);
    this.claimOf.set(urn, content);
    return undefined;
  }
}
