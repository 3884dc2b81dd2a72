import { z } from "zod";
import { LIMITS, blobIdLimitProblem, metadataLimitProblem, textLimitProblem } from "../../api";
import type * as pulumi from "@pulumi/pulumi";
import { asReceived } from "../client/wire";
import { UNKNOWN } from "../engine/markers";
import { limitReason, refusal, shows } from "./reason";
import { sourceProblem } from "./source";

/**
 * How each input is documented, once: the README's input table, the package schema's property
 * descriptions and the TypeScript docs all come from these (zod metadata on each field).
 */
export interface FieldDoc {
  /** What the field is, in one sentence. */
  description: string;
  /** Its type and limits, as a user writes it. */
  limit: string;
  /** What a change of it makes the provider do. */
  change: string;
  /** What omitting it means. */
  omitted: string;
  /** A change of it declares another file: the resource is replaced, never updated. */
  replaces?: true;
}
const documented = <T extends z.ZodType>(schema: T, doc: FieldDoc): T => schema.meta({ ...doc });

/** A field's documentation, from its schema. */
export function fieldDoc(schema: z.ZodType): FieldDoc | undefined {
  const meta = schema.meta() as Partial<FieldDoc> | undefined;
  return meta?.limit === undefined ? undefined : (meta as FieldDoc);
}

/** Whether a value is the one Pulumi puts in place of an input not known yet (at preview). */
export const isUnknown = (v: unknown): boolean => v === UNKNOWN;

/** Paths of `null` values inside a JSON value; a declared null cannot survive a merge patch. */
function nullPaths(value: unknown, at: string): string[] {
  if (value === null) return [at];
  // Arrays are replaced whole by a merge patch, so nulls inside them are stored as they are.
  if (Array.isArray(value)) return [];
  if (typeof value === "object") return Object.entries(value as object).flatMap(([k, v]) => nullPaths(v, `${at}.${k}`));
  return [];
}

/*
 * Each check that shows the value it refused says so in a part of its own (reason.ts): a secret
 * input's failure is then made without it.
 */

/** The contract's blobId rule (api/paths.ts), as a schema. */
const blobId = z.string({ error: "blobId is required and must be a string" }).check((ctx) => {
  const problem = blobIdLimitProblem(ctx.value);
  if (problem) ctx.issues.push(refusal(ctx.value, limitReason(problem, "blobId ")));
});

/** A text within the contract's limit, as api's `boundedText` checks it, with the length found said apart. */
const inputText = (field: string, max: number) =>
  z.string({ error: `${field} must be a string` }).check((ctx) => {
    const problem = textLimitProblem(field, ctx.value, max);
    if (problem) ctx.issues.push(refusal(ctx.value, limitReason(problem)));
  });

const metadata = z
  .record(z.string(), z.json(), { error: "metadata must be a JSON object (key → JSON value), not an array or a scalar" })
  .superRefine((value, ctx) => {
    const problem = metadataLimitProblem(value);
    if (problem) ctx.addIssue(refusal(value, limitReason(problem)));
    const nulls = nullPaths(value, "metadata");
    if (nulls.length > 0) {
      const where = shows(nulls[0], "a value in metadata");
      ctx.addIssue(refusal(value, [where, ` is null: under merge-patch semantics null means "remove", so it cannot be stored; omit the key instead`]));
    }
  });

/**
 * A whole number of epochs, at least `min` and at most `max` when given; each refusal names the
 * limit, the number found said apart.
 */
const epochNumber = (field: string, min: number, max?: number) =>
  z
    .number({ error: `${field} must be a number` })
    .check((ctx) => {
      const v = ctx.value;
      const rule = !Number.isSafeInteger(v)
        ? `${field} must be a whole number of epochs`
        : v < min
          ? `${field} must be >= ${min}`
          : max !== undefined && v > max
            ? `${field} must be at most ${max}, the service's horizon`
            : undefined;
      if (rule) ctx.issues.push(refusal(v, [rule, shows(` (got ${String(v)})`)]));
    })
    // Refuses nothing the check above lets through: it makes the package schema's type an integer.
    .int();

