import { type PatchField, jsonEqual } from "../../api";
import type { ReceivedFile } from "../client/client";
import { movedStart } from "./purchases";
import { epochsBetween, retentionStartEpochs } from "./epoch";
import { label, shown } from "./messages";
import { fingerprint } from "../engine/fingerprint";
import type { PlanClock } from "./plan";
import type { DeclaredInputs, StoredFileState } from "./schema";
import { bookkeeping, observed } from "./state";

/**
 * What a refresh makes of the service's record, said nowhere and sent nowhere: whether another
 * base URL may speak for the file, what drifted, the state, and the inputs handed back.
 */

/**
 * Why `baseUrl` may not speak for a file the state says `before.serviceUrl` holds: another
 * service's entry of these bytes (another createdAt) would move the recorded start and expiry.
 */
export function otherServiceProblem(before: StoredFileState, file: Partial<ReceivedFile>, baseUrl: string, blobId: string): string | undefined {
  const [was, now] = [Date.parse(before.createdAt ?? ""), Date.parse(file.createdAt ?? "")];
  if (!before.serviceUrl || before.serviceUrl === baseUrl || Number.isNaN(was) || Number.isNaN(now) || was === now) return undefined;
  return `StoredFile ${label(before, blobId)}: ${baseUrl} holds another entry of this file than ${before.serviceUrl}, which holds the stack's: nothing recorded. Set tuskr:baseUrl back`;
}

/**
 * Each managed field the service holds otherwise than the stack set. The service records no owner
 * of an entry: a first difference may be a hand edit or another stack; the same value found again
 * after an `up` set it back is another declaration, and is said as one.
 */
export function drifted(
  before: StoredFileState,
  file: Partial<ReceivedFile>,
  managed: ReadonlySet<PatchField>,
  blobId: string,
  who = `StoredFile ${label(before, blobId)}`,
): string[] {
  const secrets = before.secretInputs ?? [];
  const lines: string[] = [];
  for (const field of managed) {
    const was = before[field];
    const now = file[field] ?? undefined;
    if (jsonEqual(was, now)) continue;
    const secret = secrets.includes(field);
    if (!secret && before.driftSeen?.[field] === fingerprint(now)) {
      lines.push(
        `${who}: ${field} is ${shown(now)} again after this stack's last up set ${shown(was)}: another stack declares it for this content, and each up undoes the other's; declare ${field} in one stack only`,
      );
      continue;
    }
    const change = secret ? " (a secret input: values not shown)" : `: ${shown(was)} → ${shown(now)}`;
    lines.push(
      `${who}: ${field} differs from what this stack set${change}; changed outside this stack, or another stack declares the same content; the next \`pulumi up\` sets it back`,
    );
  }
  return lines;
}

/**
 * The fingerprints still worth keeping: only of fields the stack manages, and none of a secret
 * input, since a hash of a short secret in state could be guessed back.
 */
export function keptDriftSeen(
  seen: StoredFileState["driftSeen"],
  managed: ReadonlySet<PatchField>,
  secrets: readonly string[] | null | undefined,
): Record<string, string> | undefined {
  const kept = Object.entries(seen ?? {}).filter(([field]) => managed.has(field as PatchField) && !secrets?.includes(field));
  return kept.length > 0 ? Object.fromEntries(kept) : undefined;
}

/** What a refresh found set otherwise than the stack set, per field, kept until found again. */
function driftSeen(before: StoredFileState, file: Partial<ReceivedFile>, managed: ReadonlySet<PatchField>): Record<string, string> | undefined {
  const out: Record<string, string> = { ...keptDriftSeen(before.driftSeen, managed, before.secretInputs) };
  for (const field of managed) {
    const now = file[field] ?? undefined;
    if (!jsonEqual(before[field], now) && !before.secretInputs?.includes(field)) out[field] = fingerprint(now);
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The state after a refresh: the record's fields, the bookkeeping carried, the retention start kept in place. */
export function refreshedState(
  before: StoredFileState,
  file: Partial<ReceivedFile>,
  managed: ReadonlySet<PatchField>,
  clock: PlanClock,
  where: { blobId: string; serviceUrl: string },
): StoredFileState {
  const moved = epochsBetween(before, file, clock);
  return {
    ...bookkeeping(before),
    ...observed(file, managed),
    blobId: where.blobId,
    retentionEpochs: before.retentionEpochs ?? 0,
    serviceUrl: where.serviceUrl,
    driftSeen: driftSeen(before, file, managed),
    // The retention start keeps its place: as many more epochs before the expiry as it moved.
    ...movedStart(before, moved, clock),
    retentionStartEpochs: retentionStartEpochs(before, clock) + moved,
  };
}

/**
 * The inputs a refresh hands back, as declared: content or blobId, the managed fields as the
 * service holds them (so the next preview names drift), and `retentionEpochs` only if declared.
 */
export function refreshedInputs(
  before: StoredFileState,
  state: StoredFileState,
  file: Partial<ReceivedFile>,
  managed: ReadonlySet<PatchField>,
): DeclaredInputs {
  const inputs: Record<string, unknown> = before.sourceHash ? { source: before.source } : { blobId: state.blobId };
  inputs.keepAlive = before.keepAlive;
  for (const field of managed) inputs[field] = file[field] ?? undefined;
  // A refresh must not make a declared `retentionEpochs: 0` look new, nor an omitted one look
  // declared. (States of earlier releases do not say: any non-zero count.)
  if (before.retentionDeclared ?? Boolean(state.retentionEpochs)) inputs.retentionEpochs = state.retentionEpochs;
  if (before.retainUntil) inputs.retainUntil = before.retainUntil;
  if (before.contentType) inputs.contentType = before.contentType;
  return inputs as DeclaredInputs;
}
