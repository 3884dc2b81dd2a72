import { DEFAULT_EPOCH_SECONDS } from "../../api";

/**
 * What the provider knows of the service it talks to, in one place: the epoch's length, whether
 * Idempotency-Key is honoured, what a second upload of stored bytes does. Each comes from the
 * stack's settings (what `pulumi-tuskr doctor` measured) or from the service's own answers; every
 * file of a stack reads them here, never guessing on its own.
 */

/** The longest epoch an answer is believed to show: four weeks, twice Walrus mainnet's. */
export const LONGEST_EPOCH_MS = 28 * 86_400_000;
/** Lengths closer than this are one (an answer's times may be whole seconds). */
export const SAME_LENGTH_MS = 1000;

/** Where the epoch's length comes from: a renew's answer, the stack's `tuskr:epochSeconds`, or the contract's "about a day". */
type EpochSource = "answer" | "setting" | "contract";

export interface Epoch {
  ms: number;
  /** Given by an answer or the stack's setting: counts rest on it. Otherwise a count that depends on it buys one epoch first to learn it. */
  known: boolean;
  source: EpochSource;
}

/** Whether the service replays an answer for an Idempotency-Key it has seen (the emulator's `honour`). */
export const IDEMPOTENCY_KEYS = ["honoured", "ignored"] as const;
export type IdempotencyKeys = (typeof IDEMPOTENCY_KEYS)[number];
/** What an upload of bytes already stored does, in the emulator's words. */
const DUPLICATE_UPLOADS = ["existing", "purchase", "refuse"] as const;
export type DuplicateUpload = (typeof DUPLICATE_UPLOADS)[number];

/** What the provider assumes where neither a setting nor an answer says: the emulator's defaults. */
export const ASSUMED = {
  epochSeconds: DEFAULT_EPOCH_SECONDS,
  idempotencyKeys: "honoured" as IdempotencyKeys,
  duplicateUpload: "existing" as DuplicateUpload,
};

/** A length an answer showed that the stack should know of: said once, naming the setting. */
export interface EpochFinding {
  /** Learnt where nothing was set; shown otherwise than the setting by a renew; or ruled out by a new upload's answer. */
  kind: "epoch-learnt" | "epoch-corrected" | "epoch-setting-contradicted" | "epoch-setting-refuted";
  /** The length the answer showed (for a refutation: the bound the setting is outside of). */
  ms: number;
  settingMs?: number;
}

/** The stack's settings the facts start from (`tuskr:epochSeconds` unset: undefined). */
export interface FactSettings {
  epochSeconds?: number;
  idempotencyKeys?: IdempotencyKeys;
}

const plausible = (ms: unknown): ms is number => typeof ms === "number" && Number.isFinite(ms) && ms >= SAME_LENGTH_MS && ms <= LONGEST_EPOCH_MS;

/**
 * The facts one provider process holds for one service. An answer's length beats the setting; of
 * two answers the shorter stands, since a purchase made alongside a renew only lengthens its move.
 */
export class ServiceFacts {
  private learnt: number | undefined;
  /** A new upload's answer ruled the setting out: until an answer shows the length, it is not known. */
  private refuted = false;
  private probe: Promise<void> = Promise.resolve();

  constructor(readonly settings: FactSettings) {}

  get epoch(): Epoch {
    if (this.learnt !== undefined) return { ms: this.learnt, known: true, source: "answer" };
    const setting = this.settings.epochSeconds;
    if (setting !== undefined && !this.refuted) return { ms: setting * 1000, known: true, source: "setting" };
    return { ms: (setting ?? ASSUMED.epochSeconds) * 1000, known: false, source: setting === undefined ? "contract" : "setting" };
  }

  /** The length an answer showed, once, or undefined: what every state written records, so a later `up` finds it. */
  get learntMs(): number | undefined {
    return this.learnt;
  }

  /** A length a state recorded from an earlier answer (one service, one epoch). */
  seed(ms: unknown): void {
    if (plausible(ms) && (this.learnt === undefined || ms < this.learnt - SAME_LENGTH_MS)) this.learnt = ms;
  }

