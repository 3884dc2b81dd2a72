/**
 * The provider plugin's entry point: package.json's `main`, which is what Pulumi runs for a
 * plugin with a PulumiPlugin.yaml of runtime nodejs (its language host requires the package's
 * directory and calls the function it exports). Requiring it starts nothing: the library is
 * `require("pulumi-tuskr")`, resolved through package.json's `exports`.
 *
 * Also runnable directly: `node dist/provider/plugin/main.js <engine-address>`.
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
