import type { StoredFileState } from "../file/schema";

/**
 * Contents moving between a stack's folder resources: a `parts` change, or a file moved to
 * another folder. The resource that drops a content offers its recorded entry at its diff; a
 * resource stepped after it that takes the content records that entry instead of uploading the
 * bytes again, so the content keeps its retention start and buys nothing it has. "After" is the
 * program's to say: TypeScript's parts each depend on the one before once the count has changed
 * (`partsBefore`, parts.ts; other languages declare it), since the engine steps resources that do
 * not depend on each other in no fixed order and only a few at once. A content taken before it
 * is offered is uploaded again.
 * When `parts` changes, a part keeps what it drops in its state (`handedOver`, stamped
 * `handedOverAt`) for a day and offers it again at each diff, for a taker that `up`s cut short or
 * failing never reached; the first update after that day forgets it.
 * One pool per folder core (one service and one API key), which lives as long as its process: one
 * deployment.
 */

/** How long a part keeps what it handed over: `up`s cut short or failing within it still hand it over. */
export const HANDED_OVER_KEPT_MS = 24 * 60 * 60_000;

/**
 * Whether what a part handed over at `at` (its recorded `handedOverAt`) is kept at `now`. Not
 * when no time was recorded (an earlier release kept it for one update) nor one more than an hour
 * ahead of this clock (another machine's clock, not believed): those are forgotten, as before.
 */
export function handedOverKept(at: unknown, now: number): boolean {
  const ms = typeof at === "string" ? Date.parse(at) : Number.NaN;
  return Number.isFinite(ms) && now - ms < HANDED_OVER_KEPT_MS && ms - now < 60 * 60_000;
}

export class Moves {
  private readonly offered = new Map<string, StoredFileState>();

  /**
   * The entries a resource's diff finds it drops (recorded, no longer declared by it), by content
   * hash; `again`, those it dropped at an earlier `up`: an entry dropped now is newer, and wins.
   */
  offer(dropped: Iterable<[string, StoredFileState]>, again = false): void {
    for (const [hash, entry] of dropped) if (!again || !this.offered.has(hash)) this.offered.set(hash, entry);
  }

  /** The entry offered for a content, if any, left on offer (a preview shows it; the step takes it). */
  peek(hash: string): StoredFileState | undefined {
    return this.offered.get(hash);
  }

  /** The entry offered for a content, taken: a second taker uploads. */
  take(hash: string): StoredFileState | undefined {
    const entry = this.peek(hash);
    this.offered.delete(hash);
    return entry;
  }
}
