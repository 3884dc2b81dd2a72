import { LIMITS, PATCH_FIELDS, isPlainObject, jsonEqual } from "../../api";
import { changeLine, manifestChanges } from "./changes";
import { declaredValue, failureOwner, handedBack, ownDeclared, ownValues } from "./inputs";
import { earliestOf, firstPaths, handedOverEntries, handedOverText, packEntries, packHandedOver, pathText, recordedManifest, unpackEntries } from "./entries";
import { byContent, type FileValues, FolderInputError, type FolderEntry, folderFiles, manifestEntries, noFileWarning } from "./walk";
import { entriesByHash, entryInputs, entrySecrets, entryUrn } from "./entry";
import { folderEntryUrn, urnName } from "../engine/urns";
import { type StoredFileCore, type StoredFileDiff, secretsMoved } from "../file/core";
import { type Notice, type ProviderLog, info, mapText, warning } from "../engine/notice";
import { type PlanClock, type PropertyDiff, planHoldsUntil, putChange } from "../file/plan";
import { type DeclaredInputs, type StoredFileState, isUnknown } from "../file/schema";
import { type TuskrApiError, isTuskrApiError } from "../client/errors";
import { type CheckFailure, checkFailure, fieldAccepts, validateInputs } from "../file/validate";
import { redactor } from "../file/messages";
import { shows } from "../file/reason";
import { parseState } from "../file/state";
import { FOLDER_INPUT_FIELDS, type FolderInputs, type Manifest, type StoredFolderState } from "./schema";
import { fingerprint } from "../engine/fingerprint";
import { reclaimAfter, reclaimWhileSending } from "./memory";
import { ADVISE_PARTS_FROM, FILES_PER_PART, MAX_PARTS, partOf, partOfInputs, partsBefore, partsKey, recounted } from "./parts";
import { Moves, handedOverKept } from "./moves";
import type { Resting } from "./resting";
import * as path from "node:path";

/**
 * StoredFolder as one resource: each content is an entry StoredFileCore keeps exactly as a
 * StoredFile, recorded in this resource's state, so N files cost the engine one resource while
 * previews still name each file.
 */

/** Entries worked on at once (each request also waits for the client's own bound). */
const WORKERS = 8;
/** A preview names at most this many files one by one, then counts the rest. */
const LISTED_FILES = 200;
/** And says at most this many of its files' notices. */
const NOTICES = 10;

/** The warning a large folder kept as one resource gets at every preview. */
const partsAdvice = (label: string, files: number) =>
  `StoredFolder ${label}: ${files} files in one resource, so each change carries them all; \`parts: ${Math.min(MAX_PARTS, Math.ceil(files / FILES_PER_PART))}\` updates only the parts a change touches (docs/stored-folder.md)`;

/** How long a diff's verdicts serve the update after it (the engine calls them one after the other). */
const SETTLED_MS = 60_000;

/** What a diff found, kept for the update of the same step so that it plans only the entries that change. */
interface Settled {
  key: string;
  at: number;
  /** The moment the diff planned at: a verdict is carried only while the entry's plan holds since. */
  clock: PlanClock;
  recorded: Map<string, StoredFileState>;
  /** The contents whose recorded entry the diff found as declared: carried as they are. */
  unchanged: Set<string>;
  /** The contents whose entry another resource of the stack offered (folder/moves.ts): taken by the update. */
  movedIn: Set<string>;
  /** What the update records as `partsBefore` (folder/parts.ts). */
  partsBefore: number | undefined;
  /** Whether the update changes the count of parts: what it drops it then keeps as handed over. */
  recounted: boolean;
  /** What it handed over when the count last changed (`handedOver`), and when (`handedOverAt`). */
  handedOver: Map<string, StoredFileState>;
  handedOverAt: string | undefined;
}

/**
 * One step's olds and news as the engine sent them, as one digest, made once and only when asked:
 * a diff's verdicts serve only an update sent the same two. Each front door digests what it
 * received, before reading it.
 */
export function stepDigest(olds: unknown, news: unknown): () => string {
  let digest: string | undefined;
  return () => (digest ??= fingerprint([olds ?? null, news ?? null]));
}

/** A folder operation's request, as a front door hands it over (folder/inputs.ts: `folderInputsOf`). */
export interface StoredFolderRequest {
  inputs: FolderInputs;
  urn?: string;
  secretInputs: readonly string[];
  /** The step's `stepDigest`; without one, a diff keeps nothing and an update plans every entry. */
  sent?: () => string;
}

/** The folder name a message uses: the resource's name from its URN, else its path. */
const folderName = (urn: string | undefined, inputs: FolderInputs): string => JSON.stringify(urn ? urnName(urn) : String(inputs.path ?? ""));

/** The parts of one folder's key, its directory as this machine resolves it. */
const folderKey = (inputs: FolderInputs): string => partsKey({ ...inputs, path: path.resolve(String(inputs.path)) });

type Failed<T> = Array<{ item: T; error: unknown }>;

/**
 * Runs `work` on every item, `WORKERS` at a time, starting none once `stopped` says so; returns
 * the failures with their items, and how many items were never started.
 */
async function eachLimited<T>(
  items: readonly T[],
  stopped: (failed: Failed<T>) => boolean,
  work: (item: T) => Promise<void>,
): Promise<{ failed: Failed<T>; untried: number }> {
  const failed: Failed<T> = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length && !stopped(failed)) {
      const item = items[next++];
      await work(item).catch((error: unknown) => void failed.push({ item, error }));
    }
  };
  await Promise.all(Array.from({ length: Math.min(WORKERS, items.length) }, worker));
  return { failed, untried: items.length - next };
}

