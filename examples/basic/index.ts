import * as pulumi from "@pulumi/pulumi";
import { StoredFile } from "pulumi-tuskr";
import { declared } from "./files";

// Two ways to declare a file:
// - adopt one already uploaded, by the blobId its upload returned (`npm run demo` uploads
//   files/logo.svg and sets it):  pulumi config set logoBlobId <blobId>
// - or give its content: the program uploads it, and its blobId becomes an output.
const config = new pulumi.Config();
const logo = new StoredFile("logo", { ...declared.logo, blobId: config.require("logoBlobId") });
const handbook = new StoredFile("handbook", { ...declared.handbook, source: new pulumi.asset.FileAsset("files/handbook.md") });
const dataset = new StoredFile("dataset", { ...declared.dataset, source: new pulumi.asset.FileAsset("files/prices.csv") });

export const files = Object.fromEntries(
  Object.entries({ logo, handbook, dataset }).map(([name, file]) => [
    name,
    pulumi.output({ blobId: file.blobId, tag: file.tag, retentionEpochs: file.retentionEpochs, expiresAt: file.expiresAt, url: file.url }),
  ]),
);
