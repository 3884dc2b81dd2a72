import * as fs from "node:fs";
import * as pulumi from "@pulumi/pulumi";

// The benchmark's program: N files, declared from stack config, either as StoredFiles or as
// no-op dynamic resources (the floor: same engine, same backend, same inputs, a provider that
// does nothing). bench/run.mjs changes `bench:tag` and `bench:epochs` between steps.
const config = new pulumi.Config("bench");
const variant = config.require("variant"); // "storedfile" | "noop"
const tag = config.require("tag");
const retentionEpochs = config.requireNumber("epochs");
// One blobId per file, written by the runner (a file rather than config: 500 ids are 22 KB).
const blobIds: string[] = JSON.parse(fs.readFileSync(config.require("blobsFile"), "utf8"));

const args = (i: number) => ({
  blobId: blobIds[i],
  name: `file-${i}.txt`,
  tag,
  metadata: { bench: "tuskr", index: i },
  retentionEpochs,
});

/**
 * The floor's provider: create returns an id, diff and update compare inputs, read hands the
 * state back, delete does nothing. Capture-free, so what Pulumi serializes is just this object.
 */
const noopProvider: pulumi.dynamic.ResourceProvider = {
  async create(inputs) {
    return { id: String(inputs.blobId), outs: inputs };
  },
  async diff(_id, olds, news) {
    const changed = ["blobId", "name", "tag", "metadata", "retentionEpochs"].filter(
      (k) => JSON.stringify(olds[k]) !== JSON.stringify(news[k]),
    );
    return { changes: changed.length > 0, replaces: changed.includes("blobId") ? ["blobId"] : [] };
  },
  async update(_id, _olds, news) {
    return { outs: news };
  },
  async read(id, props) {
    return { id, props };
  },
  async delete() {},
};

class NoopFile extends pulumi.dynamic.Resource {
  constructor(name: string, args: Record<string, unknown>) {
    super(noopProvider, name, args, undefined, "bench", "NoopFile");
  }
}

if (variant === "storedfile") {
  // Loaded only here, so the floor does not pay for loading pulumi-tuskr.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { StoredFile } = require("pulumi-tuskr") as typeof import("pulumi-tuskr");
  blobIds.forEach((_, i) => new StoredFile(`f${i}`, args(i)));
} else if (variant === "noop") {
  blobIds.forEach((_, i) => new NoopFile(`f${i}`, args(i)));
} else {
  throw new Error(`bench:variant must be "storedfile" or "noop", got ${JSON.stringify(variant)}`);
}
