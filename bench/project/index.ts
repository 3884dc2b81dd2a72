import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";

// The benchmark's program. bench/run.mjs picks the variant and changes `bench:tag` and
// `bench:epochs` between steps:
//   - "storedfile" / "plugin" / "noop": N files adopted by blobId, as StoredFiles (the dynamic
//     resource), as the tuskr provider plugin's StoredFile, or as no-op resources;
//   - "folder" / "noopfolder": a directory of N files uploaded by a StoredFolder, or as no-op
//     resources with the same inputs under a component of their own;
//   - "onefolder": the same directory kept by a StoredFolder as one resource (`oneResource`), or
//     as `bench:parts` of them; "pluginfolder": as the provider plugin's tuskr:index:StoredFolder.
// The no-op resources are the floor: same engine, backend and inputs, a provider that does
// nothing, serialized as ours is (a require of a package by name).
const config = new pulumi.Config("bench");
const variant = config.require("variant");
const tag = config.require("tag");
const retentionEpochs = config.requireNumber("epochs");

const noopProvider = require("tuskr-bench-noop") as pulumi.dynamic.ResourceProvider;

class NoopFile extends pulumi.dynamic.Resource {
  constructor(name: string, args: Record<string, unknown>, opts?: pulumi.CustomResourceOptions) {
    super(noopProvider, name, args, opts, "bench", "NoopFile");
  }
}

/** The floor of StoredFolder: a component with one no-op resource per file, the same inputs. */
class NoopFolder extends pulumi.ComponentResource {
  constructor(name: string, dir: string) {
    super("bench:index:NoopFolder", name, {});
    for (const rel of fs.readdirSync(dir).sort()) {
      new NoopFile(`${name}/${rel}`, { name: rel, tag, retentionEpochs, source: new pulumi.asset.FileAsset(path.join(dir, rel)) }, { parent: this });
    }
    this.registerOutputs({});
  }
}

if (variant === "storedfile" || variant === "plugin" || variant === "noop") {
  // One blobId per file, written by the runner (a file rather than config: 500 ids are 22 KB).
  const blobIds: string[] = JSON.parse(fs.readFileSync(config.require("blobsFile"), "utf8"));
  const args = (i: number) => ({ blobId: blobIds[i], name: `file-${i}.txt`, tag, metadata: { bench: "tuskr", index: i }, retentionEpochs });
  if (variant === "storedfile") {
    // Loaded only here, so the floor does not pay for loading pulumi-tuskr.
    const { StoredFile } = require("pulumi-tuskr") as typeof import("pulumi-tuskr");
    for (const i of blobIds.keys()) new StoredFile(`f${i}`, args(i));
  } else if (variant === "plugin") {
    const { PluginStoredFile } = require("pulumi-tuskr/plugin") as typeof import("pulumi-tuskr/plugin");
    for (const i of blobIds.keys()) new PluginStoredFile(`f${i}`, args(i));
  } else {
    for (const i of blobIds.keys()) new NoopFile(`f${i}`, args(i));
  }
} else if (variant === "folder") {
  const { StoredFolder } = require("pulumi-tuskr") as typeof import("pulumi-tuskr");
  new StoredFolder("folder", { path: config.require("folder"), tag, retentionEpochs });
} else if (variant === "onefolder") {
  const { StoredFolder } = require("pulumi-tuskr") as typeof import("pulumi-tuskr");
  const parts = Number(config.get("parts") ?? "1");
  new StoredFolder("folder", { path: config.require("folder"), tag, retentionEpochs, oneResource: true, ...(parts > 1 ? { parts } : {}) });
} else if (variant === "pluginfolder") {
  const { PluginStoredFolder } = require("pulumi-tuskr/plugin") as typeof import("pulumi-tuskr/plugin");
  new PluginStoredFolder("folder", { path: config.require("folder"), tag, retentionEpochs });
} else if (variant === "noopfolder") {
  new NoopFolder("folder", config.require("folder"));
} else {
  throw new Error(
    `bench:variant must be "storedfile", "plugin", "noop", "folder", "onefolder", "pluginfolder" or "noopfolder", got ${JSON.stringify(variant)}`,
  );
}
