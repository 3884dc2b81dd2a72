import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { isPlainObject } from "../../api";
import { fingerprint } from "../engine/fingerprint";
import type { Notice } from "../engine/notice";
// The serialized provider the SDK adds to the outputs a write returns: not in what the write made.
import { PROVIDER_KEY } from "../engine/provider-key";

/**
 * The diff of an unchanged folder reads and plans every entry to find nothing to do: at 100,000
 * files, most of a preview. A write after which the diff would find nothing to do records that
 * verdict, with what the diff says, (StoredFolderCore.restingAfter) as the secret output
 * `resting` of either front door.
 * The next diff takes it only for the state and inputs it was made for (their fingerprint), from
 * the same code, with the same epoch facts, before time alone may change an entry's plan
 * (StoredFolderCore.rests); otherwise it reads every entry, as before.
 */

type Props = Record<string, unknown>;

/** The output that records the verdict. */
export const RESTING = "resting";

/** What the verdict rests on: the moment it was made, the first moment time may undo it, the epoch facts. */
export interface Resting {
  from: number;
  /** Infinity: time alone never undoes it (each entry expired, or of unknown expiry). */
  until: number;
  epochMs: number;
  epochKnown: boolean;
  warnWithinEpochs: number;
  /** The lengths the entries recorded (`epochMsSeen`), taught again as reading them would. */
  seen: number[];
  /** What the diff says (an expiry near, as its files' epochs left are until `until`): said again. */
  said: Notice[];
}

/** What a verdict is made for: the outputs as recorded (without the verdict), the inputs of the step, and the verdict itself. */
function madeFor(outputs: Props, news: Props, verdict: Props): string {
  const { [RESTING]: _resting, [PROVIDER_KEY]: _provider, ...recorded } = outputs;
  return fingerprint([recorded, news, verdict]);
}

let code: string | undefined;
/**
 * This provider's own code (its api/ and provider/ modules), fingerprinted once per process: a
 * verdict another release or build made is not taken.
 */
function codeFingerprint(): string {
  if (code !== undefined) return code;
  const root = path.resolve(__dirname, "..", "..");
  const ext = path.extname(__filename);
  const hash = createHash("sha256");
  try {
    for (const top of ["api", "provider"]) {
      const files = (fs.readdirSync(path.join(root, top), { recursive: true }) as string[]).filter((f) => f.endsWith(ext) && !f.endsWith(`.d${ext}`)).sort();
      for (const file of files)
        hash
          .update(file)
          .update("\0")
          .update(fs.readFileSync(path.join(root, top, file)))
          .update("\0");
    }
    code = hash.digest("hex");
  } catch {
    // Unreadable: no verdict is ever taken (every diff reads its entries).
    code = `unreadable ${Math.random()}`;
  }
  return code;
}

/** The text a write records: the verdict, the code that made it and what it was made for. */
export function restingRecord(resting: Resting, outputs: Props, news: Props): string {
  const { until, ...rest } = resting;
  const verdict = { ...rest, until: Number.isFinite(until) ? until : null, code: codeFingerprint() };
  return JSON.stringify({ ...verdict, madeFor: madeFor(outputs, news, verdict) });
}

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const isNotice = (v: unknown): v is Notice =>
  isPlainObject(v) && (v.severity === "info" || v.severity === "warning") && typeof v.text === "string" && v.once === undefined;

/** The verdict recorded among `olds`, if made by this code for these olds and news; anything unreadable, none. */
export function restingFor(olds: Props, news: Props): Resting | undefined {
  const text = olds[RESTING];
  if (typeof text !== "string") return undefined;
  let read: unknown;
  try {
    read = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isPlainObject(read)) return undefined;
  const { madeFor: made, ...verdict } = read;
  const { from, until, epochMs, epochKnown, warnWithinEpochs, seen, said } = verdict;
  if (!isCount(from) || !(until === null || isCount(until)) || !isCount(epochMs) || typeof epochKnown !== "boolean" || !isCount(warnWithinEpochs))
    return undefined;
  if (!Array.isArray(seen) || !seen.every(isCount) || !Array.isArray(said) || !said.every(isNotice)) return undefined;
  // Its own fields are in the fingerprint too: a verdict edited in the state is not taken.
  if (verdict.code !== codeFingerprint() || made !== madeFor(olds, news, verdict)) return undefined;
  return { from, until: until ?? Number.POSITIVE_INFINITY, epochMs, epochKnown, warnWithinEpochs, seen, said };
}