const retentionEpochs = epochNumber("retentionEpochs", 0);

/** An ISO 8601 date (`2027-01-31`, midnight UTC) or a time with its zone (`2027-01-31T12:00:00Z`, `…+02:00`). */
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

/** The time a `retainUntil` names (ms since the epoch), or undefined when it is not a valid ISO 8601 date or time with a zone. */
export function retainUntilMs(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const m = ISO_TIME.exec(value);
  if (!m) return undefined;
  // Date.parse rolls an impossible day over (2027-02-30 → March 2): the calendar date must be as written.
  const [, y, mo, d, h = "00", mi = "00", sec = "00"] = m;
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (day.getUTCFullYear() !== Number(y) || day.getUTCMonth() !== Number(mo) - 1 || day.getUTCDate() !== Number(d)) return undefined;
  if (Number(h) > 23 || Number(mi) > 59 || Number(sec) > 59) return undefined;
  const ms = Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value);
  return Number.isNaN(ms) ? undefined : ms;
}

/** What a refused text was, as a reason's value part: its start, quoted. */
const gotText = (text: string) => shows(`; got ${JSON.stringify(text.slice(0, 64))}`);

const retainUntil = z
  .string({ error: "retainUntil must be a string: an ISO 8601 date (2027-01-31) or a time with its zone (2027-01-31T12:00:00Z)" })
  .check((ctx) => {
    if (retainUntilMs(ctx.value) === undefined) {
      const rule = "retainUntil must be an ISO 8601 date (2027-01-31, read as midnight UTC) or a time with its zone (2027-01-31T12:00:00Z)";
      ctx.issues.push(refusal(ctx.value, [rule, gotText(ctx.value)]));
    }
  });