const anyFailed = (failed: readonly unknown[]): boolean => failed.length > 0;

/**
 * What a folder's failed run says: the files that failed, by reason (files with the same reason
 * together, each named by its path), and the files not sent because the service refused every
 * request or could not be reached (`refusal`: the client's latest evidence; no status, no answer).
 */
function failureText(failed: Failed<FolderEntry<unknown>>, untried: number, total: number, refusal?: TuskrApiError): string {
  const own = failed.filter(({ error }) => !(isTuskrApiError(error) && error.notSent));
  const held = failed.length - own.length + untried;
  const byReason = new Map<string, string[]>();
  for (const { item, error } of own) {
    const reason = isTuskrApiError(error) && error.detail !== undefined ? error.detail : error instanceof Error ? error.message : String(error);
    byReason.set(reason, [...(byReason.get(reason) ?? []), item.paths[0]]);
  }
  const listed = (items: readonly string[], between: string) =>
    `${items.slice(0, 3).join(between)}${items.length > 3 ? ` (and ${items.length - 3} more)` : ""}`;
  const reasons = [...byReason].map(([reason, paths]) => `${listed(paths, ", ")}: ${reason}`);
  const said: string[] = [];
  if (own.length > 0) said.push(`${own.length} of ${total} file(s) failed: ${listed(reasons, "; ")}`);
  if (held > 0) {
    const why = refusal?.status === undefined ? "the service cannot be reached" : "the service refuses every request";
    // The evidence is said once: with the failures when one shows it, else here.
    said.push(`${held} of ${total} file(s) not sent, as ${why}${own.length > 0 || !refusal ? "" : ` (${refusal.message})`}; the next \`pulumi up\` sends them`);
  }
  return said.join("; ");
}

export class StoredFolderCore {
  /** Each folder's last diff verdicts, by URN (the engine may diff several folders before it updates them). */
  private readonly settled = new Map<string, Settled>();
  /**
   * Each part's whole folder as its check walked it, by URN, kept for an update that changes the
   * count (`handedOver`) however long the engine takes to send it: the diff drops it otherwise.
   */
  private readonly folders = new Map<string, Map<string, string[]>>();
  /** A parted folder's walk, kept for its other parts' checks (one walk and hashing per step, not one per part). */
  private readonly walks = new Map<string, { at: number; left: number; groups: Map<string, string[]>; byPart: Array<Array<[string, string[]]>> }>();
  /** Entries a resource drops, for the resource of the stack that takes their contents. */
  private readonly moves = new Moves();

  constructor(
    private readonly files: StoredFileCore,
    private readonly log: ProviderLog,
  ) {}

  /** Keeps (or, given none, forgets) a folder's verdicts, and lets go of any past their minute. */
  private keepSettled(urn: string | undefined, settled: Settled | undefined): void {
    for (const [at, kept] of this.settled) if (Date.now() - kept.at > SETTLED_MS) this.settled.delete(at);
    if (settled) this.settled.set(urn ?? "", settled);
    else this.settled.delete(urn ?? "");
  }

  /** The folder's last diff verdicts, if that diff was sent these olds and news within the minute; taken once. */
  private takeSettled(req: StoredFolderRequest): Settled | undefined {
    const settled = this.settled.get(req.urn ?? "");
    this.keepSettled(req.urn, undefined);
    if (settled === undefined || req.sent === undefined || Date.now() - settled.at > SETTLED_MS) return undefined;
    return settled.key === req.sent() ? settled : undefined;
  }

  /** Whether, since this call, the client found the service refusing every request: a new entry would only fail after its own budget. */
  private refusedFromNow(): () => boolean {
    const before = this.files.serviceRefusal();
    return () => this.files.serviceRefusal() !== before;
  }

  /**
   * Walks the folder (never following links), hashes its files and checks each entry as a
   * StoredFile, naming the failing path's own or shared field. `news` is what `validatedInputs`
   * produced; its failures pass through. `olds` is read only if an entry declares a date.
   */
  check(
    olds: () => FolderInputs,
    news: { inputs: FolderInputs; failures: CheckFailure[] },
    secretInputs: readonly string[],
    urn?: string,
  ): { inputs: FolderInputs; failures: CheckFailure[] } {
    const { inputs, failures } = news;
    if (failures.length > 0) return { inputs, failures };
    // Not known yet (at preview, from another resource's output): walked once it is.
    if ((["path", "include", "exclude", "files", "parts", "part"] as const).some((f) => isUnknown(inputs[f]))) return { inputs, failures };
    const secret = (input: string) => secretInputs.includes(input);
    // Without a URN a folder is named by its path, which no message may show when it is secret.
    const label = urn || !secret("path") ? folderName(urn, inputs) : JSON.stringify("(a secret path)");
    // Warnings quote the folder's values (its path, its globs, the paths of `files`): secret ones are masked.
    const redact = redactor(inputs, secretInputs);
    const log: ProviderLog = (notice, about) => this.log(mapText(notice, redact), about);
    const walked = this.walked(label, inputs, secret, log, urn);
    if ("failure" in walked) return { inputs, failures: [walked.failure] };
    if (urn) this.folders.set(urn, walked.groups);
    const { part, parts } = partOfInputs(inputs);
    const manifest: Manifest = {};
    let kept = 0;
    for (const [hash, rels] of walked.own) {
      kept++;
      for (const rel of rels) manifest[rel] = hash;
    }
    const withManifest: FolderInputs = { ...inputs, manifest };
    if (parts > 1) {
      // (No key for no value: the engine's wire has no undefined.)
      const files = this.partFiles(inputs.files, manifest, walked.groups, part);
      if (files === undefined) delete withManifest.files;
      else withManifest.files = files;
    }
    // (Its own contents: the walk the parts share is the next part's still.)
    reclaimAfter(kept);
    // (The front door collects once it has made its answer of these inputs.)
    return { inputs: withManifest, failures: this.entryFailures(olds, withManifest, secretInputs, label, log, urn) };
  }

