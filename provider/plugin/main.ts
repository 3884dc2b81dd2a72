/**
 * The plugin's entry point (package.json `main`), which Pulumi's nodejs language host requires and
 * calls. Requiring it starts nothing, since the library itself resolves to it through `exports`.
 */
import { serve } from "./server";

function runTuskrProvider(): Promise<void> {
  return serve(process.argv.slice(2));
}

if (require.main === module) {
  runTuskrProvider().catch((e: unknown) => {
    process.stderr.write(`tuskr provider: ${(e as Error)?.stack ?? String(e)}\n`);
    process.exit(1);
  });
}

export = runTuskrProvider;
