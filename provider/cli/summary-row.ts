import { PATCH_FIELDS, isPlainObject } from "../../api";
import { UNKNOWN } from "../engine/markers";
import { type PlanClock, uploadEndsAtDate } from "../file/plan";
import type { DeclaredInputs } from "../file/schema";
import { type Phrase, say, values } from "./summary-phrase";

/**
 * The summary's model: a row per changed file or folder (what it changes, buys and sends), the
 * values the preview does not show, and the totals of what a merge sends.
 */

export interface Row {
  name: string;
  /** The step as the table names it: a forgotten read file is Pulumi's `discard`. */
  op: "create" | "update" | "replace" | "delete" | "import" | "discard";
  changes: Phrase[];
  epochs: number;
  keepAlive: number;
  newExpiry?: string;
  patch: boolean;
  /** The step uploads content (a create or replace with `source`). */
  upload?: boolean;
  /** The step adopts a file by reading it (an import, or a replace by one): nothing bought. */
  imported?: boolean;
  /** A folder's: its PATCHes and renews (a file's are one at most, said by `patch` and its epochs). */
  patches?: number;
  renews?: number;
  /** What it buys cannot be counted from the preview (a folder's, say why). */
  notCounted?: boolean;
  /** A value it may PATCH is not shown (secret, or known only at `up`): its PATCHes are not counted. */
  patchesHidden?: boolean;
  /** Keep-alive on new files: what it buys is decided on the expiry found. */
  keepAliveFound?: boolean;
  /** A folder's: the contents it uploads. */
  uploads?: number;
  /** Uploads whose end is a `retainUntil` date: each may need one more epoch, renewed after it. */
  toDate?: number;
}

/** What `pulumi preview --json` shows for a secret value; an input known only at `up` is the engine's unknown marker. */
export const SHOWN_SECRET = "[secret]";
export const holds = (v: unknown, marker: string): boolean =>
  v === marker || (Array.isArray(v) ? v.some((x) => holds(x, marker)) : isPlainObject(v) && Object.values(v).some((x) => holds(x, marker)));
/** The declared inputs a purchase follows: one not shown leaves the epochs uncounted. */
export const PURCHASE_FIELDS: readonly string[] = ["retentionEpochs", "retainUntil", "keepAlive"];

/** Which inputs a row could not compare: secret, or known only at `up`. */
export interface Hidden {
  secret: string[];
  unknown: string[];
}

/**
 * Recorded outputs and declared inputs without those the preview hides (secret or unknown): they
 * cannot be compared, and a recorded `"[secret]"` where an object belongs would make the state
 * unreadable.
 */
export function withoutHidden(olds: Record<string, unknown>, news: Record<string, unknown>) {
  const fields = [...new Set([...Object.keys(olds), ...Object.keys(news)])].filter((f) => !f.startsWith("__")).sort();
  const secret = fields.filter((f) => holds(olds[f], SHOWN_SECRET) || holds(news[f], SHOWN_SECRET));
  const unknown = fields.filter((f) => !secret.includes(f) && holds(news[f], UNKNOWN));
  const hidden = [...secret, ...unknown];
  const keep = (values: Record<string, unknown>) => Object.fromEntries(Object.entries(values).filter(([f]) => !hidden.includes(f)));
  return { olds: keep(olds), news: keep(news), secret, unknown, endHidden: hidden.some((f) => PURCHASE_FIELDS.includes(f)) };
}

/** Whether a value a PATCH sets is among those not shown. */
export const hidesPatch = ({ secret, unknown }: Hidden): boolean => [...secret, ...unknown].some((f) => (PATCH_FIELDS as readonly string[]).includes(f));

/** What a row says of the inputs it could not compare. */
export function hiddenNote({ secret, unknown }: Hidden, compared: boolean): Phrase[] {
  const not = compared ? ", not compared" : "";
  return [
    ...(secret.length > 0 ? [say`${values(secret)}: secret${not}`] : []),
    ...(unknown.length > 0 ? [say`${values(unknown)}: known only at \`up\`${not}`] : []),
  ];
}

