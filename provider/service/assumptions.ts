/**
 * What the provider assumes of the service where its contract is silent, each named once: what
 * `pulumi-tuskr doctor` checks, what the live test tier reports it relied on, and what the docs
 * list. The emulator behaves as assumed by default (emulator/README.md, "Differences").
 */
export const ASSUMPTIONS = {
  key: {
    assumed: "the API key is accepted: an unknown blobId answers 404, not 401 or 403",
    otherwise: "every request fails: check TUSKR_API_KEY or tuskr:apiKey",
  },
  "missing-key": {
    assumed: "a request without the key is refused with 401",
    otherwise: "the service answers without a key: nothing the provider does changes",
  },
  "error-envelope": {
    assumed: 'errors are {"error":{"code","message"}}, and a 404 for a file names it in details.blobId',
    otherwise: "a refresh never drops a file on such a 404 (it may be another server's): `pulumi state delete` forgets one",
  },
  "upload-answer": {
    assumed: "an upload answers 201 with its record (snake_case, blob_id)",
    otherwise: "an answer the provider cannot read is said naming its field; the upload is kept as unconfirmed",
  },
  "get-answer": {
    assumed: "GET answers the file's record (camelCase: blobId, url, name, tag, size, createdAt, expiresAt)",
    otherwise:
      "fields left out keep what the state has, but createdAt and expiresAt, without which a GET is refused; a value that cannot be read fails naming its field",
  },
  "url-readable": {
    assumed: "a record's url serves its bytes without the key",
    otherwise: "content another stack already stored is taken on the service's record (blobId and size), not on its bytes",
  },
  "idempotency-keys": {
    assumed: "Idempotency-Key is honoured: a resend under a key gets the first answer and buys nothing",
    otherwise: "a purchase whose answer is lost is never sent again in that `up` (set tuskr:idempotencyKeys ignored); the next `up` settles it",
  },
  "duplicate-upload": {
    assumed: "a second upload of stored bytes buys nothing (the stored entry, or 409 naming it)",
    otherwise: "a declaration re-created on stored content (a revert, a file added back) buys its upload's epochs again",
  },
  "patch-metadata": {
    assumed: "PATCH merges metadata as JSON Merge Patch: a key sent as null is removed",
    otherwise: "keys removed from a declaration may stay on the file",
  },
  "patch-answer": {
    assumed: "PATCH answers the updated record, or 204",
    otherwise: "any other answer is read as empty: the declared values are recorded",
  },
  "renew-answer": {
    assumed: "a renew answers the updated record, or nothing",
    otherwise: "any other answer is read as empty: the file's record is read instead",
  },
  epoch: {
    assumed: "an epoch lasts 86400 s (a day), or what tuskr:epochSeconds says",
    otherwise: "until an answer shows the length, each stack's first purchase buys 1 epoch to learn it: set tuskr:epochSeconds",
  },
} as const satisfies Record<string, { assumed: string; otherwise: string }>;

export type AssumptionId = keyof typeof ASSUMPTIONS;