  /**
   * The folder's files by content, walked and hashed (never following a link); what a glob matched
   * that it should not is said, under the input it is about and without its value if that is secret.
   */
  private walked(
    label: string,
    inputs: FolderInputs,
    secret: (input: string) => boolean,
    log: ProviderLog,
    urn?: string,
  ): { groups: Map<string, string[]>; own: Iterable<[string, string[]]> } | { failure: CheckFailure } {
    const dir = String(inputs.path);
    const { part, parts } = partOfInputs(inputs);
    let walked: { groups: Map<string, string[]>; own: Iterable<[string, string[]]> };
    try {
      walked = this.walkedOnce(part, parts, folderKey(inputs), () =>
        byContent(dir, folderFiles(label, dir, inputs.include as string[] | undefined, inputs.exclude as string[] | undefined), LIMITS.uploadMaxBytes),
      );
    } catch (e) {
      if (e instanceof FolderInputError) return { failure: checkFailure(e.field, e.reason, secret(e.field)) };
      // The file system's own words (a file it could not read) name the file, and so the folder's path.
      const code = typeof (e as { code?: unknown })?.code === "string" ? ` (${(e as { code: string }).code})` : "";
      const said = shows(e instanceof Error ? e.message : String(e), `StoredFolder ${label}: a file of the folder could not be read${code}`);
      return { failure: checkFailure("path", [said], secret("path")) };
    }
    // What is said of the whole folder is said once, by its first part.
    if (part !== 0) return walked;
    const { groups } = walked;
    const paths = new Set([...groups.values()].flat());
    if (paths.size === 0) log(noFileWarning(label, dir, inputs.include, inputs.exclude), urn);
    if (parts === 1 && paths.size > ADVISE_PARTS_FROM) log(warning(partsAdvice(label, paths.size)), urn);
    for (const rel of Object.keys(inputs.files ?? {}).filter((r) => !paths.has(r))) {
      log(warning(`StoredFolder ${label}: files[${JSON.stringify(rel)}] names no file of ${dir} that the globs match; it is ignored`), urn);
    }
    return walked;
  }

  /**
   * A parted folder's walk, made by the first of its parts to be checked and kept for the others
   * (each takes it once, within the minute), with each content's part reckoned once for them all;
   * a lone resource's is not kept. A failed walk is not kept: each part says it. `own`: the
   * contents of `part`.
   */
  private walkedOnce(
    part: number,
    parts: number,
    id: string,
    walk: () => Map<string, string[]>,
  ): { groups: Map<string, string[]>; own: Iterable<[string, string[]]> } {
    if (parts <= 1) {
      const groups = walk();
      return { groups, own: groups };
    }
    for (const [k, kept] of this.walks) if (Date.now() - kept.at > SETTLED_MS) this.walks.delete(k);
    let kept = this.walks.get(id);
    if (kept) {
      if (--kept.left <= 0) this.walks.delete(id);
    } else {
      const groups = walk();
      const byPart = Array.from({ length: parts }, (): Array<[string, string[]]> => []);
      for (const content of groups) byPart[partOf(content[0], parts)].push(content);
      kept = { at: Date.now(), left: parts - 1, groups, byPart };
      this.walks.set(id, kept);
    }
    return { groups: kept.groups, own: kept.byPart[part] ?? [] };
  }

  /**
   * A part's own values of `files`: those of its paths, and (in the first part) those naming no
   * file, so that each part records only what its files declare and a change to one file's values
   * changes only its part.
   */
  private partFiles(files: FolderInputs["files"], manifest: Manifest, groups: Map<string, string[]>, part: number): FolderInputs["files"] {
    if (!isPlainObject(files)) return files;
    const walked = part === 0 ? new Set([...groups.values()].flat()) : undefined;
    const kept = Object.entries(files).filter(([rel]) => Object.hasOwn(manifest, rel) || (walked !== undefined && !walked.has(rel)));
    return kept.length > 0 ? Object.fromEntries(kept) : undefined;
  }

