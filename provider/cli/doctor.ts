import { createHash, randomBytes } from "node:crypto";
import { ErrorEnvelopeSchema, IDEMPOTENCY_KEY_HEADER, PATHS, filePath } from "../../api";
import { redactString } from "../client/errors";
import { apiKeyProblem, headerKey, insecureBaseUrlProblem } from "../client/urls";
import { ReadFileSchema, UploadAnswerSchema } from "../client/wire";
import { CONFIG_KEYS } from "../config/settings";
import { ASSUMPTIONS, type AssumptionId } from "../service/assumptions";
import { ASSUMED, type DuplicateUpload, type IdempotencyKeys } from "../service/facts";

/**
 * `pulumi-tuskr doctor`: what a service does where the contract is silent, checked against what
 * the provider assumes (service/assumptions.ts) and what the stack's settings say. Free requests
 * only, unless `spend` allows a stated, tiny purchase. Every request has a deadline; none is
 * retried (a purchase must not be sent twice on a guess).
 */

type Verdict = "as assumed" | "differs" | "not measured";

interface DoctorCheck {
  id: AssumptionId;
  verdict: Verdict;
  /** What the service did, in a phrase (no key, no value of the user's). */
  seen: string;
}

export interface DoctorReport {
  baseUrl: string;
  /** The service's epoch in seconds, as a renew of one epoch moved an expiry; null when not measured. */
  epochSeconds: number | null;
  duplicateUpload: DuplicateUpload | null;
  idempotencyKeys: IdempotencyKeys | null;
  checks: DoctorCheck[];
  /** What was bought: uploads (of `bytes` each, for one epoch), renews (of one epoch). */
  bought: { uploads: number; renews: number; bytes: number };
  /** The settings that keep what was learnt. */
  configLines: string[];
  /** 0: as the provider assumes or the settings say; 1: it contradicts them; 2: could not run. */
  exitCode: 0 | 1 | 2;
  /** Why it could not run (exit 2). */
  problem?: string;
}

export interface DoctorOptions {
  apiKey?: string;
  baseUrl: string;
  allowInsecureHttp?: boolean;
  /** May buy the stated budget: two uploads of SPEND_BYTES for one epoch, one renew of one epoch. */
  spend?: boolean;
  /** A file that exists, read (GET, its url) for free. */
  blobId?: string;
  /** The stack's settings, as `pulumi config --json` gives them (only those doctor compares). */
  settings?: { epochSeconds?: number; idempotencyKeys?: IdempotencyKeys };
  timeoutMs?: number;
  /** Said before anything is bought (the budget), and as each step ends. */
  say?: (line: string) => void;
}

/** What `--spend` may buy, at most: stated before anything is sent. */
const SPEND_BYTES = 64;
export const SPEND_TEXT = `at most 2 uploads of a ${SPEND_BYTES}-byte file for 1 epoch each and 1 renew of 1 epoch of it (the first upload is sent twice under one Idempotency-Key: a service that honours it sells nothing the second time)`;

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