/** Longest content type accepted (what the service records as the file's mimeType). */
const CONTENT_TYPE_MAX_LENGTH = 255;
const TOKEN = "[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*";
/** `type/subtype`, optionally with parameters (`text/html; charset=utf-8`), as RFC 6838/9110 write it. */
// Visible ASCII, spaces and tabs only (a line break would end the upload part's header there).
const CONTENT_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*${TOKEN}=(?:${TOKEN}|"[ \\t!#-~]*"))*$`);
const contentType = z.string({ error: "contentType must be a string: a media type such as text/html" }).check((ctx) => {
  const v = ctx.value;
  if (v.length > CONTENT_TYPE_MAX_LENGTH) {
    ctx.issues.push(refusal(v, [`contentType must be at most ${CONTENT_TYPE_MAX_LENGTH} characters`, shows(` (got ${v.length})`)]));
  } else if (!CONTENT_TYPE.test(v)) {
    ctx.issues.push(refusal(v, ["contentType must be a media type, type/subtype with optional parameters (text/html, text/plain; charset=utf-8)", gotText(v)]));
  }
});

const epochCount = (field: string) => epochNumber(field, 1, LIMITS.maxEpochsAhead);

/**
 * Keep-alive: whenever an `up` finds fewer than `minRemainingEpochs` left, buy `renewEpochs`
 * (once, and never past the horizon). What it buys is counted in `keepAliveEpochs`, apart from
 * `retentionEpochs`, so the declared count stays exact.
 */
export const KeepAliveSchema = z
  .object(
    {
      minRemainingEpochs: epochCount("keepAlive.minRemainingEpochs").meta({ description: "Renew when an `up` finds fewer epochs than this left." }),
      renewEpochs: epochCount("keepAlive.renewEpochs").meta({ description: "How many epochs each keep-alive renewal buys (never past the horizon)." }),
    },
    { error: "keepAlive must be an object { minRemainingEpochs, renewEpochs }" },
  )
  .strict();
export type KeepAlive = z.infer<typeof KeepAliveSchema>;

/** The content to upload: a file or a text, as a Pulumi asset (the provider sees its wire form). */
const source = z.custom<pulumi.asset.FileAsset | pulumi.asset.StringAsset>().check((ctx) => {
  const problem = sourceProblem(ctx.value);
  if (problem) ctx.issues.push(refusal(ctx.value, problem));
});

const MiB = 1024 * 1024;
/**
 * The one definition of StoredFile's inputs, from which `StoredFileArgs`, `check`, the README table
 * and the package schema all derive. Exactly one of source and blobId; omitted fields are
 * unmanaged.
 */
export const StoredFileInputsSchema = z.object({
  source: documented(source.optional(), {
    description: "The content to upload: the file is uploaded on create, and its blobId becomes an output.",
    limit: `\`FileAsset\` or \`StringAsset\`, ≤ ${LIMITS.uploadMaxBytes / MiB} MiB; exactly one of \`source\` and \`blobId\``,
    change:
      "**replace** when the content changes (its sha256, computed at preview): a new upload, a new blob; the old file is left as it is, stored until its period ends",
    omitted: "—",
    replaces: true,
  }),
  blobId: documented(blobId.optional(), {
    description: "The id of a file already uploaded (what its upload returned), to adopt.",
    limit: `string, ≤ ${LIMITS.blobIdMaxLength} chars; exactly one of \`source\` and \`blobId\``,
    change: "**replace** (another file; the old one is left as it is)",
    omitted: "an output, with `source`",
    replaces: true,
  }),
  name: documented(inputText("name", LIMITS.nameMaxLength).optional(), {
    description: "The file's display name (with `source`, also the uploaded file's name).",
    limit: `string, ≤ ${LIMITS.nameMaxLength} chars`,
    change: "one `PATCH` (all changed fields in one request)",
    omitted: "unmanaged",
  }),
  tag: documented(inputText("tag", LIMITS.tagMaxLength).optional(), {
    description: "A label used for filtering.",
    limit: `string, ≤ ${LIMITS.tagMaxLength} chars`,
    change: "one `PATCH`",
    omitted: "unmanaged",
  }),
  metadata: documented(metadata.optional(), {
    description: "Free-form JSON metadata; the stored object is made exactly equal to it.",
    limit: `JSON object, ≤ ${LIMITS.metadataMaxKeys} keys, ≤ ${LIMITS.metadataMaxBytes / 1024} KiB as JSON, nested ≤ ${LIMITS.metadataMaxDepth} deep, no \`null\` values, no key named \`__proto__\` (refused: Pulumi's SDKs would drop it without a word)`,
    change: "one `PATCH`; the stored object ends **exactly** equal to the declared one (removed keys are sent as `null`, per JSON Merge Patch)",
    omitted: "unmanaged",
  }),
  contentType: documented(contentType.optional(), {
    description:
      "The type the file is served with (the upload's file part carries it; the service records it as `mimeType`). With `source` only: an adopted file keeps the type it was uploaded with.",
    limit: `media type (\`type/subtype\`, optional parameters), ≤ ${CONTENT_TYPE_MAX_LENGTH} chars`,
    change:
      "nothing can be sent: the service records a type at upload and has no way to change it for stored bytes (the same bytes are the same entry); the preview and the update say so, and `mimeType` keeps the type served",
    omitted: "detected from the file's name (its extension) by `mime-types`; `application/octet-stream` when unknown",
  }),
  retentionEpochs: documented(retentionEpochs.optional(), {
    description:
      "How long the file stays stored, in whole epochs of the service (about a day each; counted in the service's own epochs, whatever their length) **from the start of the epoch the resource was created in** (its upload for `source`, its adoption for `blobId`): the declared end.",
    limit: `integer ≥ 0; the declared end never past the ${LIMITS.maxEpochsAhead}-epoch horizon`,
    change:
      "buys only what the file lacks of the declared end (one `POST …/renew`; nothing when the file's expiry already reaches it, whoever bought it): purchases converge on the end, they never add up. With `source`, the upload itself stores the file for `retentionEpochs` epochs (no renew at create). A stack's first purchase, while it does not know the service's epoch, buys 1 epoch first to learn it. Lowering it buys nothing and returns nothing",
    omitted: "0",
  }),
  retainUntil: documented(retainUntil.optional(), {
    description:
      "A date the file stays stored until at least (ISO 8601: `2027-01-31` is midnight UTC at its start, or a time with its zone): a declared end, like `retentionEpochs`'s; with both, the later one counts. Files declared with the same `retainUntil` at different times all reach it.",
    limit: `ISO 8601 date or time with its zone; at most ${LIMITS.maxEpochsAhead - 1} epochs from now, checked at preview (the service sells ${LIMITS.maxEpochsAhead} epochs ahead of the start of its current epoch, which is not known before a file is read)`,
    change:
      "buys only what the file lacks of that date, rounded up to whole epochs of the service (one `POST …/renew`). Until the stack knows the service's epoch (a renew's answer, or `tuskr:epochSeconds`), an upload (`source`) carries only what the date needs in epochs of 28 days, and the first renew buys 1 epoch whose record shows the length, then the rest. Nothing when the expiry reaches it already. A date already passed buys nothing; moving it earlier buys nothing and returns nothing",
    omitted: "no end by date",
  }),
  keepAlive: documented(KeepAliveSchema.optional(), {
    description: "Renews automatically: whenever an `up` finds fewer than `minRemainingEpochs` left, it buys `renewEpochs`.",
    limit: `\`{ minRemainingEpochs, renewEpochs }\`, each 1–${LIMITS.maxEpochsAhead}`,
    change: "nothing by itself; an `up` that finds fewer than `minRemainingEpochs` left buys `renewEpochs` (a renew of its own, after the declared one)",
    omitted: "no keep-alive",
  }),
});
export type StoredFileInputs = z.infer<typeof StoredFileInputsSchema>;
/**
 * The inputs as the provider receives them once checked: each field valid, or (at preview) still
 * Pulumi's unknown; `source` in the engine's wire form of an asset.
 */