  /**
   * Each entry checked as a StoredFile is. A shared value refused for every file is reported once
   * as the folder's; otherwise the failure names the files, under the path's own or the shared
   * field. Entries whose paths declare nothing of their own declare the same values but their
   * names: those are judged once, and each name apart.
   */
  private entryFailures(
    olds: () => FolderInputs,
    withManifest: FolderInputs,
    secretInputs: readonly string[],
    label: string,
    log: ProviderLog,
    urn?: string,
  ): CheckFailure[] {
    const own = (withManifest.files ?? {}) as Record<string, FileValues>;
    // Each content's date as its entry declared it before (made only for a folder that declares one).
    let oldDates: Map<string, FolderEntry<unknown>> | undefined;
    const dateAsBefore = (hash: string, date: unknown): boolean => {
      if (date === undefined || date === null) return false;
      oldDates ??= entriesByHash(olds());
      return jsonEqual(declaredValue(oldDates.get(hash), "retainUntil"), date);
    };
    const entries = manifestEntries(withManifest);
    // The failures of the shared values, by whether a date is as before (the one thing that differs between such entries).
    const sharedOnly = new Map<boolean, CheckFailure[]>();
    const judged = entries.map((entry) => {
      for (const { path: rel, fields } of entry.notApplied) {
        log(
          warning(
            `StoredFolder ${label}: ${rel} has the same content as ${entry.paths[0]}: one entry, named and tagged as ${entry.paths[0]} declares; its files[${JSON.stringify(rel)}] values (${fields.join(", ")}) are not applied`,
          ),
          urn,
        );
      }
      const date = entry.values.retainUntil ?? undefined;
      // Dates declared as before are not judged again (see changeFailures, file/validate.ts).
      const asBefore: DeclaredInputs = dateAsBefore(entry.hash, date) ? { retainUntil: date as DeclaredInputs["retainUntil"] } : {};
      const shared = entry.paths.every((rel) => ownValues(withManifest, rel) === undefined) && fieldAccepts("name", entry.values.name);
      const known = shared ? sharedOnly.get(asBefore.retainUntil !== undefined) : undefined;
      if (known) return known;
      // The walk has just found each file regular, inside the folder, readable and within the limit: not looked at again.
      const secrets = entrySecrets(secretInputs, withManifest, entry);
      const failures = this.files.judge(asBefore, validateInputs(entryInputs(withManifest, entry, true), secrets), secrets);
      if (shared) sharedOnly.set(asBefore.retainUntil !== undefined, failures);
      return failures;
    });
    // Each content is claimed for this folder (once judged without failure): another resource declaring it is refused.
    const claimable = entries.filter((_, i) => judged[i].length === 0).map((entry) => entry.hash);
    const conflicts = urn ? this.files.claimFolder(urn, claimable, secretInputs.includes("path")) : new Map<string, CheckFailure>();
    const refused = new Map<string, { property: string; reason: string; owners: string[]; shared: boolean }>();
    entries.forEach((entry, i) => {
      const conflict = conflicts.get(entry.hash);
      for (const failure of conflict ? [conflict] : judged[i]) {
        const owned = failureOwner(failure, entry, own, withManifest);
        const previous = refused.get(owned.key);
        refused.set(owned.key, { ...owned, reason: previous?.reason ?? failure.reason, owners: [...(previous?.owners ?? []), owned.owner] });
      }
    });
    return [...refused.values()].map(({ property, reason, owners, shared }) => {
      const who = shared && owners.length === entries.length ? "" : `${owners[0]}${owners.length > 1 ? ` (and ${owners.length - 1} more file(s))` : ""}: `;
      return { property, reason: `${who}${reason}` };
    });
  }

  /**
   * What will change, file by file: paths added, changed or removed, and each entry's own changes
   * as a StoredFile's diff finds them (refusals fail the preview).
   */
  diff(_id: string, state: StoredFolderState, req: StoredFolderRequest, oldInputs: FolderInputs = {}): StoredFileDiff {
    return this.compare(state, req, oldInputs, true).diff;
  }

