import type { JsonObject, JsonValue } from "./store";

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * JSON Merge Patch (RFC 7396, section 2), recursive: a member set to null is removed, an object
 * is merged into the object it meets, anything else (arrays included) replaces the old value.
 * Returns a new value; neither argument is modified.
 *
 * Members are defined, never assigned, so a key such as "__proto__" stays an ordinary key.
 */
export function mergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isJsonObject(patch)) return patch;
  const result: JsonObject = {};
  if (isJsonObject(target)) {
    for (const [key, value] of Object.entries(target)) define(result, key, value);
  }
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) {
      delete result[key];
    } else {
      const current = Object.prototype.hasOwnProperty.call(result, key) ? result[key] : undefined;
      define(result, key, mergePatch(current, value));
    }
  }
  return result;
}

function define(object: JsonObject, key: string, value: JsonValue): void {
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
}
