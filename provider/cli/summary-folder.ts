import { manifestChanges } from "../folder/changes";
import { isPlainObject, jsonEqual } from "../../api";
import { ASSET_SIG, SIG_KEY } from "../engine/markers";
import { type PlanClock, keepAliveAfterUpload, planChange, uploadEndsAtDate, uploadEpochs } from "../file/plan";
import type { DeclaredInputs, StoredFileState } from "../file/schema";
import { fromOutputTexts, handedOverEntries, handedOverHashes, pathMap, recordedEntryCount, recordedManifest, unpackEntries } from "../folder/entries";
import { FOLDER_INPUT_FIELDS, SHARED_FIELDS } from "../folder/schema";
import { manifestEntries } from "../folder/walk";
import { partOfInputs, partsKey } from "../folder/parts";
import { handedOverKept } from "../folder/moves";
import { STORED_FOLDER_TYPES, isStoredFolderType } from "../engine/urns";
import { type Phrase, joined, say, value, values } from "./summary-phrase";
import type { RowStep } from "./summary-preview";
import { DATE_TOP_UP, PURCHASE_FIELDS, type Row, SHOWN_SECRET, forgetRow, hiddenNote, holds, withoutHidden } from "./summary-row";

/** Paths a folder row names one by one before it counts the rest. */
const FOLDER_PATHS_LISTED = 10;

/** A folder's shared values that no purchase follows: left out of its plan when not shown. */
const FOLDER_LOOKS: readonly string[] = SHARED_FIELDS.filter((f) => !PURCHASE_FIELDS.includes(f));

/** A one-resource folder's recorded entries by content, from the outputs the preview shows (none when they are secret there). */
function recordedEntries(outputs: Record<string, unknown> | undefined): Map<string, StoredFileState> {
  const recorded = fromOutputTexts(outputs ?? {});
  if (holds(recorded.entries, SHOWN_SECRET)) return new Map();
  return unpackEntries(recorded.entries, { manifest: recordedManifest(recorded), blobIds: pathMap(recorded.blobIds), urls: pathMap(recorded.urls) });
}

/** The service's epochs a one-resource folder's recorded entries carry (each learnt by the stack), where the preview shows them. */
export function folderEpochs(outputs: Record<string, unknown> | undefined): unknown[] {
  return [...recordedEntries(outputs).values()].map((e) => e.epochMsSeen);
}

/**
 * The contents moving between the parts of each folder kept in `parts`, by the parts' key: the
 * entries the updated parts drop, and those a part stepped after the dropping one takes (`after`:
 * whether the first URN depends on the second; TypeScript's parts, which depend each on the one
 * before only in an `up` once the count has changed, by their numbers). The `up` hands those over (folder/moves.ts): not
 * uploaded, nothing bought that they have.
 */
export interface PartMoves {
  /** Each content dropped, with its entry where the preview shows it (a dynamic part's entries are secret there). */
  offered: Map<string, StoredFileState | undefined>;
  taken: Set<string>;
  /** A part offers again what it handed over when `parts` last changed, which the preview keeps secret, and no record says which contents. */
  hidden: boolean;
}

/** A part the preview leaves as it is, still keeping what it handed over when `parts` changed (for a day): its diff offers that. */
export interface Keeper {
  urn: string;
  inputs: Record<string, unknown>;
  outputs: Record<string, unknown>;
}

type PreviewState = { type?: string; custom?: boolean; inputs?: Record<string, unknown>; outputs?: Record<string, unknown> };

/** The folder parts a preview leaves as they are that still keep what they handed over. */
export function keepersOf(steps: ReadonlyArray<{ op: string; urn: string; oldState?: PreviewState; newState?: PreviewState }>): Keeper[] {
  return steps.flatMap((s) =>
    s.op === "same" &&
    isStoredFolderType(s.newState?.type) &&
    s.newState?.custom !== false &&
    s.newState?.inputs &&
    s.oldState?.outputs?.handedOver !== undefined
      ? [{ urn: s.urn, inputs: s.newState.inputs, outputs: s.oldState.outputs }]
      : [],
  );
}

