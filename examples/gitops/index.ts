import * as pulumi from "@pulumi/pulumi";
import { StoredFolder } from "pulumi-tuskr";

// Everything environment-specific comes from Pulumi.<stack>.yaml; the API key from the secret
// `tuskr:apiKey` that the pipeline sets, never from this repository. The files themselves are
// the ones in files/, uploaded by the stack: no blob ids to copy anywhere.
const config = new pulumi.Config();
const environment = config.require("environment");
const retentionEpochs = config.requireNumber("retentionEpochs");
// Renewed by the daily scheduled `up` when fewer epochs than this are left (the workflow).
const keepAlive = config.getObject<{ minRemainingEpochs: number; renewEpochs: number }>("keepAlive");

const release = new StoredFolder("release", {
  path: "files",
  tag: `${environment}-docs`,
  metadata: { environment, managedBy: "pulumi" },
  retentionEpochs,
  keepAlive,
  files: { "app.js": { tag: `${environment}-app` } },
});

export const blobIds = release.blobIds;
