#!/usr/bin/env node
import * as path from "node:path";
import { addFaultFlag, type FaultConfig } from "./faults";
import { EMULATOR_DEFAULT_API_KEY, startEmulator, type EmulatorOptions } from "./index";

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
  -h, --help               show this help
`;

class UsageError extends Error {}

function parseArgs(argv: string[], env: NodeJS.ProcessEnv): EmulatorOptions | "help" {
  const options: EmulatorOptions = { port: 4010 };
  const apiKeys: string[] = [];
  const readOnlyApiKeys: string[] = [];
  let faults: FaultConfig = {};
  let dataDir: string | undefined;
  let inMemory = false;

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [flag, inline] = arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new UsageError(`${flag} needs a value`);
      return v;
    };
    const number = (): number => {
      const raw = value();
      const n = Number(raw);
      if (raw.trim() === "" || !Number.isFinite(n)) throw new UsageError(`${flag}: ${JSON.stringify(raw)} is not a number`);
      return n;
    };
    switch (flag) {
      case "-h":
      case "--help":
        return "help";
      case "--port":
        options.port = number();
        break;
      case "--host":
        options.host = value();
        break;
      case "--data":
        dataDir = value();
        break;
      case "--in-memory":
        inMemory = true;
        break;
      case "--api-key":
        apiKeys.push(value());
        break;
      case "--read-only-api-key":
        readOnlyApiKeys.push(value());
        break;
      case "--epoch-seconds":
        options.epochSeconds = number();
        break;
      case "--seed":
        options.seed = number();
        break;
      case "--fault":
        try {
          faults = addFaultFlag(faults, value());
        } catch (error) {
          throw new UsageError((error as Error).message);
        }
        break;
      case "--rate-limit":
        options.rateLimit = { requestsPerSecond: number() };
        break;
      default:
        throw new UsageError(`unknown option ${JSON.stringify(arg)}`);
    }
  }

  if (inMemory && dataDir !== undefined) throw new UsageError("--data and --in-memory exclude each other");
  options.dataDir = inMemory ? undefined : path.resolve(dataDir ?? ".tuskr-emulator");
  const envKey = env.TUSKR_API_KEY?.trim();
  options.apiKeys = apiKeys.length > 0 ? apiKeys : envKey ? [envKey] : [EMULATOR_DEFAULT_API_KEY];
  if (readOnlyApiKeys.length > 0) options.readOnlyApiKeys = readOnlyApiKeys;
  if (faults.routes !== undefined) options.faults = faults;
  return options;
}

/** `tsk_…_key`: enough to tell keys apart, never enough to use one. */
export function maskKey(key: string): string {
  return key.length >= 12 ? `${key.slice(0, 4)}…${key.slice(-4)}` : "…";
}

async function main(): Promise<void> {
  let options: EmulatorOptions | "help";
  try {
    options = parseArgs(process.argv.slice(2), process.env);
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
    `tuskr emulator listening on ${emulator.url} ` +
      `(data: ${emulator.dataDir ?? "in-memory"}, epoch ${emulator.epochSeconds}s, ${keyText})\n`,
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