export function partMoves(
  steps: ReadonlyArray<RowStep>,
  after: (urn: string, before: string) => boolean,
  keepers: ReadonlyArray<Keeper> = [],
): Map<string, PartMoves> {
  const moves = new Map<string, PartMoves>();
  const poolOf = (key: string): PartMoves => {
    if (!moves.has(key)) moves.set(key, { offered: new Map(), taken: new Set(), hidden: false });
    return moves.get(key)!;
  };
  const from = new Map<string, { urn: string; part: number }>();
  // Its entries where the preview shows them; else the contents it recorded as handed over, their entries unknown.
  const offerHandedOver = (key: string, at: { urn: string; part: number }, outputs: Record<string, unknown> | undefined, now: ReadonlySet<string>) => {
    const read = fromOutputTexts(outputs ?? {});
    const secret = holds(outputs?.handedOver, SHOWN_SECRET);
    const entries = secret ? new Map<string, StoredFileState>() : handedOverEntries(read);
    const hashes = secret ? handedOverHashes(read) : [...entries.keys()];
    const pool = poolOf(key);
    if (hashes === undefined) pool.hidden = true;
    for (const hash of hashes ?? []) {
      if (from.has(hash)) continue;
      pool.offered.set(hash, entries.get(hash));
      from.set(hash, at);
      // One it declares again (`parts` lowered within the day) it takes back itself.
      if (now.has(hash)) pool.taken.add(hash);
    }
  };
  const taking: Array<[string, { urn: string; part: number; dynamic: boolean }, string[]]> = [];
  for (const step of steps) {
    if (step.kind !== "folder" || (step.action !== "create" && step.action !== "update")) continue;
    const inputs = step.newState.inputs;
    if (partOfInputs(inputs).parts <= 1) continue;
    const key = partsKey(inputs);
    const urn = step.newState.urn ?? "";
    const { part } = partOfInputs(inputs);
    const pool = poolOf(key);
    const now = new Set(Object.values(pathMap(inputs.manifest)));
    const had = new Set(Object.values(step.action === "update" ? manifestBefore(step.oldState) : {}));
    taking.push([key, { urn, part, dynamic: step.newState.type === STORED_FOLDER_TYPES.dynamic }, [...now].filter((hash) => !had.has(hash))]);
    if (step.action !== "update") continue;
    // What it stored, by the manifest its outputs record (shown even when the entries are not).
    const entries = recordedEntries(step.oldState.outputs);
    for (const hash of new Set(Object.values(recordedManifest(fromOutputTexts(step.oldState.outputs ?? {}))))) {
      if (now.has(hash)) continue;
      pool.offered.set(hash, entries.get(hash));
      from.set(hash, { urn, part });
    }
    // What it handed over when `parts` last changed, offered again (where the preview shows it).
    offerHandedOver(key, { urn, part }, step.oldState.outputs, now);
  }
  for (const keeper of keepers) {
    if (partOfInputs(keeper.inputs).parts <= 1) continue;
    offerHandedOver(
      partsKey(keeper.inputs),
      { urn: keeper.urn, part: partOfInputs(keeper.inputs).part },
      keeper.outputs,
      new Set(Object.values(pathMap(keeper.inputs.manifest))),
    );
  }
  for (const [key, taker, hashes] of taking) {
    const pool = moves.get(key)!;
    for (const hash of hashes) {
      const dropper = from.get(hash);
      if (dropper && (taker.dynamic ? taker.part > dropper.part : after(taker.urn, dropper.urn))) pool.taken.add(hash);
    }
  }
  return moves;
}

/** The manifest the last run compared (its inputs: a map, or its text or parts from the dynamic resource), else the one its outputs record. */
function manifestBefore(oldState: { inputs?: Record<string, unknown>; outputs?: Record<string, unknown> } | undefined): Record<string, string> {
  const compared = oldState?.inputs?.manifest;
  return typeof compared === "string" || isPlainObject(compared) ? pathMap(compared) : recordedManifest(fromOutputTexts(oldState?.outputs ?? {}));
}

/**
 * What a one-resource folder's entries buy and patch, planned as its `up` would from the recorded
 * expiry (the `up` rereads it). When the preview hides what the epochs need, say why.
 */
