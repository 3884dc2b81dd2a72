import * as pulumi from "@pulumi/pulumi";
import { StoredFile } from "pulumi-tuskr";

// Everything environment-specific comes from Pulumi.<stack>.yaml; the API key from the secret
// `tuskr:apiKey` that the pipeline sets, never from this repository.
const config = new pulumi.Config();
const environment = config.require("environment");
const retentionEpochs = config.requireNumber("retentionEpochs");
const blobIds = config.requireObject<{ releaseNotes: string; bundle: string }>("blobIds");

const releaseNotes = new StoredFile("release-notes", {
  blobId: blobIds.releaseNotes,
  name: "release-notes.md",
  tag: `${environment}-docs`,
  metadata: { environment, managedBy: "pulumi" },
  retentionEpochs,
});

const bundle = new StoredFile("bundle", {
  blobId: blobIds.bundle,
  name: "app.js",
  tag: `${environment}-app`,
  metadata: { environment, managedBy: "pulumi" },
  retentionEpochs,
});

export const expiresAt = { releaseNotes: releaseNotes.expiresAt, bundle: bundle.expiresAt };
