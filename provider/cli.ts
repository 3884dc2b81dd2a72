#!/usr/bin/env node
// `pulumi-tuskr summary < preview.json`: the Markdown a pipeline posts on a pull request, from
// the output of `pulumi preview --json`.
import { parseArgs } from "node:util";
import { summarizePreview } from "./summary";

const USAGE = `usage: pulumi-tuskr summary [--now <ISO time>] < preview.json

Reads the output of \`pulumi preview --json\` on stdin and prints Markdown: per StoredFile, what
changes (name, tag, metadata keys), epochs to buy and the new expiry, replaces, and totals.`;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

const CLI_OPTIONS = { now: { type: "string" }, help: { type: "boolean", short: "h" } } as const;

async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; allowPositionals: true; options: typeof CLI_OPTIONS }>>;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: CLI_OPTIONS });
  } catch (e) {
    console.error(`${(e as Error).message.split(". ")[0]}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.error(USAGE);
    return 0;
  }
  if (positionals.length !== 1 || positionals[0] !== "summary") {
    console.error(USAGE);
    return 2;
  }
  let nowMs: number | undefined;
  if (values.now !== undefined) {
    nowMs = Date.parse(values.now);
    if (Number.isNaN(nowMs)) {
      console.error(`--now: not a time: ${values.now}`);
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
