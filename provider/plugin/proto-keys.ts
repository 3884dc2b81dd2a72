import { isPlainObject, ownValue } from "../../api";
import { PROTO_KEY_STANDIN } from "../file/validate";

/**
 * Finds `__proto__` keys in a request's raw bytes, because the protobuf library builds objects by
 * assignment and drops them. Restoring them under the standin lets check refuse them; a silent drop
 * would clear stored metadata.
 */

/** The fields read here: a Struct's entries, an entry's key and value, a Value's struct and list, a list's values. */
const FIELD = { entries: 1, key: 1, value: 2, structValue: 5, listValue: 6, listValues: 1 } as const;

/** The length-delimited fields of a message, as [field number, bytes]; other wire types are skipped. */
function* delimited(bytes: Uint8Array): Generator<[number, Uint8Array]> {
  let at = 0;
  const varint = (): number => {
    let value = 0;
    for (let shift = 0; at < bytes.length; shift += 7) {
      const byte = bytes[at++];
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
    throw new Error("truncated varint");
  };
  while (at < bytes.length) {
    const tag = varint();
    const wire = tag % 8;
    if (wire === 0) varint();
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const length = varint();
      yield [Math.floor(tag / 8), bytes.subarray(at, at + length)];
      at += length;
    } else throw new Error(`wire type ${wire}`);
  }
}

/** Each path (keys and list indexes) under which a Struct holds a key named `__proto__`. */
function structProtoKeys(struct: Uint8Array, at: Array<string | number>, out: Array<Array<string | number>>): void {
  for (const [field, entry] of delimited(struct)) {
    if (field !== FIELD.entries) continue;
    let key = "";
    let value: Uint8Array | undefined;
    for (const [f, bytes] of delimited(entry)) {
      if (f === FIELD.key) key = new TextDecoder().decode(bytes);
      else if (f === FIELD.value) value = bytes;
    }
    if (key === "__proto__") out.push([...at, key]);
    else if (value) valueProtoKeys(value, [...at, key], out);
  }
}

function valueProtoKeys(value: Uint8Array, at: Array<string | number>, out: Array<Array<string | number>>): void {
  for (const [field, bytes] of delimited(value)) {
    if (field === FIELD.structValue) structProtoKeys(bytes, at, out);
    else if (field === FIELD.listValue) {
      let index = 0;
      for (const [f, item] of delimited(bytes)) if (f === FIELD.listValues) valueProtoKeys(item, [...at, index++], out);
    }
  }
}

/**
 * The paths of `__proto__` keys inside the Struct that field `field` of the message `bytes`
 * holds (a CheckRequest's `news` is field 3). Bytes it cannot read give none: the library's own
 * decoding then fails in its own words.
 */
export function protoKeyPaths(bytes: Uint8Array, field: number): Array<Array<string | number>> {
  const out: Array<Array<string | number>> = [];
  try {
    for (const [f, struct] of delimited(bytes)) if (f === field) structProtoKeys(struct, [], out);
  } catch {
    return [];
  }
  return out;
}

/**
 * `props` (the decoded inputs) with the standin put where each path's `__proto__` key was, for
 * check to refuse; a path whose parent the decoding did not keep is left out.
 */
export function withProtoKeysMarked(props: Record<string, unknown>, paths: ReadonlyArray<ReadonlyArray<string | number>>): Record<string, unknown> {
  for (const path of paths) {
    let parent: unknown = props;
    for (const step of path.slice(0, -1))
      parent = isPlainObject(parent) || Array.isArray(parent) ? ownValue(parent as Record<string, unknown>, String(step)) : undefined;
    if (isPlainObject(parent)) Object.defineProperty(parent, PROTO_KEY_STANDIN, { value: true, enumerable: true, writable: true, configurable: true });
  }
  return props;
}
