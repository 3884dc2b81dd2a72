import type { StoredFileState } from "../file/schema";

/**
 * Contents moving between a stack's folder resources: a `parts` change, or a file moved to
 * another folder. The resource that drops a content offers its recorded entry at its diff; the
 * resource that takes the content records that entry instead of uploading the bytes again, so
 * the content keeps its retention start and buys nothing it has.
 *
 * The engine steps registrations in the order they arrive, which the SDK does not keep, and it
 * checks and diffs each as it takes it, before it runs the step. So a new part first waits for
 * its folder's other parts to be checked: once a check shows the folder existed (as how many
 * parts), until each of those parts has been diffed (at most `WAIT_MS`). While no check has, it
 * gives up as soon as none comes for `IDLE_MS`: the engine runs a few steps at once (4 per CPU
 * by default), and the new parts of a new folder waiting in them stop it from taking the others.
 * A content whose old resource is not diffed first (another folder stepped later, a part
 * removed) is uploaded again.
 * One pool per folder core: one service and one API key.
 */

/** How long an offer or a part's step is remembered (the engine steps a deployment's resources within it). */
const KEPT_MS = 60_000;
/** How long a new part waits for its folder's old parts to be diffed before it uploads what none offered. */
export const WAIT_MS = 10_000;
/** How long a new part waits for another part's check while none has shown the folder existed. */
export const IDLE_MS = 1_000;
/** How often a waiting part looks at the clock (checks and diffs wake it at once). */
const TICK_MS = 50;

interface Stepped {
  at: number;
  /** How many parts the folder was kept as, once a part that existed was checked. */
  oldParts?: number;
  /** The parts checked, and those diffed (they have offered what they drop). */
  checked: Set<number>;
  diffed: Set<number>;
  /** When a part of the folder was last checked or diffed. */
  lastStep: number;
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

  /** A part of the folder `key` was checked; one that existed (kept as `oldParts` parts) begins a pass: its diff follows. */
  checked(key: string, part: number, existed: boolean, oldParts: number): void {
    this.forgetOld();
    const folder = this.folder(key);
    folder.checked.add(part);
    if (existed) {
      folder.oldParts = oldParts;
      folder.diffed.delete(part);
    }
    this.stepped(folder);
  }

  /** A part of the folder `key` was diffed: it has offered what it drops. */
  diffed(key: string, part: number): void {
    const folder = this.folder(key);
    folder.diffed.add(part);
    this.stepped(folder);
  }

  /**
   * Resolves once the parts the folder was kept as have been diffed (a check showed how many), or
   * every part of `parts` has been checked and none existed; or when waiting is no use (above).
   */
  async othersStepped(key: string, part: number, parts: number): Promise<void> {
    const folder = this.folder(key);
    const from = Date.now();
    const done = () => {
      const old = folder.oldParts;
      if (old === undefined) {
        for (let other = 0; other < parts; other++) if (other !== part && !folder.checked.has(other)) return Date.now() - folder.lastStep >= IDLE_MS;
        return true;
      }
      for (let other = 0; other < old; other++) if (other !== part && !folder.diffed.has(other)) return Date.now() - from >= WAIT_MS;
      return true;
    };
    if (done()) return;
    await new Promise<void>((resolve) => {
      const timer = setInterval(check, TICK_MS);
      function check() {
        if (!done()) return;
        clearInterval(timer);
        folder.wake = folder.wake.filter((w) => w !== check);
        resolve();
      }
      folder.wake.push(check);
    });
  }

  private folder(key: string): Stepped {
    const folder = this.folders.get(key) ?? { at: 0, checked: new Set<number>(), diffed: new Set<number>(), lastStep: Date.now(), wake: [] };
    this.folders.set(key, folder);
    folder.at = Date.now();
    return folder;
  }

  private stepped(folder: Stepped): void {
    folder.lastStep = Date.now();
    for (const check of [...folder.wake]) check();
  }

  private forgetOld(): void {
    const now = Date.now();
    for (const [hash, offer] of this.offered) if (now - offer.at > KEPT_MS) this.offered.delete(hash);
    for (const [key, folder] of this.folders) if (now - folder.at > KEPT_MS && folder.wake.length === 0) this.folders.delete(key);
  }
}