function folderPurchases(
  outputs: Record<string, unknown> | undefined,
  declared: Record<string, unknown>,
  clock: PlanClock,
  movedIn: Map<string, StoredFileState | undefined>,
) {
  const recorded = fromOutputTexts(outputs ?? {});
  if (holds(recorded.entries, SHOWN_SECRET)) return { why: ["its recorded entries are secret in the preview"] };
  if ([...movedIn.values()].includes(undefined)) return { why: ["the entries it takes from another part are secret in the preview"] };
  const shown = withoutHidden({}, declared);
  const decisive = [...shown.secret, ...shown.unknown].filter((f) => !FOLDER_LOOKS.includes(f));
  if (decisive.length > 0) return { why: say`${values(decisive)} ${shown.unknown.includes(decisive[0]) ? "known only at `up`" : "secret"}` };
  // A folder created now has none; one recorded before has them (an empty folder's too).
  if (outputs && recordedEntryCount(recorded.entries) === undefined) return { why: ["its recorded entries are not in the preview"] };
  const entries = recordedEntries(outputs);
  const out = { epochs: 0, keepAlive: 0, renews: 0, patches: 0, newKeptAlive: 0, newRenewed: 0, toDate: 0, shown };
  for (const entry of manifestEntries(shown.news)) {
    const inputs = { ...entry.values, source: { [SIG_KEY]: ASSET_SIG, hash: entry.hash } } as DeclaredInputs;
    const before = entries.get(entry.hash) ?? movedIn.get(entry.hash);
    const plan = before ? planChange(before, inputs, clock) : undefined;
    if (!plan || plan.replace) {
      out.epochs += Math.max(uploadEpochs(inputs, clock), 1);
      // Keep-alive right after the upload, on the expiry it answers: counted when that is known.
      const kept = keepAliveAfterUpload(inputs, clock);
      if (kept?.known) {
        out.keepAlive += kept.epochs;
        if (kept.epochs > 0) {
          out.renews++;
          out.newRenewed++;
        }
      } else if (kept) out.newKeptAlive++;
      if (uploadEndsAtDate(inputs, clock)) out.toDate++;
      continue;
    }
    out.epochs += plan.retentionIncrease;
    out.keepAlive += plan.keepAliveEpochs;
    if (plan.retentionIncrease + plan.keepAliveEpochs > 0) out.renews++;
    if (plan.patch) out.patches++;
  }
  return out;
}

/** The paths added (+), changed (~) and removed (-) between two manifests, the first few listed. */
function pathMarks(before: Record<string, string>, after: Record<string, string>) {
  const changes = manifestChanges(before, after);
  const marks: Phrase[] = (["add", "update", "delete"] as const).flatMap((kind) =>
    changes.filter((c) => c.kind === kind).map((c): Phrase => [MARK[kind], value(c.path)]),
  );
  const more = marks.length > FOLDER_PATHS_LISTED ? ` … (${marks.length - FOLDER_PATHS_LISTED} more)` : "";
  return { count: marks.length, listed: say`${joined(marks.slice(0, FOLDER_PATHS_LISTED), " ")}${more}` };
}
const MARK = { add: "+", update: "~", delete: "-" } as const;

/**
 * What changes when no path did: a declared value, the entries handed over when `parts` last
 * changed forgotten, or (declared as before) its entries brought to what is declared.
 */
function valuesChange(
  olds: Record<string, unknown> | undefined,
  news: Record<string, unknown>,
  outputs: Record<string, unknown> | undefined,
  clock: PlanClock,
): Phrase {
  const changedValues = olds ? FOLDER_INPUT_FIELDS.filter((f) => !jsonEqual(olds[f] ?? undefined, news[f] ?? undefined)) : [];
  if (!olds || changedValues.length > 0) return say`values changed${changedValues.length > 0 ? say`: ${values(changedValues)}` : ""}`;
  if (outputs?.handedOver === undefined) return ["entries brought to what is declared (a keep-alive renewal, or what an earlier `up` did not finish)"];
  if (!handedOverKept(outputs.handedOverAt, clock.nowMs)) return ["the entries it handed to other parts when `parts` changed, kept a day, now forgotten"];
  return ["entries brought to what is declared (a keep-alive renewal, what an earlier `up` did not finish, or a content it handed over that left the folder)"];
}