export type DeclaredInputs = {
  [K in Exclude<keyof StoredFileInputs, "source" | "metadata">]?: StoredFileInputs[K] | typeof UNKNOWN | null;
} & {
  source?: Record<string, unknown> | typeof UNKNOWN | null;
  metadata?: Record<string, unknown> | typeof UNKNOWN | null;
};

/** Input fields in declaration order; `blobId` changes replace, the rest update in place. */
export const INPUT_FIELDS = StoredFileInputsSchema.keyof().options;
/** Inputs whose change replaces the resource (marked on the field's schema). */
export const REPLACE_FIELDS = INPUT_FIELDS.filter((f) => fieldDoc(StoredFileInputsSchema.shape[f])?.replaces === true);
export type InputField = (typeof INPUT_FIELDS)[number];

/** Outputs that are not inputs: what the service reports and what the provider derives. */
const reportedShape = {
  url: z.string().nullish().meta({ description: "Where the file is served, as the service reports it." }),
  size: z.number().int().nullish().meta({ description: "Size in bytes." }),
  mimeType: z.string().nullish().meta({ description: "The type the file is served with, as the service recorded it at upload." }),
  createdAt: z.string().nullish().meta({ description: "When the file was uploaded, as the service reports it." }),
  expiresAt: z.string().nullish().meta({ description: "End of the paid storage period, as of the last read or write." }),
  remainingEpochs: z.number().int().nullish().meta({ description: "Whole epochs left, the current one included, as of the last read or write." }),
  keepAliveEpochs: z.number().int().nullish().meta({ description: "Epochs bought by keep-alive and confirmed by the service, apart from retentionEpochs." }),
};
/** The schema of each reported output, by name (the package schema's outputs derive from it). */
export const REPORTED_SCHEMAS: Readonly<Record<keyof typeof reportedShape, z.ZodType>> = reportedShape;
export const REPORTED_FIELDS = Object.keys(reportedShape) as Array<keyof typeof reportedShape>;