  /**
   * The diff, and what it read. Without `effects` it offers nothing, keeps and lets go of nothing
   * and says nothing, but returns what it would say: a verdict for `restingAfter`.
   */
  private compare(
    state: StoredFolderState,
    req: StoredFolderRequest,
    oldInputs: FolderInputs,
    effects: boolean,
  ): { diff: StoredFileDiff; clock?: PlanClock; recorded: Map<string, StoredFileState>; dropped: number; said: Notice[] } {
    const said: Notice[] = [];
    const say: ProviderLog = effects ? this.log : (notice) => void said.push(notice);
    const news = req.inputs;
    if (!isPlainObject(news.manifest))
      return { diff: { changes: true, replaces: [], deleteBeforeReplace: false, detailedDiff: {} }, recorded: new Map(), dropped: 0, said };
    const oldManifest = recordedManifest(state);
    const recorded = this.recordedEntries(state, oldManifest);
    reclaimAfter(recorded.size);
    const newManifest = news.manifest;
    const detailedDiff: Record<string, PropertyDiff> = {};
    // The declared values that changed: what an entry's own change comes from, unless it is a value changed outside the stack.
    const declaredChanges = FOLDER_INPUT_FIELDS.filter((field) => !jsonEqual(state[field] ?? undefined, news[field] ?? undefined));
    let entriesChange = false;
    // The entries as declared before (made only if an entry changes).
    let declaredEntries: Map<string, FolderEntry<unknown>> | undefined;
    const declaredAsBefore = (entry: FolderEntry<unknown>, field: string): boolean => {
      declaredEntries ??= entriesByHash({ ...state, manifest: oldManifest });
      const old = declaredEntries.get(entry.hash);
      return old !== undefined && jsonEqual(declaredValue(old, field), declaredValue(entry, field));
    };
    // Paths whose entry changes with its content and declared values as before, with what changes.
    const entryOnly = new Map<string, string[]>();
    // The contents whose entry is renamed (a removed or changed path's old content may stay, under another path).
    const renamedEntries = new Set<string>();
    // Each content's first path (what its entry is named after, unless declared otherwise).
    const firstPath = new Map<string, string>();
    // Each entry's notices (expiring, keep-alive due), gathered: a folder of thousands says a few, then counts the rest.
    const notices: Notice[] = [];
    const gather: ProviderLog = (notice) => void notices.push(notice);
    const clock = this.files.planClock();
    const differ = this.files.differ();
    const unchanged = new Set<string>();
    const movedIn = new Set<string>();
    const declared = manifestEntries(news);
    for (const entry of declared) firstPath.set(entry.hash, entry.paths[0]);
    // What this resource drops is offered before it takes anything: a content may move from it to a resource stepped after it.
    const dropped: Array<[string, StoredFileState]> = [];
    for (const [hash, entry] of recorded) if (!firstPath.has(hash)) dropped.push([hash, entry]);
    if (effects) this.moves.offer(dropped);
    // What it dropped when `parts` last changed, again: `up`s cut short or failing may not have reached the part that takes it.
    // Not a content that has left the folder since: its return is a new content, as any removed file's is.
    const handedAll = handedOverEntries(state);
    const walk = this.folders.get(req.urn ?? "");
    const handedOver = walk ? new Map([...handedAll].filter(([hash]) => walk.has(hash))) : handedAll;
    if (effects) this.moves.offer(handedOver, true);
    // The walk is kept for an update that hands over, or forgets what left the folder.
    if (effects && !recounted(state, news) && handedOver.size === handedAll.size) this.folders.delete(req.urn ?? "");
    for (const entry of declared) {
      let before = recorded.get(entry.hash);
      if (!before) {
        before = this.moves.peek(entry.hash);
        if (!before) continue;
        recorded.set(entry.hash, before);
        movedIn.add(entry.hash);
      }
      const d = differ(
        before.blobId ?? entry.hash,
        before,
        { inputs: entryInputs(news, entry), urn: entryUrn(req.urn, entry), secretInputs: entrySecrets(req.secretInputs, news, entry) },
        gather,
      );
      if (!d.changes) unchanged.add(entry.hash);
      if (d.changes) {
        entriesChange = true;
        const rel = entry.paths[0];
        for (const { field } of Object.values(d.detailedDiff)) {
          if (field === "name") renamedEntries.add(entry.hash);
          // A changed declared value is reported under its own key below. One declared as before
          // but still to be made (drift handed back by refresh, an unfinished `up`, a moved secret)
          // changes the entry under its first path.
          if (field !== "keepAliveEpochs" && !declaredAsBefore(entry, field)) continue;
          if ((PATCH_FIELDS as readonly string[]).includes(field) && handedBack(oldInputs, rel, field, before)) {
            const kind = ownDeclared(news, rel, field) === undefined ? "delete" : "update";
            putChange(detailedDiff, { field: "files", kind, inputDiff: true }, [{ quoted: rel }, field]);
          } else {
            putChange(detailedDiff, { field: "manifest", kind: "update", inputDiff: true }, [{ quoted: rel }]);
            entryOnly.set(rel, [...(entryOnly.get(rel) ?? []), field === "keepAliveEpochs" ? "keep-alive renewal due" : `${field} to make as declared`]);
          }
        }
      }
    }
    reclaimAfter(recorded.size);
    const lines: string[] = [];
    for (const [rel, what] of entryOnly) lines.push(`~ ${rel} (same content; its entry: ${[...new Set(what)].join(", ")})`);
    for (const change of manifestChanges(oldManifest, newManifest, (hash) => recorded.has(hash))) {
      putChange(detailedDiff, { field: "manifest", kind: change.kind, inputDiff: true }, [{ quoted: change.path }]);
      // A path's old content may stay, under another path: its entry is still kept (renamed when its name was this path's).
      const staysUnder = change.was !== undefined ? firstPath.get(change.was) : undefined;
      const stored = change.now !== undefined && recorded.has(change.now);
      const moved = change.now !== undefined && movedIn.has(change.now);
      lines.push(changeLine(change, { stored, moved, staysUnder, renamed: staysUnder !== undefined && renamedEntries.has(String(change.was)) }));
    }
    for (const field of declaredChanges) {
      putChange(detailedDiff, { field, kind: state[field] === undefined ? "add" : news[field] === undefined ? "delete" : "update", inputDiff: true });
    }
    const label = folderName(req.urn, news);
    for (const line of lines.slice(0, LISTED_FILES)) say(info(`StoredFolder ${label}: ${line}`), req.urn);
    if (lines.length > LISTED_FILES) say(info(`StoredFolder ${label}: … and ${lines.length - LISTED_FILES} more file(s)`), req.urn);
    for (const notice of notices.slice(0, NOTICES)) say(notice, req.urn);
    if (notices.length > NOTICES) say(warning(`StoredFolder ${label}: … and ${notices.length - NOTICES} more notice(s) like these about its files`), req.urn);
    // What it handed over is kept for a day, then forgotten by an update that sends nothing (as are those that left the folder).
    if (handedAll.size > 0 && !handedOverKept(state.handedOverAt, clock.nowMs)) {
      putChange(detailedDiff, { field: "handedOver", kind: "delete", inputDiff: false });
      say(
        info(`StoredFolder ${label}: ${handedAll.size} entries handed to other parts when \`parts\` changed, kept a day, now forgotten (no request)`),
        req.urn,
      );
    } else if (handedOver.size < handedAll.size) {
      putChange(detailedDiff, { field: "handedOver", kind: "update", inputDiff: false });
      say(
        info(`StoredFolder ${label}: ${handedAll.size - handedOver.size} entries it handed to other parts have left the folder: forgotten (no request)`),
        req.urn,
      );
    }
    // The folder's secret names alone changed: an update that sends nothing and records them.
    const secretsChange = secretsMoved(state.secretInputs, req.secretInputs);
    const changes = entriesChange || secretsChange || Object.keys(detailedDiff).length > 0;
    // Kept for the update that follows a change, if the epoch's facts did not move while planning (a state may teach the length).
    const after = this.files.planClock();
    const key = changes && after.epochMs === clock.epochMs && after.epochKnown === clock.epochKnown ? req.sent?.() : undefined;
    if (effects) {
      this.keepSettled(
        req.urn,
        key !== undefined
          ? {
              key,
              at: Date.now(),
              clock,
              recorded,
              unchanged,
              movedIn,
              partsBefore: partsBefore(state, news),
              recounted: recounted(state, news),
              handedOver,
              handedOverAt: state.handedOverAt ?? undefined,
            }
          : undefined,
      );
    }
    return { diff: { changes, replaces: [], deleteBeforeReplace: false, detailedDiff }, clock, recorded, dropped: dropped.length, said };
  }