  /**
   * A length a renew's answer showed now. Returns what the stack should be told, if anything: the
   * first length learnt where the setting is unset and it is not the contract's day, or one that
   * contradicts the setting.
   */
  learn(ms: number): EpochFinding | undefined {
    if (!plausible(ms)) return undefined;
    const before = this.learnt;
    this.seed(ms);
    if (this.learnt === before) return undefined;
    const setting = this.settings.epochSeconds;
    const differs = (other: number) => Math.abs(ms - other) >= SAME_LENGTH_MS;
    if (setting !== undefined) return differs(setting * 1000) ? { kind: "epoch-setting-contradicted", ms, settingMs: setting * 1000 } : undefined;
    if (before !== undefined) return { kind: "epoch-corrected", ms, settingMs: before };
    return differs(ASSUMED.epochSeconds * 1000) ? { kind: "epoch-learnt", ms } : undefined;
  }

  /**
   * What a new entry's answer shows of the length. A setting outside it is wrong: no count rests on
   * it until an answer shows the length (a guess would leave files short). An answer's length is
   * exact and stays.
   */
  bounded(range: { atLeastMs: number; belowMs?: number }): EpochFinding | undefined {
    const epoch = this.epoch;
    if (epoch.source !== "setting" || !epoch.known) return undefined;
    if (epoch.ms >= range.atLeastMs - SAME_LENGTH_MS && (range.belowMs === undefined || epoch.ms < range.belowMs + SAME_LENGTH_MS)) return undefined;
    this.refuted = true;
    const bound = epoch.ms < range.atLeastMs ? range.atLeastMs : (range.belowMs ?? range.atLeastMs);
    return { kind: "epoch-setting-refuted", ms: bound, settingMs: epoch.ms };
  }

  /** Whether Idempotency-Key is known honoured or ignored (the setting), else undefined: each run learns it from a replay. */
  get idempotencyKeys(): IdempotencyKeys | undefined {
    return this.settings.idempotencyKeys;
  }

  /**
   * The turn of a purchase made to learn the length: one in flight per process, so files waiting
   * count in what it shows rather than each buying an epoch. Resolves to the function ending it.
   */
  async probeTurn(): Promise<() => void> {
    const before = this.probe;
    let release: () => void = () => undefined;
    this.probe = new Promise<void>((resolve) => {
      release = resolve;
    });
    await before;
    return release;
  }
}

/** An epoch's length as a reader takes it: "14 days", "86,000 s". */
function epochText(ms: number): string {
  const seconds = Math.round(ms / 1000);
  return seconds % 86_400 === 0 ? `${seconds / 86_400} day${seconds === 86_400 ? "" : "s"} (${seconds} s)` : `${seconds} s`;
}

/** What to tell the stack of a length an answer showed: said once per stack, with the setting that keeps it. */
export function findingText(finding: EpochFinding): string {
  const set = `\`pulumi config set tuskr:epochSeconds ${Math.round(finding.ms / 1000)}\``;
  if (finding.kind === "epoch-setting-refuted") {
    const side = finding.ms > (finding.settingMs ?? 0) ? "at least" : "shorter than";
    return `a new upload's answer shows the service's epoch is ${side} ${epochText(finding.ms)}, not tuskr:epochSeconds ${Math.round((finding.settingMs ?? 0) / 1000)}: purchases learn it first; run \`pulumi-tuskr doctor\``;
  }
  if (finding.kind === "epoch-corrected") {
    return `the service's epoch is ${epochText(finding.ms)} (a renew's answer), shorter than the ${epochText(finding.settingMs ?? 0)} recorded before (a purchase made alongside lengthened that move): counted in the shorter`;
  }
  if (finding.kind === "epoch-setting-contradicted") {
    return `the service's epoch is ${epochText(finding.ms)} (a renew's answer), not tuskr:epochSeconds ${Math.round((finding.settingMs ?? 0) / 1000)}: purchases count in the answer's; run ${set}`;
  }
  return `the service's epoch is ${epochText(finding.ms)} (a renew's answer), not a day: purchases count in it, and ${set} makes previews count in it too`;
}
