import * as pulumi from "@pulumi/pulumi";
import { getFileOutput } from "pulumi-tuskr";

// A file another stack keeps, read by blobId: one GET, nothing adopted, nothing written.
const shared = getFileOutput({ blobId: new pulumi.Config().require("blobId") });

export const name = shared.name;
export const tag = shared.tag;
export const expiresAt = shared.expiresAt;
export const remainingEpochs = shared.remainingEpochs;