  /**
   * After a write: what the next diff of `state` with these inputs would find, when that is nothing
   * to change (what it would say included), with the facts it rests on and the moment time alone
   * may undo it (the entries' epochs left: `planHoldsUntil`). The dynamic front door records it
   * (folder/resting.ts) so that an unchanged folder's diff need not read its entries.
   */
  restingAfter(state: StoredFolderState, req: StoredFolderRequest): Resting | undefined {
    // A part keeping what it handed over offers it at each diff: no verdict may skip that diff.
    if (typeof state.handedOver === "string") return undefined;
    let found: ReturnType<StoredFolderCore["compare"]>;
    try {
      found = this.compare(state, req, {}, false);
    } catch {
      return undefined;
    }
    // The moment its plans were made at: the verdict holds from then.
    const clock = found.clock;
    const after = this.files.planClock();
    if (!clock || found.diff.changes || found.dropped > 0 || after.epochMs !== clock.epochMs || after.epochKnown !== clock.epochKnown) return undefined;
    // A notice said once per process is not said again from a verdict.
    if (found.said.some((notice) => notice.once !== undefined)) return undefined;
    let until = Number.POSITIVE_INFINITY;
    const seen = new Set<number>();
    for (const entry of found.recorded.values()) {
      until = Math.min(until, planHoldsUntil(entry, clock));
      if (typeof entry.epochMsSeen === "number") seen.add(entry.epochMsSeen);
    }
    return {
      from: clock.nowMs,
      until,
      epochMs: clock.epochMs,
      epochKnown: clock.epochKnown,
      warnWithinEpochs: clock.warnWithinEpochs,
      seen: [...seen],
      said: found.said,
    };
  }

  /**
   * At a diff: whether the verdict `restingAfter` recorded at the last write holds now (the front
   * door has matched the state and inputs it was made for); if so, it says what that diff said. The
   * lengths its entries recorded are learnt as reading them would teach them.
   */
  rests(resting: Resting, urn: string | undefined): boolean {
    for (const ms of resting.seen) this.files.seenLength(ms);
    const now = this.files.planClock();
    const holds =
      now.epochKnown === resting.epochKnown &&
      now.epochMs === resting.epochMs &&
      now.warnWithinEpochs === resting.warnWithinEpochs &&
      now.nowMs >= resting.from &&
      now.nowMs < resting.until;
    if (holds) {
      // As a diff that finds nothing to do: no update follows to take a walk or a verdict.
      this.folders.delete(urn ?? "");
      this.keepSettled(urn, undefined);
      for (const notice of resting.said) this.log(notice, urn);
    }
    return holds;
  }

  /** Uploads or adopts each content's entry (a content stored already is not uploaded twice within the folder). */
  async create(req: StoredFolderRequest): Promise<{ id: string; state: StoredFolderState }> {
    const id = String(req.inputs.path);
    const state = await this.converge(id, () => ({}), req);
    return { id, state };
  }

  /**
   * Each entry brought to what is declared; new contents uploaded; removed ones forgotten (no
   * request). `before` is read only if this step's diff left no verdicts (at 100,000 entries, a
   * second).
   */
  async update(id: string, before: () => StoredFolderState, req: StoredFolderRequest): Promise<StoredFolderState> {
    return this.converge(id, before, req);
  }

  /** Refresh: each entry read (as a StoredFile's refresh); an entry gone leaves the state, its paths the manifest. */
  async read(id: string, before: StoredFolderState, urn?: string): Promise<{ id?: string; state?: StoredFolderState; inputs?: FolderInputs }> {
    // No state at all: `pulumi import`. A folder's entries are learnt by uploading its files, which an import must not do.
    if (before.path === undefined && before.entries === undefined) {
      throw new Error(
        `StoredFolder ${JSON.stringify(id)} cannot be imported: its entries are found by uploading, which an import must not do. Declare it and run \`pulumi up\`, or import each file as tuskr:index:StoredFile`,
      );
    }
    const recordedPaths = recordedManifest(before);
    const recorded = this.recordedEntries(before, recordedPaths);
    const fresh = new Map<string, StoredFileState>();
    // One failure fails the refresh: reading on would only cost requests.
    const named = firstPaths(recordedPaths);
    const { failed } = await eachLimited([...recorded], anyFailed, async ([hash, entry]) => {
      // By its entry's URN and first path, so its messages name the folder and the file.
      const read = await this.files.read(entry.blobId ?? hash, entry, urn && folderEntryUrn(urn, hash), named.get(hash));
      if (read.state) fresh.set(hash, read.state);
    });
    if (failed.length > 0) throw failed[0].error;
    const manifest = Object.fromEntries(Object.entries(recordedPaths).filter(([, hash]) => fresh.has(hash)));
    const state = this.assemble(before, before.secretInputs, manifest, fresh);
    if (typeof before.partsBefore === "number") state.partsBefore = before.partsBefore;
    // What it handed over is not its own to read: kept as it was, for the next diff to offer.
    if (typeof before.handedOver === "string") state.handedOver = before.handedOver;
    if (typeof before.handedOverAt === "string") state.handedOverAt = before.handedOverAt;
    if (typeof before.handedOverContents === "string") state.handedOverContents = before.handedOverContents;
    const declared = FOLDER_INPUT_FIELDS.filter((field) => before[field] !== undefined && before[field] !== null).map((field) => [field, before[field]]);
    const inputs = { manifest, ...Object.fromEntries(declared) } as FolderInputs;
    const drifted = this.drifted(fresh, manifest, before);
    if (Object.keys(drifted).length > 0) inputs.files = drifted;
    return { id, state, inputs };
  }

