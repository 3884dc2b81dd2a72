import type * as http from "node:http";
import { Busboy, type BusboyInstance } from "@fastify/busboy";
import { LIMITS } from "../api";
import { ERRORS, type EmulatorError, emulatorError } from "./errors";

/**
 * Request bodies: read once, within a limit, and parsed once. A body that cannot be parsed is
 * kept as its error, raised only when the route's handler asks for the value, so a fault
 * injected into the request still strikes first (as it would on a service that fails before it
 * looks at the body).
 */

/** The largest upload body accepted: the contract's file limit, plus room for the form around it. */
export const UPLOAD_MAX_BYTES = LIMITS.uploadMaxBytes + 64 * 1024;
/** After a 413, this much more of the body is read and discarded before the connection is cut. */
const DISCARD_MAX_BYTES = 8 * 1024 * 1024;
/** Parts of one upload form, at most. */
const MAX_PARTS = 32;

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: EmulatorError };

export interface FormPart {
  name: string;
  filename?: string;
  contentType?: string;
  data: Buffer;
}

/**
 * Reads the whole body, refusing (413) as soon as it is known to be over `limit`: from
 * Content-Length before reading anything, or when the bytes read pass the limit. Nothing past
 * the limit is kept.
 */
function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(emulatorError(ERRORS.payloadTooLarge, limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        reject(emulatorError(ERRORS.payloadTooLarge, limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}

/**
 * After a 413 the rest of the body is read and thrown away, so the client can finish sending
 * and read the answer; a client that keeps sending past DISCARD_MAX_BYTES is cut off.
 */
export function discardRest(req: http.IncomingMessage): void {
  if (req.complete) return;
  let discarded = 0;
  req.on("data", (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DISCARD_MAX_BYTES) req.socket.destroy();
  });
  req.on("error", () => undefined);
  req.resume();
}

/** A JSON route's body: `application/json` (or `application/*+json`) only, at most LIMITS.jsonBodyMaxBytes. */
export async function readJson(req: http.IncomingMessage): Promise<Parsed<unknown>> {
  const type = req.headers["content-type"];
  const media = type?.split(";")[0].trim().toLowerCase();
  if (media !== "application/json" && !(media?.startsWith("application/") && media.endsWith("+json"))) {
    throw emulatorError(ERRORS.unsupportedMediaType, "application/json", type);
  }
  return parseJson(await readBody(req, LIMITS.jsonBodyMaxBytes));
}

function parseJson(body: Buffer): Parsed<unknown> {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(body);
  } catch {
    return { ok: false, error: emulatorError(ERRORS.malformedJson, "the body is not valid UTF-8") };
  }
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    const detail = (error as Error).message;
    return { ok: false, error: emulatorError(ERRORS.malformedJson, detail.length > 200 ? `${detail.slice(0, 200)}…` : detail) };
  }
}

/**
 * A multipart/form-data body, parsed by @fastify/busboy (415 if the Content-Type is not
 * multipart with a boundary). Every part is kept as bytes, text fields included.
 */
export async function readMultipart(req: http.IncomingMessage): Promise<Parsed<FormPart[]>> {
  const type = req.headers["content-type"];
  let parser: BusboyInstance;
  try {
    // preservePath: a filename is kept as sent, never cut at a slash.
    parser = new Busboy({ headers: { ...req.headers, "content-type": type ?? "" }, preservePath: true, isPartAFile: () => true, limits: { parts: MAX_PARTS } });
  } catch {
    throw emulatorError(ERRORS.unsupportedMediaType, "multipart/form-data with a boundary", type);
  }
  const body = await readBody(req, UPLOAD_MAX_BYTES);
  return parseForm(parser, body);
}

function parseForm(parser: BusboyInstance, body: Buffer): Promise<Parsed<FormPart[]>> {
  return new Promise((resolve) => {
    const parts: FormPart[] = [];
    const pending: Promise<void>[] = [];
    let failed: string | undefined;
    const fail = (detail: string) => (failed ??= detail);
    parser.on("file", (name, stream, filename, _encoding, mimeType) => {
      const chunks: Buffer[] = [];
      const part: FormPart = { name, filename: filename || undefined, contentType: mimeType || undefined, data: Buffer.alloc(0) };
      parts.push(part);
      pending.push(
        new Promise((done) => {
          stream.on("data", (chunk: Buffer) => chunks.push(chunk));
          stream.on("error", (error: Error) => {
            fail(error.message);
            done();
          });
          stream.on("end", () => {
            part.data = Buffer.concat(chunks);
            done();
          });
        }),
      );
    });
    parser.on("partsLimit", () => fail(`more than ${MAX_PARTS} parts`));
    parser.on("error", (error: Error) => {
      fail(error.message);
      finish();
    });
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      void Promise.all(pending).then(() => {
        if (failed === undefined && parts.length === 0 && body.length > 0) fail("the boundary from Content-Type does not occur in the body");
        resolve(failed === undefined ? { ok: true, value: parts } : { ok: false, error: emulatorError(ERRORS.malformedMultipart, failed) });
      });
    };
    parser.on("finish", finish);
    parser.end(body);
  });
}