/** What a row says of its purchases beyond the counts. */
function purchaseNotes(bought: ReturnType<typeof folderPurchases>, compared: boolean): Phrase[] {
  if ("why" in bought) return [say`epochs not counted: ${bought.why}`];
  return [
    ...hiddenNote(bought.shown, compared),
    ...(bought.newRenewed ? [[`keep-alive: ${bought.newRenewed} new file(s) renewed right after the upload (too few epochs left)`]] : []),
    ...(bought.newKeptAlive ? [[`keep-alive on ${bought.newKeptAlive} new file(s) (what it buys depends on the expiry found)`]] : []),
    ...(bought.toDate ? [[`${bought.toDate} upload(s) to the \`retainUntil\` date: ${DATE_TOP_UP}`]] : []),
  ];
}

/**
 * A one-resource folder's row: its files added, changed and removed, from the manifests (what the
 * preview compares), and what its entries buy. Uploads are the added and changed contents, but
 * for those another part of the folder hands over (`partMoves`).
 */
export function folderRow(step: Extract<RowStep, { kind: "folder" }>, clock: PlanClock, allMoves = new Map<string, PartMoves>()): Row {
  const { name } = step;
  if (step.action === "delete") {
    return { name, op: "delete", changes: [["folder no longer managed; no request, its files keep their periods"]], epochs: 0, keepAlive: 0, patch: false };
  }
  if (step.action === "forget") return forgetRow(name);
  const created = step.action === "create";
  const oldState = created ? undefined : step.oldState;
  const before = manifestBefore(oldState);
  const moves = allMoves.get(partsKey(step.newState.inputs));
  const after = pathMap(step.newState.inputs.manifest);
  const news = { ...step.newState.inputs, manifest: after };
  const marks = pathMarks(before, after);
  const contents = new Set(Object.values(before));
  const added = new Set(Object.values(after).filter((h) => !contents.has(h)));
  // Contents another part hands over are not uploaded; those this part hands over are said so.
  const movedIn = new Map([...added].flatMap((hash) => (moves?.taken.has(hash) ? [[hash, moves.offered.get(hash)] as const] : [])));
  const kept = new Set(Object.values(after));
  const movedOut = [...contents].filter((hash) => !kept.has(hash) && moves?.taken.has(hash)).length;
  const uploads = added.size - movedIn.size;
  // Some of those may be handed over by a part whose handed-over entries the preview keeps secret.
  const mayMove = uploads > 0 && moves?.hidden === true;
  const what = marks.count ? marks.listed : valuesChange(oldState?.inputs, news, oldState?.outputs, clock);
  const bought = mayMove ? { why: ["another part hands over entries the preview keeps secret"] } : folderPurchases(oldState?.outputs, news, clock, movedIn);
  const moved = [
    ...(movedIn.size ? [`${movedIn.size} content(s) moved in from another part, no upload`] : []),
    ...(movedOut ? [`${movedOut} content(s) moved to another part`] : []),
  ].join("; ");
  const changes = [
    say`folder: ${Object.keys(after).length} file(s); ${what}${uploads ? `; ${uploads} upload(s)${mayMove ? " at most" : ""}` : ""}${moved ? `; ${moved}` : ""}`,
    ...purchaseNotes(bought, !created),
  ];
  // Counted as uploaded when created (as a file is), but for a new part that only takes contents handed over
  // (adopted); an update's uploads are in its row.
  const row = { name, op: created ? "create" : "update", changes, upload: created && (uploads > 0 || movedIn.size === 0), uploads } as const;
  // Nothing of its entries is planned: neither what they buy nor what they PATCH.
  if ("why" in bought) return { ...row, epochs: 0, keepAlive: 0, patch: false, notCounted: true, patchesHidden: true };
  return {
    ...row,
    epochs: bought.epochs,
    keepAlive: bought.keepAlive,
    patch: bought.patches > 0,
    patches: bought.patches,
    renews: bought.renews,
    patchesHidden: bought.shown.secret.length + bought.shown.unknown.length > 0,
    keepAliveFound: bought.newKeptAlive > 0,
    toDate: bought.toDate,
  };
}
