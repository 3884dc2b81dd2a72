#!/usr/bin/env node
// `pulumi-tuskr summary` turns `pulumi preview --json` into a pull-request comment; `pulumi-tuskr
// expiry` turns `pulumi stack export` into an alarm for files about to expire; `pulumi-tuskr
// doctor` checks a service against what the provider assumes of it.
import * as fs from "node:fs";
import { parseArgs } from "node:util";
import { doctor, doctorText, SPEND_TEXT } from "./doctor";
import { expiryMarkdown, expiryReport } from "./expiry";
import { CONFIG_KEYS, configOfSettings, settingsFrom } from "../config/settings";
import { NotTheInput } from "./input";
import { previewErrors, summarizePreview } from "./summary";

const USAGE = `usage: pulumi-tuskr summary [--now <ISO time>] < preview.json
       pulumi-tuskr expiry [--within <epochs>] [--config <file>] [--json] [--now <ISO time>] < stack.json
       pulumi-tuskr doctor [--base-url <url>] [--spend] [--blob-id <id>] [--config <file>] [--json]

summary  reads the output of \`pulumi preview --json\` on stdin and prints Markdown: per StoredFile,
         what changes (name, tag, metadata keys), epochs to buy and the new expiry, replaces,
         imports, totals (reads counted); exits 1 when the preview failed (it reports errors: the
         Markdown says so), 2 when the input is not a preview or has a file step it cannot
         describe, else 0.
expiry   reads the output of \`pulumi stack export\` on stdin and prints each StoredFile's (and each
         content of a one-resource StoredFolder's) blobId, expiry, epochs left and keep-alive
         (Markdown, or JSON with --json); exits 1 when a file ends within --within epochs (default
         tuskr:expiryWarningEpochs, 3), has ended, or its end is unknown, 2 when the input is not
         an export, else 0. The settings (tuskr:epochSeconds, tuskr:expiryWarningEpochs) are
         --config's, the output of \`pulumi config --json\` (a TypeScript stack's export has none),
         else the export's.
doctor   checks the service TUSKR_API_KEY and TUSKR_BASE_URL (or --base-url) name against what the
         provider assumes of it: the key, the error envelope, answer shapes, what a second upload
         of stored bytes does, Idempotency-Key, PATCH's metadata, the epoch's length. Free requests
         only; --spend may buy ${SPEND_TEXT}, said before anything is sent;
         --blob-id reads a file of yours for free. Ends with the \`pulumi config set\` lines for
         what it learnt. Compared with --config's settings (\`pulumi config --json\`) when given.
         Exits 0 when the service behaves as assumed or as the settings say, 1 when it
         contradicts them, 2 when it could not run (no key, key refused, nothing answers).`;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

const CLI_OPTIONS = {
  now: { type: "string" },
  within: { type: "string" },
  config: { type: "string" },
  json: { type: "boolean" },
  "base-url": { type: "string" },
  spend: { type: "boolean" },
  "blob-id": { type: "string" },
  "allow-insecure-http": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

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
  const command = positionals[0];
  if (positionals.length !== 1 || (command !== "summary" && command !== "expiry" && command !== "doctor")) {
    console.error(USAGE);
    return 2;
  }
  let withinEpochs: number | undefined;
  if (values.within !== undefined) {
    withinEpochs = /^[0-9]{1,6}$/.test(values.within) ? Number(values.within) : Number.NaN;
    if (!Number.isInteger(withinEpochs)) {
      console.error(`--within: a whole number of epochs, got ${values.within}`);
      return 2;
    }
  }
  let nowMs: number | undefined;
  if (values.now !== undefined) {
    nowMs = Date.parse(values.now);
    if (Number.isNaN(nowMs)) {
      console.error(`--now: not a time: ${values.now}`);
      return 2;
    }
  }
  let config: Record<string, unknown> | undefined;
  if (values.config !== undefined) {
    try {
      const read = JSON.parse(fs.readFileSync(values.config, "utf8").replace(/^\uFEFF/, ""));
      if (!read || typeof read !== "object" || Array.isArray(read)) throw new Error("not a JSON object");
      config = read;
    } catch (e) {
      console.error(`--config: not the output of \`pulumi config --json\` (${(e as Error).message.split("\n")[0]})`);
      return 2;
    }
  }
  if (command === "doctor") return runDoctor(values, config);
  // A byte-order mark (PowerShell writes one) is not part of the JSON.
  const text = (await readStdin()).replace(/^\uFEFF/, "");
  const source = command === "summary" ? "`pulumi preview --json`" : "`pulumi stack export`";
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    console.error(`stdin is not JSON: pipe in the output of ${source}`);
    return 2;
  }
  try {
    if (command === "summary") {
      process.stdout.write(summarizePreview(json, { nowMs }));
      // A failed preview is said in the Markdown, and fails the step that posts it.
      return previewErrors(json) > 0 ? 1 : 0;
    }
    const report = expiryReport(json, { withinEpochs, nowMs, config });
    process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : expiryMarkdown(report));
    return report.alarm ? 1 : 0;
  } catch (e) {
    console.error((e as Error).message);
    // Input of another shape is a usage error; expiry's 1 is the alarm, so it never fails with 1.
    return e instanceof NotTheInput || command === "expiry" ? 2 : 1;
  }
}

/** `doctor`: the key and base URL as the provider reads them from the environment (the flag first), the settings from --config. */
async function runDoctor(values: { [K in keyof typeof CLI_OPTIONS]?: unknown }, config: Record<string, unknown> | undefined): Promise<number> {
  const fromConfig = settingsFrom(
    configOfSettings(Object.fromEntries(Object.entries(config ?? {}).map(([k, v]) => [k.replace(/^tuskr:/, ""), isValue(v) ? v.value : v]))),
    {},
  );
  const env = settingsFrom(undefined);
  const given = (key: keyof typeof CONFIG_KEYS) => config?.[CONFIG_KEYS[key]] !== undefined;
  const report = await doctor({
    apiKey: env.apiKey,
    baseUrl: typeof values["base-url"] === "string" ? values["base-url"] : env.baseUrl,
    allowInsecureHttp: values["allow-insecure-http"] === true,
    spend: values.spend === true,
    blobId: typeof values["blob-id"] === "string" ? values["blob-id"] : undefined,
    settings: {
      epochSeconds: given("epochSeconds") ? fromConfig.epochSeconds : undefined,
      idempotencyKeys: given("idempotencyKeys") ? fromConfig.idempotencyKeys : undefined,
    },
    say: (line) => console.error(line),
  });
  process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : doctorText(report));
  return report.exitCode;
}

const isValue = (v: unknown): v is { value: unknown } => typeof v === "object" && v !== null && "value" in v;

main(process.argv.slice(2)).then((code) => process.exit(code));
