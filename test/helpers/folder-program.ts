import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as pulumi from "@pulumi/pulumi";
import { ASSET_SIG, SIG_KEY } from "../../provider/engine/markers";

/**
 * A TypeScript StoredFolder program run under Pulumi's mocks: `run` declares the folder, and the
 * result is each StoredFile it registers, by name, with the inputs the engine would hand the
 * provider (`source` in its wire form, with its content's hash) and the URN `urnOf` gives it.
 */
export async function folderRegistrations(
  project: string,
  stack: string,
  run: () => void,
  urnOf: (name: string) => string,
): Promise<Map<string, Record<string, unknown>>> {
  const captured: Array<{ name: string; inputs: Record<string, unknown> }> = [];
  pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        if (args.type !== "tuskr:index:StoredFolder") captured.push({ name: args.name, inputs: args.inputs });
        return { id: `${args.name}-id`, state: args.inputs };
      },
      call: (args) => args.inputs,
    },
    project,
    stack,
    true,
  );
  run();
  // Registrations are asynchronous under the mocks: wait until they stop arriving.
  let seen = -1;
  while (seen !== captured.length) {
    seen = captured.length;
    await new Promise((r) => setTimeout(r, 20));
  }
  const out = new Map<string, Record<string, unknown>>();
  for (const r of captured) {
    // The mocks hand over the asset itself: its path is a promise.
    const file = String(await (r.inputs.source as { path?: Promise<string> })?.path);
    const hash = createHash("sha256").update(fs.readFileSync(file)).digest("hex");
    const { __urn: _urn, __secretInputs: _secrets, ...inputs } = r.inputs;
    out.set(r.name, { ...inputs, source: { [SIG_KEY]: ASSET_SIG, path: file, hash }, __urn: urnOf(r.name) });
  }
  return out;
}