/** A read file the program no longer reads: Pulumi drops it from the state, and the provider is not called. */
export const forgetRow = (name: string): Row => ({
  name,
  op: "discard",
  changes: [["no longer read by the program: forgotten from the state; no request"]],
  epochs: 0,
  keepAlive: 0,
  patch: false,
});

/** What an upload to a `retainUntil` date may add (the plan's rule: `uploadEndsAtDate`). */
export const DATE_TOP_UP =
  "up to 1 more epoch, by a renew after the upload when the service counts from the start of its current epoch (known only from the upload's answer); the date's epochs are renewed after the upload, counted in the length its answers show";

/** Whether a file's upload ends at its `retainUntil` date (1, said in `changes`) or not (0). */
export function uploadToDate(uploads: boolean, shown: { endHidden: boolean }, news: DeclaredInputs, clock: PlanClock, changes: Phrase[]): number {
  if (!uploads || shown.endHidden || !uploadEndsAtDate(news, clock)) return 0;
  changes.push([`to the \`retainUntil\` date: ${DATE_TOP_UP}`]);
  return 1;
}

/** What a merge sends and buys, over every row and the reads. */
export interface Totals {
  adopted: number;
  /** Undefined when no row uploads (the totals then do not mention uploads). */
  uploaded?: number;
  /** Said only when there are some (as uploads are), as `forgotten` and `read` are. */
  imported: number;
  updated: number;
  replaced: number;
  deleted: number;
  forgotten: number;
  read: number;
  patches: number;
  /** Some row may PATCH a value not shown. */
  patchesHidden: boolean;
  renews: number;
  epochs: number;
  /** Rows whose purchases are not counted (nor their renews). */
  notCounted: number;
  /** What the totals cannot count exactly. */
  caveats: string[];
}

/** The totals; `read` is the refresh and read steps, which have no row (a `--refresh` preview has one per file). */
export function totalsOf(rows: Row[], read: number, learnsLength = false): Totals {
  const count = (op: Row["op"]) => rows.filter((l) => l.op === op).length;
  // A row whose purchases are not counted adds none of its own, nor its renews.
  const counted = rows.filter((l) => !l.notCounted);
  return {
    adopted: rows.filter((l) => l.op === "create" && !l.upload).length,
    uploaded: rows.some((l) => l.upload) ? rows.filter((l) => l.upload).length : undefined,
    imported: rows.filter((l) => l.imported).length,
    updated: count("update"),
    replaced: count("replace"),
    deleted: count("delete"),
    forgotten: count("discard"),
    read,
    patches: rows.reduce((n, l) => n + (l.patches ?? (l.patch ? 1 : 0)), 0),
    patchesHidden: rows.some((l) => l.patchesHidden),
    // An upload buys its epochs in the upload itself: no renew is sent for it.
    // Learning the epoch's length splits the first purchase in two: one renew more.
    renews: renewsOf(counted) + (learnsLength && renewsOf(counted) > 0 ? 1 : 0),
    epochs: counted.reduce((n, l) => n + l.epochs + l.keepAlive, 0),
    notCounted: rows.length - counted.length,
    caveats: [...caveatsOf(rows), ...(learnsLength ? ["1 renew more, the first, to learn the service's epoch"] : [])],
  };
}

const renewsOf = (rows: Row[]): number => rows.reduce((n, l) => n + (l.renews ?? (!l.upload && l.epochs + l.keepAlive > 0 ? 1 : 0)), 0);

function caveatsOf(rows: Row[]): string[] {
  const counted = rows.filter((l) => !l.notCounted);
  const toDate = counted.reduce((n, l) => n + (l.toDate ?? 0), 0);
  return [
    ...(rows.some((l) => ((l.op === "create" || l.op === "replace") && !l.imported) || l.keepAliveFound)
      ? ["adopted files: declared epochs; keep-alive, if any, decides on the expiry it finds"]
      : []),
    ...(counted.some((l) => l.upload || (l.uploads ?? 0) > 0)
      ? ["uploads: the declared epochs, or only what the declared end lacks when the service already holds the content"]
      : []),
    ...(toDate ? [`up to ${toDate} more by renews after uploads to a \`retainUntil\` date`] : []),
  ];
}
