import { ERRORS, emulatorError } from "./errors";

/**
 * A minimal multipart/form-data reader (RFC 7578) for the upload route: the whole body is in
 * memory already, parts are found by their boundary, and each part's Content-Disposition gives
 * its name and, for files, its filename. Enough for browsers, curl and Node's FormData.
 */

export interface MultipartPart {
  name: string;
  filename?: string;
  contentType?: string;
  data: Buffer;
}

const MAX_PARTS = 32;
const CRLF = Buffer.from("\r\n");

/** The boundary parameter of a multipart/form-data Content-Type, or undefined if it is not one. */
export function multipartBoundary(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const [type, ...params] = contentType.split(";");
  if (type.trim().toLowerCase() !== "multipart/form-data") return undefined;
  for (const param of params) {
    const eq = param.indexOf("=");
    if (eq === -1 || param.slice(0, eq).trim().toLowerCase() !== "boundary") continue;
    let value = param.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    if (value.length >= 1 && value.length <= 70) return value;
    return undefined;
  }
  return undefined;
}

export function parseMultipart(body: Buffer, boundary: string): MultipartPart[] {
  const fail = (detail: string): never => {
    throw emulatorError(ERRORS.malformedMultipart, detail);
  };
  const delimiter = Buffer.from(`--${boundary}`);
  const nextDelimiter = Buffer.from(`\r\n--${boundary}`);

  // The first delimiter opens the body or follows a preamble line.
  let pos = body.subarray(0, delimiter.length).equals(delimiter) ? 0 : body.indexOf(nextDelimiter);
  if (pos === -1) fail("the boundary from Content-Type does not occur in the body");
  if (pos > 0) pos += CRLF.length;
  pos += delimiter.length;

  const parts: MultipartPart[] = [];
  for (;;) {
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) return parts; // "--": the closing delimiter
    while (body[pos] === 0x20 || body[pos] === 0x09) pos++; // transport padding
    if (!body.subarray(pos, pos + 2).equals(CRLF)) fail("a boundary line is not followed by CRLF");
    pos += 2;

    let headerText = "";
    let contentStart: number;
    if (body.subarray(pos, pos + 2).equals(CRLF)) {
      contentStart = pos + 2;
    } else {
      const headerEnd = body.indexOf("\r\n\r\n", pos);
      if (headerEnd === -1) fail("a part's headers are not terminated by an empty line");
      headerText = body.subarray(pos, headerEnd).toString("utf8");
      contentStart = headerEnd + 4;
    }
    const contentEnd = body.indexOf(nextDelimiter, contentStart);
    if (contentEnd === -1) fail("the closing boundary is missing");

    parts.push(partOf(headerText, body.subarray(contentStart, contentEnd), fail));
    if (parts.length > MAX_PARTS) fail(`more than ${MAX_PARTS} parts`);
    pos = contentEnd + nextDelimiter.length;
  }
}

function partOf(headerText: string, data: Buffer, fail: (detail: string) => never): MultipartPart {
  let disposition: string | undefined;
  let contentType: string | undefined;
  for (const line of headerText.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon === -1) fail(`a part has a header line without a colon`);
    const header = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (header === "content-disposition") disposition = value;
    else if (header === "content-type") contentType = value;
  }
  if (disposition === undefined) return fail("a part has no Content-Disposition header");
  const [kind, ...rest] = splitParams(disposition);
  if (kind.toLowerCase() !== "form-data") fail("a part's Content-Disposition is not form-data");

  const params = new Map<string, string>();
  for (const param of rest) {
    const eq = param.indexOf("=");
    if (eq === -1) continue;
    const key = param.slice(0, eq).trim().toLowerCase();
    let value = param.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) {
      value = value.slice(1, -1);
    }
    params.set(key, value);
  }
  const name = params.get("name");
  if (name === undefined) return fail("a part's Content-Disposition has no name");

  let filename = params.get("filename");
  const extended = params.get("filename*"); // RFC 5987: charset''percent-encoded
  if (extended !== undefined) {
    const quoteAt = extended.indexOf("''");
    try {
      filename = decodeURIComponent(quoteAt === -1 ? extended : extended.slice(quoteAt + 2));
    } catch {
      fail("a part's filename* is not valid percent-encoding");
    }
  }
  return {
    name: unescapeFormName(name),
    filename: filename === undefined ? undefined : unescapeFormName(filename),
    contentType,
    data,
  };
}

/** Splits header parameters on semicolons outside quoted strings. */
function splitParams(value: string): string[] {
  const out: string[] = [];
  let current = "";
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const ch = value[i];
    if (ch === '"') quoted = !quoted;
    if (ch === ";" && !quoted) {
      out.push(current.trim());
      current = "";
    } else {
      current += ch;
    }
  }
  out.push(current.trim());
  return out;
}

/**
 * Browsers and Node's FormData (WHATWG) write `"`, CR and LF in names as %22, %0D and %0A and
 * never escape a backslash, so backslashes are taken literally.
 */
function unescapeFormName(value: string): string {
  return value.replace(/%22/g, '"').replace(/%0D/gi, "\r").replace(/%0A/gi, "\n");
}
