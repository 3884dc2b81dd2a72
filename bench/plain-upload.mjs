#!/usr/bin/env node
// The plain upload script bench/folders.mjs measures the first `up` against: each file of DIR
// POSTed once (fetch + FormData), CONCURRENCY at a time. It runs as a process of its own, as a
// user's script would and as the provider does: sharing the emulator's event loop would slow it.
//
//   node bench/plain-upload.mjs URL API_KEY DIR CONCURRENCY [--read-back]
//
// --read-back: each upload followed by a GET of the blobId it names, as the provider's gate reads
// every upload back. Prints the number of uploads.
import * as fs from "node:fs";
import * as path from "node:path";

const [url, apiKey, dir, concurrency, ...flags] = process.argv.slice(2);
const readBack = flags.includes("--read-back");
const headers = { Authorization: `Bearer ${apiKey}` };
const files = fs.readdirSync(dir).sort();
let next = 0;
const worker = async () => {
  for (let i = next++; i < files.length; i = next++) {
    const form = new FormData();
    form.append("file", await fs.openAsBlob(path.join(dir, files[i]), { type: "application/octet-stream" }), files[i]);
    form.append("tag", "v1");
    form.append("epochs", "1");
    const res = await fetch(`${url}/v1/files`, { method: "POST", body: form, headers });
    if (res.status !== 201) throw new Error(`plain upload of ${files[i]}: ${res.status}`);
    // The emulator answers in snake_case or camelCase, as a profile says.
    const answer = await res.json();
    const blobId = answer.blobId ?? answer.blob_id;
    if (!readBack) continue;
    const got = await fetch(`${url}/v1/files/${encodeURIComponent(blobId)}`, { headers });
    if (got.status !== 200) throw new Error(`plain read-back of ${files[i]}: ${got.status}`);
    await got.arrayBuffer();
  }
};
await Promise.all(Array.from({ length: Number(concurrency) }, worker));
process.stdout.write(`${files.length}\n`);
