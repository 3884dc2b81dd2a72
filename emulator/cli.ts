#!/usr/bin/env node
import * as path from "node:path";
import { parseArgs } from "node:util";
import { addFaultFlag, type FaultConfig } from "./faults";
import { type DuplicateUploadMode, EMULATOR_DEFAULT_API_KEY, startEmulator, type EmulatorOptions } from "./index";

/** `tuskr-emulator`: a thin wrapper that turns flags into startEmulator() options. */

const USAGE = `Usage: tuskr-emulator [options]

Runs a local stand-in for the Tuskr file service.

Options:
  --port N                 port to listen on (default 4010; 0 picks a free one)
  --host H                 address to bind (default 127.0.0.1)
  --data DIR               keep state in DIR (default .tuskr-emulator)
  --in-memory              keep nothing on disk
  --api-key KEY            accepted key, repeatable (default: $TUSKR_API_KEY, else ${EMULATOR_DEFAULT_API_KEY})
  --read-only-api-key KEY  key that can read but not write, repeatable
  --epoch-seconds N        length of an epoch (default 86400, or the data directory's)
  --seed N                 seed of random faults (default 1)
  --fault ROUTE:FIELD=V    fault rate, repeatable; ROUTE is upload, get, patch, renew or '*';
                           FIELD is error5xxRate, error5xxStatus, rateLimitRate, retryAfterSeconds,
                           latencyMs, resetRate or applyThenDropRate
                           e.g. --fault renew:applyThenDropRate=0.2 --fault '*:error5xxRate=0.1'
  --rate-limit N           allow N /v1 requests per second, then 429
  --ignore-idempotency-keys
                           renew ignores Idempotency-Key (as a service without it would)
  --duplicate-upload MODE  an upload of bytes already stored: existing (default: answer with the
                           entry), purchase (add its epochs to the entry) or refuse (409)
  --prepaid-balance N      each key may buy N epochs in all, then renew answers 402
  --cdn-wants-key          a record's url serves its bytes only with a key (a gateway)
  -h, --help               show this help
`;

class UsageError extends Error {}

const FLAGS = {
  port: { type: "string" },
  host: { type: "string" },
  data: { type: "string" },
  "in-memory": { type: "boolean" },
  "api-key": { type: "string", multiple: true },
  "read-only-api-key": { type: "string", multiple: true },
  "epoch-seconds": { type: "string" },
  seed: { type: "string" },
  fault: { type: "string", multiple: true },
  "rate-limit": { type: "string" },
  "ignore-idempotency-keys": { type: "boolean" },
  "prepaid-balance": { type: "string" },
  "duplicate-upload": { type: "string" },
  "cdn-wants-key": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

function parseFlags(argv: string[], env: NodeJS.ProcessEnv): EmulatorOptions | "help" {
  let values: ReturnType<typeof parseArgs<{ options: typeof FLAGS; args: string[] }>>["values"];
  try {
    ({ values } = parseArgs({ args: argv, options: FLAGS, strict: true, allowPositionals: false }));
  } catch (error) {
    const message = (error as Error).message;
    const unknown = /Unknown option '([^']+)'/.exec(message);
    throw new UsageError(unknown ? `unknown option ${JSON.stringify(unknown[1])}` : message.split(". ")[0]);
  }
  if (values.help) return "help";
  const number = (flag: keyof typeof FLAGS): number | undefined => {
    const raw = values[flag];
    if (typeof raw !== "string") return undefined;
    const n = Number(raw);
    if (raw.trim() === "" || !Number.isFinite(n)) throw new UsageError(`--${flag}: ${JSON.stringify(raw)} is not a number`);
    return n;
  };
  let faults: FaultConfig = {};
  for (const flag of values.fault ?? []) {
    try {
      faults = addFaultFlag(faults, flag);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  }
  if (values["in-memory"] && values.data !== undefined) throw new UsageError("--data and --in-memory exclude each other");
  const envKey = env.TUSKR_API_KEY?.trim();
  const apiKeys = values["api-key"] ?? [];
  const rate = number("rate-limit");
  return {
    port: number("port") ?? 4010,
    ...(values.host !== undefined ? { host: values.host } : {}),
    dataDir: values["in-memory"] ? undefined : path.resolve(values.data ?? ".tuskr-emulator"),
    apiKeys: apiKeys.length > 0 ? apiKeys : envKey ? [envKey] : [EMULATOR_DEFAULT_API_KEY],
    ...(values["read-only-api-key"]?.length ? { readOnlyApiKeys: values["read-only-api-key"] } : {}),
    ...(number("epoch-seconds") !== undefined ? { epochSeconds: number("epoch-seconds") } : {}),
    ...(number("seed") !== undefined ? { seed: number("seed") } : {}),
    ...(faults.routes !== undefined ? { faults } : {}),
    ...(rate !== undefined ? { rateLimit: { requestsPerSecond: rate } } : {}),
    ...(values["ignore-idempotency-keys"] ? { idempotency: "ignore" as const } : {}),
    ...(number("prepaid-balance") !== undefined ? { prepaidBalance: number("prepaid-balance") } : {}),
    ...(values["duplicate-upload"] !== undefined ? { duplicateUpload: values["duplicate-upload"] as DuplicateUploadMode } : {}),
    ...(values["cdn-wants-key"] ? { cdnWantsKey: true } : {}),
  };
}

/** `tsk_…_key`: enough to tell keys apart, never enough to use one. */
export function maskKey(key: string): string {
  return key.length >= 12 ? `${key.slice(0, 4)}…${key.slice(-4)}` : "…";
}

async function main(): Promise<void> {
  let options: EmulatorOptions | "help";
  try {
    options = parseFlags(process.argv.slice(2), process.env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`tuskr-emulator: ${error.message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (options === "help") {
    process.stdout.write(USAGE);
    return;
  }

  const emulator = await startEmulator(options);
  const keys = options.apiKeys ?? [EMULATOR_DEFAULT_API_KEY];
  const keyText = `key ${maskKey(keys[0])}${keys.length > 1 ? ` (+${keys.length - 1} more)` : ""}`;
  process.stdout.write(
    `tuskr emulator listening on ${emulator.url} ` + `(data: ${emulator.dataDir ?? "in-memory"}, epoch ${emulator.epochSeconds}s, ${keyText})\n`,
  );

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1); // a second signal: stop waiting
    stopping = true;
    emulator.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`tuskr-emulator: error while stopping on ${signal}: ${(error as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`tuskr-emulator: ${(error as Error).message ?? String(error)}\n`);
  process.exit(1);
});
