import * as pulumi from "@pulumi/pulumi";
import { StoredFolder } from "pulumi-tuskr";
import { releaseArgs } from "./release";

// Everything environment-specific comes from Pulumi.<stack>.yaml; the API key from the secret
// `tuskr:apiKey` that the pipeline sets, never from this repository. The files themselves are
// the ones in files/, uploaded by the stack: no blob ids to copy anywhere. Both stacks keep the
// same files, so they share the service's entries: release.ts says what that asks of them.
const config = new pulumi.Config();
const retentionEpochs = config.requireNumber("retentionEpochs");
// Renewed by the daily scheduled `up` when fewer epochs than this are left (the workflow).
const keepAlive = config.getObject<{ minRemainingEpochs: number; renewEpochs: number }>("keepAlive");

const release = new StoredFolder("release", releaseArgs({ retentionEpochs, keepAlive }));

export const blobIds = release.blobIds;
