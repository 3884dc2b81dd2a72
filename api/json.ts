/**
 * JSON values and JSON Merge Patch (RFC 7396), the assumed semantics of Update File's body:
 * a member present replaces, a member set to null is removed, an object merges into the object
 * it meets, anything else (arrays included) replaces whole. The emulator applies patches with
 * `applyMergePatch`; the provider computes the patch that makes the stored value exactly the
 * declared one with `mergePatchBetween`.
 *
 * Object members are always defined, never assigned, and only own keys are read: a key such as
 * "__proto__" or "constructor" is data like any other.
 */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `record[key]` when the record holds that key itself: a path named "constructor" or "toString" is not a value every object has. */
export function ownValue<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** Structural JSON equality; key order does not matter, array order does. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

function define(object: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
}

/** `target` with `patch` applied (RFC 7396, section 2). Returns a new value; neither argument changes. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const result: Record<string, unknown> = {};
  if (isPlainObject(target)) for (const [key, value] of Object.entries(target)) define(result, key, value);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else define(result, key, applyMergePatch(Object.hasOwn(result, key) ? result[key] : undefined, value));
  }
  return result;
}

/**
 * The merge patch that turns `from` into exactly `to`: all of `to`, plus `null` for every key
 * (at any depth) that `from` has and `to` does not. Undefined when the two are already equal.
 * A `from` that is not an object is treated as empty.
 */
export function mergePatchBetween(from: unknown, to: Record<string, unknown>): Record<string, unknown> | undefined {
  if (isPlainObject(from) && jsonEqual(from, to)) return undefined;
  return withRemovals(isPlainObject(from) ? from : {}, to);
}

function withRemovals(from: Record<string, unknown>, to: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(to)) {
    const before = Object.hasOwn(from, key) ? from[key] : undefined;
    // A nested object is merged by the service, so its removed keys need nulls too.
    define(out, key, isPlainObject(value) && isPlainObject(before) ? withRemovals(before, value) : value);
  }
  for (const key of Object.keys(from)) if (!Object.hasOwn(to, key)) define(out, key, null);
  return out;
}
