import { PATCH_FIELDS, type PatchField } from "../../api";
import type { ReceivedFile } from "../client/client";
import { type PlanClock, remainingEpochs } from "./plan";
import { retentionStartEpochs, startMoment } from "./epoch";
import { type DeclaredInputs, INPUT_FIELDS, REPORTED_FIELDS, type StoredFileState, StoredFileStateSchema } from "./schema";

/**
 * State shaping, derived from the state schema: what the service reports, one derived count, and
 * bookkeeping carried through a refresh untouched.
 */

/** What the service reports about a file besides name/tag/metadata. */
const SERVICE_FIELDS = ["blobId", "url", "size", "mimeType", "createdAt", "expiresAt"] as const satisfies ReadonlyArray<keyof ReceivedFile>;
/** Recomputed at every write from the expiry and the clock. */
const DERIVED_FIELDS = ["remainingEpochs"] as const;

const notBookkeeping = new Set<string>([...SERVICE_FIELDS, ...PATCH_FIELDS, ...DERIVED_FIELDS]);
/** The state's own fields: every field the schema names that the service does not report. */
const BOOKKEEPING_FIELDS = StoredFileStateSchema.keyof().options.filter((f) => !notBookkeeping.has(f));

/**
 * Provider-only bookkeeping (keys, purchases, secret input names), recorded under `__<name>`
 * because Pulumi's diff display skips such keys, so no preview or update shows it.
 */
const HIDDEN_FIELDS = BOOKKEEPING_FIELDS.filter((f) => !(INPUT_FIELDS as readonly string[]).includes(f) && !(REPORTED_FIELDS as readonly string[]).includes(f));
const hiddenKey = (field: string) => `__${field}`;

/** The state as the engine records it: the bookkeeping under its hidden keys. */
export function hideBookkeeping(state: StoredFileState): Record<string, unknown> {
  const out: Record<string, unknown> = { ...state };
  for (const field of HIDDEN_FIELDS) {
    if (out[field] === undefined) continue;
    out[hiddenKey(field)] = out[field];
    delete out[field];
  }
  return out;
}

/**
 * Recorded state, read leniently: the bookkeeping under its hidden key or, as releases before
 * it wrote it, under its own name (the next write moves it); a field written in another shape
 * is dropped, not fatal.
 */
export function parseState(props: Record<string, unknown> | undefined): StoredFileState {
  const revealed: Record<string, unknown> = { ...props };
  for (const field of HIDDEN_FIELDS) {
    const hidden = revealed[hiddenKey(field)];
    delete revealed[hiddenKey(field)];
    if (hidden !== undefined) revealed[field] = hidden;
  }
  const parsed = StoredFileStateSchema.safeParse(revealed);
  return parsed.success ? parsed.data : {};
}

/** Each field's rule, as parseState applies them (the schema has no rule across fields; a field it does not name is kept as it is). */
const FIELD_RULES: Readonly<Record<string, { safeParse(value: unknown): { success: boolean; data?: unknown } }>> = StoredFileStateSchema.shape;

/**
 * A reader of many recorded states, each read as parseState reads it, that judges a field's value
 * once for the states that hold it in turn (a rule's verdict depends on the value alone): a
 * folder's 100,000 entries share most of theirs.
 */
export function stateReader(): (props: Record<string, unknown>) => StoredFileState {
  const last = new Map<string, { value: unknown; parsed: { success: boolean; data?: unknown } }>();
  return (props) => {
    const fields = Object.keys(props);
    // Bookkeeping under hidden keys, or a key that names the prototype: read the one way there is.
    if (fields.some((field) => field.startsWith("__"))) return parseState(props);
    const out: Record<string, unknown> = {};
    for (const field of fields) {
      const value = props[field];
      const rule = Object.hasOwn(FIELD_RULES, field) ? FIELD_RULES[field] : undefined;
      if (rule === undefined) {
        out[field] = value;
        continue;
      }
      let verdict = last.get(field);
      if (verdict === undefined || verdict.value !== value) {
        verdict = { value, parsed: rule.safeParse(value) };
        last.set(field, verdict);
      }
      if (!verdict.parsed.success) return {};
      out[field] = verdict.parsed.data;
    }
    return out as StoredFileState;
  };
}

/** The fields a refresh carries over as they are. */
export function bookkeeping(state: StoredFileState): StoredFileState {
  const out: Record<string, unknown> = {};
  for (const field of BOOKKEEPING_FIELDS) if (state[field] !== undefined) out[field] = state[field];
  return out as StoredFileState;
}

/**
 * The recorded view of a file. Only managed name/tag/metadata are recorded, so `read` can hand
 * refreshed values back as inputs and the next preview names what drifted.
 */
export function observed(file: Partial<ReceivedFile>, managed: ReadonlySet<PatchField>): Partial<StoredFileState> {
  const out: Record<string, unknown> = {};
  for (const key of SERVICE_FIELDS) if (file[key] !== undefined) out[key] = file[key];
  for (const key of PATCH_FIELDS) if (managed.has(key) && file[key] !== undefined) out[key] = file[key];
  return out;
}

/**
 * A record with what it leaves out taken from the state: the service documents only part of its
 * record, and a field not reported is not one removed (`null` is).
 */
export function withUnreported(file: Partial<ReceivedFile>, state: StoredFileState): Partial<ReceivedFile> {
  const out: Record<string, unknown> = { ...file };
  for (const key of [...SERVICE_FIELDS, ...PATCH_FIELDS]) if (out[key] === undefined && state[key] !== undefined) out[key] = state[key];
  return out as Partial<ReceivedFile>;
}

/** Managed fields: those declared (an omitted field is unmanaged). */
export const declaredFields = (props: DeclaredInputs | StoredFileState): Set<PatchField> =>
  new Set(PATCH_FIELDS.filter((f) => props[f] !== undefined && props[f] !== null));

/** Drops nulls/undefined so the state holds only fields that have a value. */
export function compact<T extends object>(state: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(state)) {
    if (v === undefined || v === null) continue;
    // A key named `__proto__` stays a key, as fromEntries keeps it, rather than setting the prototype.
    if (k === "__proto__") Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[k] = v;
  }
  return out as T;
}

/** How earlier releases recorded the retention start or the epoch's bounds: read, counted once the length is known, never written again. */
const EARLIER_FIELDS = ["retentionStartAfterCreated", "retentionStart", "purchasedExpiresAt", "epochMsAtLeast", "epochMsBelow"] as const;

/**
 * The state as recorded: compact, with the epochs left as of this call's clock and the length the
 * stack learnt (`learntMs`). Once the length is known a guessed start is counted from its moment,
 * which is then no longer needed.
 */
export function recorded(state: StoredFileState, clock: PlanClock, learntMs?: number): StoredFileState {
  const out: StoredFileState = { ...state, epochMsSeen: learntMs ?? state.epochMsSeen, remainingEpochs: remainingEpochs(state.expiresAt, clock) };
  if (clock.epochKnown && startMoment(state) !== undefined) {
    out.retentionStartEpochs = retentionStartEpochs(state, clock);
    out.retentionStartMomentMs = undefined;
    // Undefined rather than deleted, as below: compact drops them, and a delete per file slowed every later step.
    for (const field of EARLIER_FIELDS) out[field] = undefined;
  }
  // A count written, the expiry an earlier release's last purchase reached says nothing more.
  if (typeof out.retentionStartEpochs === "number") out.purchasedExpiresAt = undefined;
  out.epochMsAtLeast = undefined;
  out.epochMsBelow = undefined;
  return compact(out);
}
