import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import { Readable } from "node:stream";

/**
 * An upload's multipart body (RFC 7578), written by hand because FormData and web streams cost more
 * CPU than the upload at 10,000 small files. A streamed file is length- and content-checked so a
 * changed file aborts before the body ends.
 */

/**
 * The file part: its bytes, or a file on disk of a known size and, when given, a known SHA-256
 * (hex): the body is then completed only if the bytes read are that content.
 */
export type MultipartFile = { filename: string; type: string } & ({ bytes: Buffer } | { path: string; size: number; sha256?: string });

export interface MultipartBody {
  body: Buffer | Readable;
  /** The body's length in bytes (its Content-Length). */
  length: number;
  contentType: string;
  /**
   * Why the body stopped itself before its end (the file was not the content or size it was
   * said to be), if it did: the request then never completed, so nothing was stored.
   */
  refused(): string | undefined;
}

const CRLF = "\r\n";

/** Random bytes drawn in blocks: one call per boundary cost more than the rest of writing the body. */
let pool = Buffer.alloc(0);
let drawn = 0;
/** 16 random bytes as hex, unpredictable as one call each would be. */
function randomHex(): string {
  if (drawn + 16 > pool.length) {
    pool = randomBytes(4096);
    drawn = 0;
  }
  drawn += 16;
  return pool.toString("hex", drawn - 16, drawn);
}
/** A name or filename inside a quoted header parameter. */
const escapeName = (name: string) => name.replace(/[\r\n"]/g, (c) => (c === "\r" ? "%0D" : c === "\n" ? "%0A" : "%22"));
/** A text field's value, its line breaks written as CRLF. */
const fieldValue = (value: string) => value.replace(/\r?\n|\r/g, CRLF);

/**
 * Whether the service reads a text as it was given: a filename's quote or line break is escaped
 * (as a browser does), a field's line breaks arrive as CRLF.
 */
export const carriedAsIs = (text: string, as: "filename" | "field"): boolean => (as === "filename" ? escapeName(text) : fieldValue(text)) === text;

export function multipartBody(file: MultipartFile, fields: ReadonlyArray<readonly [string, string]>): MultipartBody {
  // A header value is one line of visible ASCII: anything else would end the part's header early.
  if (!/^[\t\x20-\x7e]*$/.test(file.type)) throw new Error(`the content type ${JSON.stringify(file.type.slice(0, 64))} is not one line of visible ASCII`);
  const boundary = `tuskr-${randomHex()}`;
  const head = Buffer.from(
    `--${boundary}${CRLF}Content-Disposition: form-data; name="file"; filename="${escapeName(file.filename)}"${CRLF}` +
      `Content-Type: ${file.type || "application/octet-stream"}${CRLF}${CRLF}`,
  );
  let rest = CRLF;
  for (const [name, value] of fields) {
    rest += `--${boundary}${CRLF}Content-Disposition: form-data; name="${escapeName(name)}"${CRLF}${CRLF}${fieldValue(value)}${CRLF}`;
  }
  const tail = Buffer.from(`${rest}--${boundary}--${CRLF}`);
  const contentType = `multipart/form-data; boundary=${boundary}`;
  if ("bytes" in file) {
    const body = Buffer.concat([head, file.bytes, tail]);
    return { body, length: body.length, contentType, refused: () => undefined };
  }
  const { path, size, sha256 } = file;
  let refusal: string | undefined;
  const refuse = (why: string) => {
    refusal = why;
    return new Error(why);
  };
  async function* parts() {
    yield head;
    const hash = sha256 === undefined ? undefined : createHash("sha256");
    let read = 0;
    try {
      for await (const chunk of fs.createReadStream(path)) {
        read += (chunk as Buffer).length;
        if (read > size) break;
        hash?.update(chunk as Buffer);
        yield chunk as Buffer;
      }
    } catch (e) {
      // Gone, or no longer a file (a directory in its place): the body stops here, unfinished.
      throw refuse(`${path} could not be read for its upload (${e instanceof Error ? e.message : String(e)})`);
    }
    // The length was said up front: a file that changed size is not sent as something else.
    if (read !== size) throw refuse(`${path} changed size while it was read for its upload (${size} bytes when the upload began)`);
    // Nor a file rewritten to other bytes of the same size: the body ends only once they are known to be the content.
    const actual = hash?.digest("hex");
    if (actual !== undefined && actual !== sha256)
      throw refuse(`${path} changed while it was read for its upload (sha256 ${sha256?.slice(0, 12)}… → ${actual.slice(0, 12)}…)`);
    yield tail;
  }
  return { body: Readable.from(parts(), { objectMode: false }), length: head.length + size + tail.length, contentType, refused: () => refusal };
}
