import * as http from "node:http";
import { afterAll, beforeAll, beforeEach } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, startEmulator, type Emulator, type EmulatorOptions } from "../../emulator";
import type { FileRecord, UploadRecord } from "../../api";

/**
 * Helpers for tests that drive the emulator over real HTTP on loopback. Requests go through
 * Node 20's global fetch/FormData/Blob, except `rawRequest`, which sends a path exactly as given
 * (fetch would normalize `..`) and reports a cut connection instead of throwing.
 */

export const KEY = EMULATOR_DEFAULT_API_KEY;

/** Starts an emulator, runs `fn`, and always closes it. */
export async function withEmulator<T>(fn: (emulator: Emulator) => Promise<T>, options: EmulatorOptions = {}): Promise<T> {
  const emulator = await startEmulator(options);
  try {
    return await fn(emulator);
  } finally {
    await emulator.close();
  }
}

/** One emulator for a whole test file, reset before each test. */
export function useEmulator(options: EmulatorOptions = {}): () => Emulator {
  let emulator: Emulator | undefined;
  beforeAll(async () => {
    emulator = await startEmulator(options);
  });
  beforeEach(async () => {
    await emulator?.reset();
  });
  afterAll(async () => {
    await emulator?.close();
  });
  return () => {
    if (emulator === undefined) throw new Error("the emulator is not started yet");
    return emulator;
  };
}

/** The error envelope; typed on every body for brevity, present only on error statuses. */
interface ErrorEnvelope {
  error: { code: string; message: string };
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  /** Parsed JSON, or undefined when the body is empty or not JSON. */
  body: T & ErrorEnvelope;
  text: string;
}

export interface RequestOptions {
  /** Sent as JSON with Content-Type application/json. */
  json?: unknown;
  /** Sent as is. */
  body?: string | FormData;
  headers?: Record<string, string>;
  /** API key; null sends no Authorization header. Default: the emulator's default key. */
  key?: string | null;
}

export async function request<T = any>(base: { url: string }, method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  const key = options.key === undefined ? KEY : options.key;
  if (key !== null) headers.Authorization = `Bearer ${key}`;
  let body = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers["Content-Type"] ??= "application/json";
  }
  const response = await fetch(`${base.url}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, body: parsed as T & ErrorEnvelope, text };
}

export interface UploadOptions {
  content: string | Uint8Array;
  filename?: string;
  type?: string;
  tag?: string;
  category?: string;
  epochs?: number | string;
  name?: string;
  key?: string | null;
  idempotencyKey?: string;
}

/** `POST /v1/files` as multipart/form-data, the way a browser or Node's FormData sends it. */
export function uploadFile(base: { url: string }, upload: UploadOptions): Promise<ApiResponse<UploadRecord>> {
  const form = new FormData();
  const bytes = typeof upload.content === "string" ? upload.content : new Uint8Array(upload.content);
  form.append("file", new Blob([bytes], { type: upload.type ?? "application/octet-stream" }), upload.filename ?? "file.bin");
  if (upload.name !== undefined) form.append("name", upload.name);
  if (upload.tag !== undefined) form.append("tag", upload.tag);
  if (upload.category !== undefined) form.append("category", upload.category);
  if (upload.epochs !== undefined) form.append("epochs", String(upload.epochs));
  const headers: Record<string, string> = upload.idempotencyKey === undefined ? {} : { "Idempotency-Key": upload.idempotencyKey };
  return request<UploadRecord>(base, "POST", "/v1/files", { body: form, key: upload.key, headers });
}

export const filePath = (blobId: string): string => `/v1/files/${encodeURIComponent(blobId)}`;

export function getFile(base: { url: string }, blobId: string, key?: string | null): Promise<ApiResponse<FileRecord>> {
  return request<FileRecord>(base, "GET", filePath(blobId), { key });
}

export function patchFile(base: { url: string }, blobId: string, json: unknown, options: RequestOptions = {}): Promise<ApiResponse<FileRecord>> {
  return request<FileRecord>(base, "PATCH", filePath(blobId), { ...options, json });
}

export function renewFile(
  base: { url: string },
  blobId: string,
  json: unknown,
  options: RequestOptions & { idempotencyKey?: string } = {},
): Promise<ApiResponse> {
  const headers = { ...options.headers };
  if (options.idempotencyKey !== undefined) headers["Idempotency-Key"] = options.idempotencyKey;
  return request(base, "POST", `${filePath(blobId)}/renew`, { ...options, headers, json });
}

export type RawResult =
  | { kind: "response"; status: number; headers: http.IncomingHttpHeaders; text: string; body: any }
  | { kind: "connection-error"; code: string | undefined; message: string };

/**
 * Sends one request on a fresh connection with the path untouched, and says whether an answer
 * came back or the connection was cut.
 */
export function rawRequest(
  base: { url: string },
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; key?: string | null } = {},
): Promise<RawResult> {
  const url = new URL(base.url);
  const headers: Record<string, string | number> = { ...options.headers };
  const key = options.key === undefined ? KEY : options.key;
  if (key !== null) headers.Authorization = `Bearer ${key}`;
  if (options.body !== undefined) headers["Content-Length"] = Buffer.byteLength(options.body);
  return new Promise((resolve) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", (error: NodeJS.ErrnoException) => resolve({ kind: "connection-error", code: error.code, message: error.message }));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let body: unknown;
        try {
          body = text === "" ? undefined : JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ kind: "response", status: res.statusCode ?? 0, headers: res.headers, text, body });
      });
    });
    req.on("error", (error: NodeJS.ErrnoException) => resolve({ kind: "connection-error", code: error.code, message: error.message }));
    req.end(options.body);
  });
}

/** A JSON body for renew/PATCH through rawRequest. */
export function jsonHeaders(extra: Record<string, string> = {}): Record<string, string> {
  return { "Content-Type": "application/json", ...extra };
}
