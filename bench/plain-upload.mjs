#!/usr/bin/env node
// The plain upload script bench/folders.mjs measures the first `up` against: each file of DIR
// POSTed once (fetch + FormData), CONCURRENCY at a time. It runs as a process of its own, as a
// user's script would and as the provider does: sharing the emulator's event loop would slow it.
//
//   node bench/plain-upload.mjs URL API_KEY DIR CONCURRENCY [--read-back] [--bare]
//
// --read-back: each upload followed by a GET of the blobId it names, as the provider's gate reads
// every upload back. --bare: sent by Node's own HTTP client with the body written by hand, as the
// provider sends them, each answer checked by its status alone (and the upload's for its blobId): a
// floor of what the requests cost here. Prints the uploads answered 201 and the GETs answered 200.
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";

const [url, apiKey, dir, concurrencyText, ...flags] = process.argv.slice(2);
const concurrency = Number(concurrencyText);
if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`plain-upload: CONCURRENCY must be a whole number from 1, got ${concurrencyText}`);
const unknown = flags.filter((flag) => flag !== "--read-back" && flag !== "--bare");
if (unknown.length > 0) throw new Error(`plain-upload: unknown flags ${unknown.join(" ")}`);
const readBack = flags.includes("--read-back");
const bare = flags.includes("--bare");
const authorization = `Bearer ${apiKey}`;
const files = fs.readdirSync(dir).sort();

/** One request by Node's HTTP client: its status and body as text. */
function send(method, target, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${target}`, { method, headers });
    req.on("response", (res) => {
      const chunks = [];
      res.on("data", (chunk) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

async function uploadBare(file) {
  const boundary = `bench-${randomBytes(12).toString("hex")}`;
  const field = (name, value) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const head = `${field("tag", "v1")}${field("epochs", "1")}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file}"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  const body = Buffer.concat([Buffer.from(head), await fs.promises.readFile(path.join(dir, file)), Buffer.from(`\r\n--${boundary}--\r\n`)]);
  const headers = { Authorization: authorization, "Content-Type": `multipart/form-data; boundary=${boundary}`, "Content-Length": String(body.length) };
  const res = await send("POST", "/v1/files", headers, body);
  return { status: res.status, answer: () => JSON.parse(res.text) };
}

async function uploadFetch(file) {
  const form = new FormData();
  form.append("file", await fs.openAsBlob(path.join(dir, file), { type: "application/octet-stream" }), file);
  form.append("tag", "v1");
  form.append("epochs", "1");
  const res = await fetch(`${url}/v1/files`, { method: "POST", body: form, headers: { Authorization: authorization } });
  const text = await res.text();
  return { status: res.status, answer: () => JSON.parse(text) };
}

async function getStatus(blobId) {
  const target = `/v1/files/${encodeURIComponent(blobId)}`;
  if (bare) return (await send("GET", target, { Authorization: authorization, Accept: "application/json" })).status;
  const got = await fetch(`${url}${target}`, { headers: { Authorization: authorization } });
  await got.arrayBuffer();
  return got.status;
}

let next = 0;
let uploaded = 0;
let read = 0;
const worker = async () => {
  for (let i = next++; i < files.length; i = next++) {
    const res = await (bare ? uploadBare : uploadFetch)(files[i]);
    if (res.status !== 201) throw new Error(`plain upload of ${files[i]}: ${res.status}`);
    uploaded++;
    if (!readBack) continue;
    // The emulator answers in snake_case or camelCase, as a profile says.
    const answer = res.answer();
    const status = await getStatus(answer.blobId ?? answer.blob_id);
    if (status !== 200) throw new Error(`plain read-back of ${files[i]}: ${status}`);
    read++;
  }
};
await Promise.all(Array.from({ length: concurrency }, worker));
process.stdout.write(`${uploaded} ${read}\n`);
