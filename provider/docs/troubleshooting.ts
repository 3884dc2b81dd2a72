import type { TuskrErrorCode } from "../client/errors";
import { ADVISE_PARTS_FROM } from "../folder/parts";

/**
 * What each error the provider raises means and what to run, once: docs/troubleshooting.md's
 * table is generated from it (`npm run docs`), and the compiler checks that every error code has
 * its row.
 */
interface Remedy {
  means: string;
  run: string;
}

export const TROUBLESHOOTING = {
  CONFIG_ERROR: {
    means:
      "A setting is missing or refused (no API key; a plain `http://` base URL to another host), or a dependency of the package cannot be loaded (nothing was sent).",
    run: "Set what the message names: `pulumi config set --secret tuskr:apiKey …`, or fix `tuskr:baseUrl`; for a dependency, reinstall (`npm ci`).",
  },
  BAD_REQUEST: { means: "The service could not read a request.", run: "Report it with the message: the provider should never send one." },
  UNAUTHORIZED: {
    means: "The service rejected the API key.",
    run: "Set the right key: `pulumi config set --secret tuskr:apiKey …` (or `TUSKR_API_KEY`).",
  },
  FORBIDDEN: { means: "The key may not change this file (a read-only key, another account's file).", run: "Use a key of the file's account." },
  NOT_FOUND: {
    means: "No file with that blobId on the service, or (when the message says `check tuskr:baseUrl`) a URL the service does not have.",
    run: "Declare the blobId an upload returned, or declare `source`; else fix `tuskr:baseUrl`. A refresh drops only files the service says are gone.",
  },
  FILE_EXPIRED: {
    means: "The file's storage period ended: it cannot be updated or renewed.",
    run: "`pulumi refresh` drops it from the stack. A file declared by `source` (or in a folder) is uploaded anew at the next `up`; one adopted by `blobId` cannot be brought back: upload the content again (declare `source`).",
  },
  VALIDATION_ERROR: {
    means: "The service refused a value (a limit, the 53-epoch horizon).",
    run: "Change the value the message names; previews refuse most of these before any request.",
  },
  PAYLOAD_TOO_LARGE: { means: "The file is larger than an upload may be (32 MiB).", run: "Split or compress the file." },
  RATE_LIMIT_EXCEEDED: {
    means: "The service asked to slow down, and kept asking past the retries (30 at most, each after its `Retry-After`).",
    run: "Run `pulumi up` again later, or lower `tuskr:maxConcurrency`.",
  },
  INTERNAL_ERROR: { means: "The service failed (5xx) after the retries.", run: "Run `pulumi up` again: nothing half-done is forgotten." },
  SERVICE_UNAVAILABLE: { means: "The service is down or overloaded (503) after the retries.", run: "Run `pulumi up` again later." },
  HTTP_ERROR: { means: "An HTTP status the service does not document.", run: "Check `tuskr:baseUrl` and any proxy in between." },
  NETWORK_ERROR: {
    means:
      "The service could not be reached (refused, DNS, reset), or a server in between answered `100 Continue` unasked, which the HTTP client (undici) takes as a broken connection.",
    run: "Check the network and `tuskr:baseUrl`, then `pulumi up`. For `100 Continue`, send through a proxy (`HTTPS_PROXY`): that client reads it.",
  },
  TIMEOUT: {
    means: "No complete answer within `tuskr:timeoutMs` (or the 60 s budget of one operation).",
    run: "Run `pulumi up` again; raise `tuskr:timeoutMs` for slow links.",
  },
  INVALID_RESPONSE: {
    means:
      "An answer that does not check out (another file's record, a GET without `createdAt` or `expiresAt`, an entry serving other bytes or none at its url, an impossible expiry or id, a body past the limits, a body that is not JSON); nothing of it was recorded, nothing bought on it.",
    run: "A body that is not JSON (a web page) usually means `tuskr:baseUrl` is not the service's API: check it. Otherwise `pulumi-tuskr doctor` shows which answer differs; report it to the service's operator.",
  },
  RENEW_OUTCOME_UNKNOWN: {
    means:
      "A renew was sent, its answer was lost or a 5xx, and no read-back showed it applied: the service may still apply it. It was sent once, or again only under a key the service was seen to honour.",
    run: "`pulumi up` again a little later: it reads the file's expiry first and buys only what the declared end still lacks.",
  },
  UPLOAD_OUTCOME_UNKNOWN: {
    means: "An upload was sent and its answer lost: it may or may not have been stored.",
    run: "`pulumi up` again: the same upload reuses its Idempotency-Key, and a stored content is found by the service (one content, one entry).",
  },
  CONTENT_CHANGED: {
    means: "A file was rewritten while it was read for its upload: the upload stopped before its end, so nothing was stored or bought.",
    run: "`pulumi up` again once the file is no longer being written: it uploads what the file then holds.",
  },
  ALREADY_STORED: {
    means: "The service refused an upload of bytes it already stores, naming the entry: the provider takes that entry as the content's.",
    run: "Nothing: seen only if the service's answer did not name a valid entry; then report it to the service's operator.",
  },
  IDEMPOTENCY_KEY_REUSED: {
    means:
      "The service refused an Idempotency-Key it had seen with another request. Keys follow from what a purchase buys, so the provider sends the purchase again under a key of its own.",
    run: "Nothing: seen only if the second key was refused too; then `pulumi up` again.",
  },
  INSUFFICIENT_BALANCE: { means: "The prepaid balance is short: nothing was bought.", run: "Top up the account, then `pulumi up`." },
} as const satisfies Record<TuskrErrorCode, Remedy>;