  /**
   * Per-file values changed outside the stack, handed back as refreshed inputs, because the engine
   * shows a dynamic resource's changes only as an input diff; this makes the next preview show what
   * `up` will restore. Secrets stay out.
   */
  private drifted(fresh: Map<string, StoredFileState>, manifest: Manifest, before: StoredFolderState): Record<string, FileValues> {
    const declared = (isPlainObject(before.files) ? before.files : {}) as Record<string, FileValues>;
    const out: Record<string, FileValues> = { ...declared };
    let any = false;
    // Against what is declared (not what the last refresh recorded: a second refresh finds the same).
    for (const entry of manifestEntries({ ...before, manifest })) {
      const now = fresh.get(entry.hash);
      if (!now) continue;
      const secret = new Set(entrySecrets(before.secretInputs ?? [], before, entry));
      for (const field of PATCH_FIELDS) {
        const value = declaredValue(entry, field);
        if (secret.has(field) || value === undefined || value === null || jsonEqual(value, now[field])) continue;
        out[entry.paths[0]] = { ...out[entry.paths[0]], [field]: now[field] ?? null };
        any = true;
      }
    }
    return any ? out : {};
  }

  private async converge(id: string, before: () => StoredFolderState, req: StoredFolderRequest): Promise<StoredFolderState> {
    const news = req.inputs;
    // The diff of this step judged every entry already: those it found as declared are carried, not planned again.
    const settled = this.takeSettled(req);
    const old = settled ? undefined : before();
    const recorded = settled?.recorded ?? this.recordedEntries(old ?? {});
    const countBefore = settled ? settled.partsBefore : partsBefore(old ?? {}, news);
    const handsOver = settled ? settled.recounted : recounted(old ?? {}, news);
    const inFolder = this.folderContents(req.urn, news);
    const handedBefore = settled ? settled.handedOver : handedOverEntries(old ?? {});
    const handedAt = settled ? settled.handedOverAt : (old?.handedOverAt ?? undefined);
    const holds = settled ? this.files.planStillHolds(settled.clock) : () => false;
    const entries = manifestEntries(news);
    this.takeMoved(recorded, entries, settled?.movedIn);
    // Each entry kept, by the content `check` saw (an upload sends only that content: `onlyPreviewedContent`).
    const done = new Map<string, StoredFileState>();
    const keep = (entry: FolderEntry<unknown>, state: StoredFileState) => void done.set(entry.hash, state);
    const wouldChange = this.files.changeTeller();
    // An entry whose plan sends nothing is kept as recorded here: only those that send go to the workers.
    const sending = entries.filter((entry) => {
      const old = recorded.get(entry.hash);
      if (old !== undefined && settled?.unchanged.has(entry.hash) && holds(old)) {
        keep(entry, old);
        return false;
      }
      if (old === undefined || wouldChange(old, entryInputs(news, entry), entrySecrets(req.secretInputs, news, entry)).changes) return true;
      keep(entry, old);
      return false;
    });
    const { failed, untried } = await eachLimited(sending, this.refusedFromNow(), async (entry) => {
      reclaimWhileSending();
      const entryReq = {
        inputs: entryInputs(news, entry),
        urn: entryUrn(req.urn, entry),
        secretInputs: entrySecrets(req.secretInputs, news, entry),
        onlyPreviewedContent: true,
      };
      const old = recorded.get(entry.hash);
      try {
        const plan = old ? wouldChange(old, entryReq.inputs, entryReq.secretInputs) : undefined;
        if (old && plan && !plan.replace) keep(entry, plan.changes ? await this.files.update(old.blobId ?? entry.hash, old, entryReq) : old);
        else keep(entry, (await this.files.create(entryReq)).state);
      } catch (e) {
        // A step that went through is recorded (a StoredFile's partial failure carries its state); otherwise the old entry stays as it was.
        const partial = (e as { properties?: unknown }).properties;
        if (isPlainObject(partial) && typeof partial.blobId === "string") keep(entry, parseState(partial));
        else if (old) keep(entry, old);
        throw e;
      }
    });
    // An entry not started stays as recorded.
    for (const entry of entries) if (!done.has(entry.hash) && recorded.has(entry.hash)) keep(entry, recorded.get(entry.hash)!);
    // The paths of the entries kept (a failed new content is not recorded: the next `up` sends it).
    const declared = news.manifest as Manifest;
    let whole = true;
    for (const rel in declared) if (!done.has(declared[rel])) whole = false;
    // Most steps keep every path: the declared map itself, not a copy of 100,000 paths.
    const manifest = whole ? declared : Object.fromEntries(Object.entries(declared).filter(([, hash]) => done.has(hash)));
    reclaimAfter(done.size);
    const state = this.assemble(news, req.secretInputs, manifest, done);
    if (countBefore !== undefined) state.partsBefore = countBefore;
    const failing = failed.length > 0 || untried > 0;
    // What it handed over before is kept within its day; an update that fails forgets nothing (its takers may not have run).
    const keepsHanded = failing || handedOverKept(handedAt, Date.now());
    if (handsOver || keepsHanded) {
      // What it drops as the count changes is kept for a day (folder/moves.ts), after what it kept.
      // Only contents still in the folder: a removed file's entry is not kept for its return.
      const declaredHashes = new Set(entries.map((entry) => entry.hash));
      const handed = new Map<string, StoredFileState>();
      for (const from of [...(keepsHanded ? [handedBefore] : []), ...(handsOver ? [recorded] : [])])
        for (const [hash, entry] of from) if (!declaredHashes.has(hash) && inFolder(hash)) handed.set(hash, entry);
      if (handed.size > 0) {
        state.handedOver = packHandedOver(handed);
        state.handedOverContents = handedOverText(handed.keys());
        // A count changed again starts the day again; otherwise it counts from when it first dropped them.
        const at = handsOver ? new Date(Date.now()).toISOString() : handedAt;
        if (at !== undefined) state.handedOverAt = at;
      }
    }
    reclaimAfter(done.size);
    if (failing) {
      const message = `StoredFolder ${folderName(req.urn, news)}: ${failureText(failed, untried, entries.length, this.files.serviceRefusal())}`;
      // One reason: the engine prints several as "N errors occurred", which counts neither the files nor those not sent.
      // Nothing stored by a create: nothing to record (the engine would keep an empty folder, its errors on it).
      if (done.size === 0 && recorded.size === 0) throw Object.assign(new Error(message), { reasons: [message] });
      throw Object.assign(new Error(message), { id, properties: state, reasons: [message] });
    }
    return state;
  }

