import type { StoredFileState } from "../file/schema";

/**
 * Contents moving between a stack's folder resources: a `parts` change, or a file moved to
 * another folder. The resource that drops a content offers its recorded entry at its diff; the
 * resource that takes the content records that entry instead of uploading the bytes again, so
 * the content keeps its retention start and buys nothing it has.
 *
 * The engine steps a program's resources in the order their registrations arrive, which the
 * SDK does not keep, so a part that may take contents (new, or its count of parts changed) waits
 * (at most `WAIT_MS`) until each other part of its folder has been diffed or checked as new. A
 * content whose old resource is not stepped before (another folder stepped later, a part
 * removed) is uploaded again.
 * One pool per folder core: one service and one API key.
 */

/** How long an offer or a part's step is remembered (the engine steps a deployment's resources within it). */
const KEPT_MS = 60_000;
/** How long a part waits for its folder's other parts to be stepped before it uploads what none offered. */
export const WAIT_MS = 30_000;

interface Stepped {
  at: number;
  /** The parts that have offered what they drop (diffed), or that drop nothing (checked as new). */
  parts: Set<number>;
  wake: Array<() => void>;
}

export class Moves {
  private readonly offered = new Map<string, { at: number; entry: StoredFileState }>();
  private readonly folders = new Map<string, Stepped>();

  /** The entries a resource's diff finds it drops (recorded, no longer declared by it), by content hash. */
  offer(dropped: Iterable<[string, StoredFileState]>): void {
    this.forgetOld();
    const at = Date.now();
    for (const [hash, entry] of dropped) this.offered.set(hash, { at, entry });
  }

  /** The entry offered for a content, if any, left on offer (a preview shows it; the step takes it). */
  peek(hash: string): StoredFileState | undefined {
    const offer = this.offered.get(hash);
    return offer !== undefined && Date.now() - offer.at <= KEPT_MS ? offer.entry : undefined;
  }

  /** The entry offered for a content, taken: a second taker uploads. */
  take(hash: string): StoredFileState | undefined {
    const entry = this.peek(hash);
    this.offered.delete(hash);
    return entry;
  }

  /**
   * A part of the folder `key` was checked: a new one drops nothing, so it is stepped already; one
   * that existed is stepped once diffed. (Both come as the engine takes the registration, which no
   * waiting step holds up.)
   */
  checked(key: string, part: number, existed: boolean): void {
    this.forgetOld();
    const folder = this.folder(key);
    if (existed) folder.parts.delete(part);
    else this.stepped(folder, part);
  }

  /** A part of the folder `key` was diffed: it has offered what it drops. */
  diffed(key: string, part: number): void {
    this.stepped(this.folder(key), part);
  }

  /** Resolves once every other part of the folder has been checked as new or diffed, or after `waitMs`. */
  async othersStepped(key: string, part: number, parts: number, waitMs = WAIT_MS): Promise<void> {
    const folder = this.folder(key);
    const done = () => {
      for (let other = 0; other < parts; other++) if (other !== part && !folder.parts.has(other)) return false;
      return true;
    };
    if (done()) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(finish, waitMs);
      function finish() {
        clearTimeout(timer);
        folder.wake = folder.wake.filter((w) => w !== check);
        resolve();
      }
      function check() {
        if (done()) finish();
      }
      folder.wake.push(check);
    });
  }

  private folder(key: string): Stepped {
    const folder = this.folders.get(key) ?? { at: 0, parts: new Set<number>(), wake: [] };
    this.folders.set(key, folder);
    folder.at = Date.now();
    return folder;
  }

  private stepped(folder: Stepped, part: number): void {
    folder.parts.add(part);
    for (const check of [...folder.wake]) check();
  }

  private forgetOld(): void {
    const now = Date.now();
    for (const [hash, offer] of this.offered) if (now - offer.at > KEPT_MS) this.offered.delete(hash);
    for (const [key, folder] of this.folders) if (now - folder.at > KEPT_MS && folder.wake.length === 0) this.folders.delete(key);
  }
}