/** One request with a deadline on the whole answer; a network failure is `undefined`. */
async function request(url: string, init: RequestInit, timeoutMs: number): Promise<Answer | undefined> {
  try {
    const res = await fetch(url, { ...init, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  } catch {
    return undefined;
  }
}

const keysOf = (v: unknown): string[] => (v && typeof v === "object" && !Array.isArray(v) ? Object.keys(v) : []);
const envelopeCode = (a: Answer): string | undefined => {
  const e = ErrorEnvelopeSchema.safeParse(a.json);
  return e.success ? e.data.error.code : undefined;
};
const statusText = (a: Answer) => `${a.status}${envelopeCode(a) ? ` ${envelopeCode(a)}` : ""}`;

/** The documented GET record's fields: what one that differs leaves out, spells otherwise, or adds. */
const GET_FIELDS = ["blobId", "url", "name", "tag", "size", "createdAt", "expiresAt"];
function recordShape(json: unknown, documented: readonly string[]): string {
  const keys = keysOf(json);
  const missing = documented.filter((k) => !keys.includes(k));
  const extra = keys.filter((k) => !documented.includes(k));
  const parts = [missing.length ? `without ${missing.join(", ")}` : "", extra.length ? `with ${extra.slice(0, 6).join(", ")}` : ""].filter(Boolean);
  return parts.length ? parts.join("; ") : "as documented";
}

export async function doctor(options: DoctorOptions): Promise<DoctorReport> {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const timeoutMs = options.timeoutMs ?? 30_000;
  const key = headerKey(options.apiKey ?? "");
  const mask = (text: string) => redactString(text, key ? [key] : []);
  const say = options.say ?? (() => undefined);
  const checks = new Map<AssumptionId, DoctorCheck>();
  const check = (id: AssumptionId, verdict: Verdict, seen: string) => void checks.set(id, { id, verdict, seen: mask(seen) });
  const report = (extra: Partial<DoctorReport>): DoctorReport => {
    const all = (Object.keys(ASSUMPTIONS) as AssumptionId[]).map((id) => checks.get(id) ?? { id, verdict: "not measured" as const, seen: notMeasured(id) });
    const base = { baseUrl, epochSeconds: null, duplicateUpload: null, idempotencyKeys: null, bought, configLines: [], ...extra, checks: all };
    const exitCode = extra.exitCode ?? (all.some((c) => c.verdict === "differs") ? 1 : 0);
    return { ...base, exitCode };
  };
  const notMeasured = (id: AssumptionId) =>
    id === "get-answer" || id === "url-readable"
      ? "needs --spend or --blob-id"
      : id === "key" || id === "missing-key" || id === "error-envelope"
        ? ""
        : "needs --spend";
  const bought = { uploads: 0, renews: 0, bytes: SPEND_BYTES };
  const auth = { authorization: `Bearer ${key}` };
  const api = (path: string, init: RequestInit = {}, withKey = true) =>
    request(`${baseUrl}${path}`, { ...init, headers: { ...(withKey ? auth : {}), ...(init.headers as Record<string, string>) } }, timeoutMs);

  if (!options.apiKey) return report({ exitCode: 2, problem: "no API key: set TUSKR_API_KEY (doctor never reads it from anywhere else)" });
  const keyProblem = apiKeyProblem(options.apiKey);
  if (keyProblem) return report({ exitCode: 2, problem: `TUSKR_API_KEY ${keyProblem}` });
  const insecure = insecureBaseUrlProblem(baseUrl, options.allowInsecureHttp);
  if (insecure) return report({ exitCode: 2, problem: `${baseUrl}: ${insecure}` });

  // Free: the key, the answer without it, the error envelope (an id no content can have).
  const nobody = `pulumi-tuskr-doctor-${randomBytes(6).toString("hex")}`;
  const unknown = await api(filePath(nobody));
  if (!unknown) return report({ exitCode: 2, problem: `nothing answers at ${baseUrl}: check TUSKR_BASE_URL or --base-url` });
  if (unknown.status === 401 || unknown.status === 403)
    return report({ exitCode: 2, problem: `the key is refused (${statusText(unknown)}): check TUSKR_API_KEY, and that it may write (403 is read-only)` });
  check("key", unknown.status === 404 ? "as assumed" : "differs", `GET of an unknown blobId answered ${statusText(unknown)}`);
  const named = (ErrorEnvelopeSchema.safeParse(unknown.json).data?.error.details as { blobId?: unknown } | undefined)?.blobId === nobody;
  check(
    "error-envelope",
    envelopeCode(unknown) !== undefined && named ? "as assumed" : "differs",
    envelopeCode(unknown) === undefined
      ? `the 404 has no {"error":{...}} envelope (${unknown.text.slice(0, 60).replace(/\s+/g, " ")})`
      : named
        ? "the 404 names the blobId in details.blobId"
        : "the 404 does not name the blobId in details.blobId",
  );
  const without = await api(filePath(nobody), {}, false);
  if (without) check("missing-key", without.status === 401 ? "as assumed" : "differs", `without the key: ${statusText(without)}`);

  /** A record read through the API: its shape judged, its url read without the key. */
  const readRecord = async (blobId: string, bytes?: Buffer): Promise<Record<string, unknown> | undefined> => {
    const got = await api(filePath(blobId));
    if (!got || got.status !== 200) {
      check("get-answer", "differs", got ? `GET answered ${statusText(got)}` : "GET got no answer");
      return undefined;
    }
    const readable = ReadFileSchema.safeParse(got.json);
    check("get-answer", readable.success ? "as assumed" : "differs", `GET: ${recordShape(got.json, GET_FIELDS)}${readable.success ? "" : " (not readable)"}`);
    const record = (got.json ?? {}) as Record<string, unknown>;
    const url = typeof record.url === "string" ? record.url : undefined;
    if (!url) check("url-readable", "differs", "the record has no url");
    else {
      const served = await request(url, {}, timeoutMs);
      const same =
        bytes === undefined ||
        (served !== undefined && createHash("sha256").update(served.text).digest("hex") === createHash("sha256").update(bytes).digest("hex"));
      if (!served) check("url-readable", "differs", "its url does not answer");
      else if (served.status >= 200 && served.status < 300)
        check("url-readable", same ? "as assumed" : "differs", same ? `served without the key (${served.status})` : "its url serves other bytes");
      else check("url-readable", "differs", `its url answered ${served.status} without the key (a gateway that wants it?)`);
    }
    return readable.success ? (readable.data as Record<string, unknown>) : record;
  };

  if (options.blobId && !options.spend) await readRecord(options.blobId);
  if (!options.spend) return report({});

  say(`--spend: buying ${SPEND_TEXT}, on ${baseUrl}`);
  const bytes = Buffer.from(`pulumi-tuskr doctor ${new Date().toISOString()} ${randomBytes(8).toString("hex")}`.padEnd(SPEND_BYTES - 1, ".").concat("\n"));
  const upload = (idempotencyKey: string) => {
    const form = new FormData();
    form.set("file", new Blob([bytes], { type: "text/plain" }), "pulumi-tuskr-doctor.txt");
    form.set("tag", "pulumi-tuskr-doctor");
    form.set("epochs", "1");
    return api(PATHS.files, { method: "POST", body: form, headers: { [IDEMPOTENCY_KEY_HEADER]: idempotencyKey } });
  };
  const keyA = `pulumi-tuskr-doctor-${randomBytes(12).toString("hex")}`;
  const first = await upload(keyA);
  bought.uploads++;
  const firstRead = first ? UploadAnswerSchema.safeParse(first.json) : undefined;
  if (!first || !firstRead?.success || (first.status !== 201 && first.status !== 200)) {
    check("upload-answer", "differs", first ? `the upload answered ${statusText(first)}: ${recordShape(first.json, ["blob_id"])}` : "the upload got no answer");
    return report({});
  }
  const blobId = String(firstRead.data.blobId);
  const snake = keysOf(first.json).includes("blob_id");
  check("upload-answer", first.status === 201 && snake ? "as assumed" : "differs", `${first.status}, ${snake ? "snake_case" : "camelCase"} record`);
  const expiryNow = async (): Promise<number | undefined> => {
    const got = await api(filePath(blobId));
    const parsed = got?.status === 200 ? ReadFileSchema.safeParse(got.json) : undefined;
    return parsed?.success ? Date.parse(parsed.data.expiresAt ?? "") : undefined;
  };
  await readRecord(blobId, bytes);
  const afterFirst = await expiryNow();

  // The same upload under the same key: a replay (nothing bought), or what a second upload does.
  const again = await upload(keyA);
  const afterAgain = await expiryNow();
  // Without an expiry to compare (a GET that leaves it out), only the service's replay header tells.
  const comparable = afterFirst !== undefined && !Number.isNaN(afterFirst);
  const headerReplay = again?.headers.get("idempotent-replayed") === "true";
  const replayed = headerReplay || (comparable && again?.status === first.status && afterAgain === afterFirst && again?.status !== 200);
  let idempotencyKeys: IdempotencyKeys | null = null;
  let duplicateUpload: DuplicateUpload | null = null;
  const duplicateOf = (a: Answer | undefined, before: number | undefined, after: number | undefined): DuplicateUpload | null =>
    !a
      ? null
      : a.status === 409
        ? "refuse"
        : a.status === 201 && after !== undefined && before !== undefined && after > before
          ? "purchase"
          : a.status === 200 || a.status === 201
            ? "existing"
            : null;
  if (again && replayed) {
    idempotencyKeys = "honoured";
    const third = await upload(`pulumi-tuskr-doctor-${randomBytes(12).toString("hex")}`);
    const afterThird = await expiryNow();
    duplicateUpload = duplicateOf(third, afterAgain, afterThird);
    if (duplicateUpload === "purchase") bought.uploads++;
  } else if (again && comparable) {
    idempotencyKeys = "ignored";
    duplicateUpload = duplicateOf(again, afterFirst, afterAgain);
    if (duplicateUpload === "purchase") bought.uploads++;
  } else if (again && again.status >= 200 && again.status < 300) {
    // Not measured: counted as bought, since nothing shows it was not.
    bought.uploads++;
  }
  const keysSetting = options.settings?.idempotencyKeys;
  check(
    "idempotency-keys",
    idempotencyKeys === null ? "not measured" : idempotencyKeys === (keysSetting ?? ASSUMED.idempotencyKeys) ? "as assumed" : "differs",
    idempotencyKeys === null
      ? again
        ? "the GET's record shows no expiry to compare the uploads by"
        : "the second upload got no answer"
      : `the same upload under the same key was ${idempotencyKeys === "honoured" ? "replayed" : "not replayed"}${keysSetting ? ` (tuskr:idempotencyKeys ${keysSetting})` : ""}`,
  );
  check(
    "duplicate-upload",
    duplicateUpload === null ? "not measured" : duplicateUpload === "purchase" ? "differs" : "as assumed",
    duplicateUpload === null
      ? again && !comparable && !headerReplay
        ? "the GET's record shows no expiry to compare the uploads by"
        : "the second upload's answer says neither"
      : `${duplicateUpload}: ${DUPLICATE_WORDS[duplicateUpload]}`,
  );

  // PATCH: merge-patch metadata, and its answer's shape. Free.
  const patch = (body: unknown) => api(filePath(blobId), { method: "PATCH", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
  const patched = await patch({ metadata: { a: "1", b: "2" } });
  await patch({ metadata: { b: null } });
  const metadata = await api(filePath(blobId));
  const kept = (metadata?.json as { metadata?: unknown } | undefined)?.metadata;
  const merged = JSON.stringify(kept) === JSON.stringify({ a: "1" });
  check("patch-metadata", merged ? "as assumed" : "differs", `after {a,b} then {b: null}: metadata ${JSON.stringify(kept ?? null).slice(0, 60)}`);
  check(
    "patch-answer",
    patched && (patched.status === 204 || (patched.status === 200 && keysOf(patched.json).length > 0)) ? "as assumed" : "differs",
    patched ? `${statusText(patched)}, ${patched.text ? recordShape(patched.json, GET_FIELDS) : "no body"}` : "no answer",
  );

  // One renew of one epoch: its move is the epoch's length.
  const before = await expiryNow();
  const renewed = await api(filePath(blobId, "renew"), {
    method: "POST",
    body: JSON.stringify({ epochs: 1 }),
    headers: { "content-type": "application/json", [IDEMPOTENCY_KEY_HEADER]: `pulumi-tuskr-doctor-${randomBytes(12).toString("hex")}` },
  });
  if (renewed && renewed.status >= 200 && renewed.status < 300) bought.renews++;
  const after = await expiryNow();
  check(
    "renew-answer",
    renewed && renewed.status >= 200 && renewed.status < 300 ? "as assumed" : "differs",
    renewed ? `${statusText(renewed)}, ${renewed.text ? `a body ${recordShape(renewed.json, GET_FIELDS)}` : "no body"}` : "no answer",
  );
  const epochSeconds = before !== undefined && after !== undefined && after > before ? Math.round((after - before) / 1000) : null;
  const expected = options.settings?.epochSeconds ?? ASSUMED.epochSeconds;
  check(
    "epoch",
    epochSeconds === null ? "not measured" : epochSeconds === expected ? "as assumed" : "differs",
    epochSeconds === null
      ? "the renew did not move the expiry"
      : `a renew of 1 epoch moved expiresAt by ${epochSeconds} s${options.settings?.epochSeconds ? ` (tuskr:epochSeconds ${options.settings.epochSeconds})` : ""}`,
  );
  const configLines = [
    ...(epochSeconds !== null ? [`pulumi config set ${CONFIG_KEYS.epochSeconds} ${epochSeconds}`] : []),
    ...(idempotencyKeys !== null ? [`pulumi config set ${CONFIG_KEYS.idempotencyKeys} ${idempotencyKeys}`] : []),
  ];
  return report({ epochSeconds, duplicateUpload, idempotencyKeys, configLines });
}

const DUPLICATE_WORDS: Record<DuplicateUpload, string> = {
  existing: "a second upload of stored bytes answers the stored entry, buying nothing",
  purchase: "a second upload of stored bytes is sold again",
  refuse: "a second upload of stored bytes is refused (409) naming the stored entry",
};

/** The report as a reader takes it: one line per assumption, then what was bought and the settings. */
export function doctorText(report: DoctorReport): string {
  const lines = [`pulumi-tuskr doctor: ${report.baseUrl}`];
  if (report.problem) return [...lines, `could not run: ${report.problem}`, ""].join("\n");
  for (const c of report.checks) {
    const assumption = ASSUMPTIONS[c.id];
    lines.push(`  ${c.verdict.padEnd(12)} ${assumption.assumed}${c.seen ? ` — ${c.seen}` : ""}`);
    if (c.verdict === "differs") lines.push(`  ${"".padEnd(12)} so: ${assumption.otherwise}`);
  }
  const { uploads, renews, bytes } = report.bought;
  lines.push(uploads + renews > 0 ? `bought: ${uploads} upload(s) of ${bytes} bytes for 1 epoch, ${renews} renew(s) of 1 epoch` : "bought: nothing");
  if (report.configLines.length > 0) lines.push("to keep what it learnt, in each stack on this service:", ...report.configLines.map((l) => `  ${l}`));
  return `${lines.join("\n")}\n`;
}