/** Situations that are not an error code of the provider's, with what to run. */
export const SITUATIONS: ReadonlyArray<{ situation: string } & Remedy> = [
  {
    situation: "`the stack is currently locked`",
    means: "A `pulumi up` was killed (a cancelled CI job, a crash): its lock stayed, and its pending creates are in the state.",
    run: "`pulumi cancel`, then `pulumi up`: it finishes what was interrupted without buying anything twice.",
  },
  {
    situation: "`pulumi-tuskr summary` exits 2: `… is not one pulumi-tuskr summary can describe` or `… step has no …`",
    means:
      "A StoredFile or StoredFolder step it cannot describe: an op it does not know (a newer Pulumi's), or a step without the state Pulumi writes for it (an edited or cut preview). Nothing is summarized.",
    run: "Pipe in `pulumi preview --json`'s output as written; for an op it does not know, update pulumi-tuskr.",
  },
  {
    situation: "A file is expiring (a preview notice, `pulumi-tuskr expiry` exits 1)",
    means: "`tuskr:expiryWarningEpochs` epochs are left, or fewer (the current epoch counted).",
    run: "Raise `retentionEpochs` or declare `keepAlive`, and run `pulumi up` (on a schedule: keep-alive acts only during an `up`).",
  },
  {
    situation: "`the service's epoch is … s …, not tuskr:epochSeconds …` (a warning)",
    means:
      "An answer showed the service's epoch (a renew moved `expiresAt` by that per epoch bought, or an upload's answer bounds it) and it is not the setting: purchases count the service's epochs from then on, never the setting.",
    run: "`pulumi config set tuskr:epochSeconds <the length said>`: new stacks then count dates and adopted files right from their first request.",
  },
  {
    situation: "``StoredFolder …: N files are M resources; `oneResource: true` keeps them as one`` (a warning, TypeScript)",
    means:
      "A folder of more than 300 files is kept as one StoredFile per content, so every preview and `up` pays the engine's cost per resource: at 1,000 files about 20 times the one resource's first `up`, and 50 times its destroy.",
    run: 'Declare `oneResource: true` for a new folder. An existing stack that switches uploads each content once more ([StoredFolder](stored-folder.md), "Switching an existing folder").',
  },
  {
    situation: "``StoredFolder …: N files in one resource, so each change carries them all; `parts: K` …`` (a warning)",
    means: `A folder of more than ${ADVISE_PARTS_FROM.toLocaleString("en")} files is one resource: the engine carries, logs and rewrites all of its state for a one-file change, which then costs some 1.7 times an unchanged preview at 100,000 files.`,
    run: 'Declare `parts: K` as said (TypeScript; another language declares each `part`). The contents that move to another part keep their entries: nothing is uploaded or bought again ([StoredFolder](stored-folder.md), "A large folder in parts").',
  },
  {
    situation:
      "``StoredFolder …: N entries handed to other parts when `parts` changed, kept a day, now forgotten (no request)`` (the first `up` a day after a change of `parts`)",
    means:
      "The part kept what it handed over for a day, offering it at each `up`, so that a part that `up`s cut short or failing never reached still takes those entries instead of uploading them. This update only forgets them.",
    run: "Nothing: `pulumi up` sends no request for it.",
  },
  {
    situation: "``StoredFolder …: N entries it handed to other parts have left the folder: forgotten (no request)`` (within a day of a change of `parts`)",
    means:
      "Files whose entries the part kept as handed over were removed from the folder. Their return would be a new content, uploaded and counted from then, as any removed file's is.",
    run: "Nothing: `pulumi up` sends no request for it.",
  },
  {
    situation: "`the service's epoch is not known to this stack …` (a warning, once per run)",
    means:
      "Neither `tuskr:epochSeconds` nor an answer has given the epoch's length: the stack's first purchase buys 1 epoch, reads its record (which shows the length) and then buys the rest; the length is then kept in the stack's state.",
    run: "`pulumi-tuskr doctor --spend` measures it once for the service; `pulumi config set tuskr:epochSeconds <what it printed>` spares every new stack that first epoch.",
  },
];