  /**
   * Whether a content is in the folder as this step's check walked it (the walk is then let go);
   * without that walk, whether another part keeps it by the count (a file removed still counts).
   */
  private folderContents(urn: string | undefined, news: FolderInputs): (hash: string) => boolean {
    const walked = this.folders.get(urn ?? "");
    this.folders.delete(urn ?? "");
    if (walked) return (hash) => walked.has(hash);
    const { part, parts } = partOfInputs(news);
    return (hash) => partOf(hash, parts) !== part;
  }

  /**
   * The entries other resources of the stack dropped for contents this one declares and has not
   * recorded, taken into `recorded` (folder/moves.ts); `movedIn`, those this step's diff showed.
   */
  private takeMoved(recorded: Map<string, StoredFileState>, entries: ReadonlyArray<FolderEntry<unknown>>, movedIn: Iterable<string> = []): void {
    for (const hash of movedIn) this.moves.take(hash);
    for (const { hash } of entries) {
      if (recorded.has(hash)) continue;
      const moved = this.moves.take(hash);
      if (moved) recorded.set(hash, moved);
    }
  }

  /**
   * The folder's state: its declared inputs (`from`: as declared, or as recorded), the names of its
   * secret inputs, the manifest of what is stored (as one text), outputs by path, and each entry.
   */
  private assemble(
    from: FolderInputs | StoredFolderState,
    secretInputs: readonly string[] | null | undefined,
    manifest: Manifest,
    entries: Map<string, StoredFileState>,
  ): StoredFolderState {
    const state: StoredFolderState = {};
    for (const field of FOLDER_INPUT_FIELDS) if (from[field] !== undefined && from[field] !== null) state[field] = from[field];
    const blobIds: Record<string, string> = {};
    const urls: Record<string, string> = {};
    for (const [rel, hash] of Object.entries(manifest)) {
      const entry = entries.get(hash)!;
      if (entry.blobId) blobIds[rel] = entry.blobId;
      if (entry.url) urls[rel] = entry.url;
    }
    state.manifestText = pathText(manifest);
    state.blobIds = blobIds;
    state.urls = urls;
    const earliest = earliestOf([...new Set(Object.values(manifest))].map((hash) => entries.get(hash)?.expiresAt));
    if (earliest !== undefined) state.earliestExpiresAt = earliest;
    // What the maps and the manifest's text made goes before the entries are written (at 100,000, some 35 MB of peak).
    reclaimAfter(entries.size);
    // One JSON text, not a nested object: the engine carries, diffs and stores it as one value
    // (10,000 entries as nested properties cost it seconds on every step), and no one reads it but us.
    state.entries = packEntries(entries, { manifest, blobIds, urls });
    if (Array.isArray(secretInputs) && secretInputs.length > 0) state.secretInputs = [...secretInputs];
    return state;
  }

  /**
   * The recorded entries with their secret input names, from the folder's recorded inputs: with
   * `files` secret, an earlier release recorded every entry value as secret.
   */
  private recordedEntries(state: StoredFolderState, manifest = recordedManifest(state)): Map<string, StoredFileState> {
    const entries = unpackEntries(state.entries, { manifest, blobIds: state.blobIds ?? {}, urls: state.urls ?? {} });
    const secretInputs = state.secretInputs ?? [];
    if (secretInputs.includes("files")) {
      for (const declared of manifestEntries({ ...state, manifest })) {
        const entry = entries.get(declared.hash);
        if (entry) entry.secretInputs = entrySecrets(secretInputs, state, declared);
      }
    }
    return entries;
  }
}
