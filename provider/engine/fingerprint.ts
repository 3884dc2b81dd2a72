import { createHash } from "node:crypto";
import { isPlainObject } from "../../api";

/** A JSON value with each object's keys in sorted order, at every depth. */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (!isPlainObject(v)) return v;
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .map((k) => [k, canonical(v[k])]),
  );
}

/**
 * A JSON value's text, the same whatever its keys' order: the engine's wire keeps no order of an
 * object's keys, and a key whose value is undefined is not sent.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonical(value));
}

/** A JSON value's fingerprint (sha256 of `canonicalJson`). */
export function fingerprint(value: unknown): string {
  return createHash("sha256")
    .update(canonicalJson(value ?? null))
    .digest("hex");
}
