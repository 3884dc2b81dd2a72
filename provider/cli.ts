#!/usr/bin/env node
// `pulumi-tuskr summary < preview.json`: the Markdown a pipeline posts on a pull request, from
// the output of `pulumi preview --json`.
import { summarizePreview } from "./summary";

const USAGE = `usage: pulumi-tuskr summary [--now <ISO time>] < preview.json

Reads the output of \`pulumi preview --json\` on stdin and prints Markdown: per StoredFile, what
changes (name, tag, metadata keys), epochs to buy and the new expiry, replaces, and totals.`;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== "summary" || rest.includes("--help")) {
    console.error(USAGE);
    return command === "--help" || rest.includes("--help") ? 0 : 2;
  }
  let nowMs: number | undefined;
  const at = rest.indexOf("--now");
  if (at >= 0) {
    nowMs = Date.parse(rest[at + 1] ?? "");
    if (Number.isNaN(nowMs)) {
      console.error(`--now: not a time: ${rest[at + 1]}`);
      return 2;
    }
  }
  const text = await readStdin();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    console.error("stdin is not JSON: pipe in the output of `pulumi preview --json`");
    return 2;
  }
  try {
    process.stdout.write(summarizePreview(json, { nowMs }));
    return 0;
  } catch (e) {
    console.error((e as Error).message);
    return 1;
  }
}

main(process.argv.slice(2)).then((code) => process.exit(code));