/**
 * What is recorded in state. Parsed leniently, every field optional and unknown fields kept,
 * because each release must read the state every earlier release wrote.
 */
export const StoredFileStateSchema = z
  .object({
    blobId: z.string().optional(),
    name: z.string().nullish(),
    tag: z.string().nullish(),
    metadata: asReceived(z.record(z.string(), z.unknown())).nullish(),
    /** The declared retentionEpochs, once the file's expiry reaches the end they require. */
    retentionEpochs: z.number().nullish(),
    /** The declared contentType (what the upload carried when declared then). */
    contentType: z.string().nullish(),
    /** The declared retainUntil, once the file's expiry reaches it. */
    retainUntil: z.string().nullish(),
    /** The keep-alive policy as last applied. */
    keepAlive: z.object({ minRemainingEpochs: z.number(), renewEpochs: z.number() }).nullish(),
    /** The uploaded content's SHA-256 (hex), for a file declared by `source`. */
    sourceHash: z.string().nullish(),
    ...reportedShape,
    /** Read from states of earlier releases (their retention start, ms after createdAt), never written. */
    retentionStartAfterCreated: z.number().nullish(),
    /** Read from states of earlier releases (their retention start as a time), never written. */
    retentionStart: z.string().nullish(),
    /**
     * The retention start as epochs before `expiresAt`, moved with every change to the expiry, so
     * the declared end compares epochs with epochs and no guess at the epoch's length enters.
     */
    retentionStartEpochs: z.number().int().nullish(),
    /**
     * While no answer has shown the epoch's length: a moment in the retention start's epoch, in ms
     * after createdAt (an emulated clock moves both alike). The start's count is then a guess;
     * counted from this once a length is seen.
     */
    retentionStartMomentMs: z.number().nullish(),
    /**
     * The service's epoch in milliseconds, as a renew's answer showed it to the stack: written on
     * every state, so each later `up` finds it (one service, one epoch; service/facts.ts).
     */
    epochMsSeen: z.number().positive().nullish(),
    /** Read from states of the release before (an upload's bounds on the length), never written. */
    epochMsAtLeast: z.number().positive().nullish(),
    /** Read from states of the release before, never written. */
    epochMsBelow: z.number().positive().nullish(),
    /**
     * A renew sent whose outcome is unknown (its answer lost): the next read settles it by the
     * record, so it is never bought again on a guess, and its move shows the length.
     */
    unconfirmedRenew: z.object({ epochs: z.number().int().positive(), fromExpiresAt: z.string() }).nullish(),
    /**
     * An upload sent, perhaps bought, whose answer named this entry without showing it holds the
     * bytes sent: the next `up` checks it again before anything is sent on it, and never uploads again.
     */
    unconfirmedUpload: z
      .object({
        created: z.boolean(),
        size: z.number().int().nonnegative(),
        filename: z.string(),
        sentAt: z.number(),
        sha256: z.string().optional(),
        epochs: z.number().int().positive(),
      })
      .nullish(),
    /** Read from states of earlier releases (the expiry their last purchase reached), never written. */
    purchasedExpiresAt: z.string().nullish(),
    /** Whether retentionEpochs is declared (rather than omitted, counted as 0). */
    retentionDeclared: z.boolean().nullish(),
    /** The inputs declared as secrets (names only), so that no message shows their values. */
    secretInputs: z.array(z.string()).nullish(),
    /** The service (its base URL) that holds the file: only its NOT_FOUND drops the file from the stack. */
    serviceUrl: z.string().nullish(),
    /**
     * Per managed field, the SHA-256 of a value a refresh found where this stack had set its own.
     * Found again after an `up` set it back, it is another declaration, not a passing edit.
     */
    driftSeen: z.record(z.string(), z.string()).nullish(),
  })
  .loose();
export type StoredFileState = z.infer<typeof StoredFileStateSchema>;
