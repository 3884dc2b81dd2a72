import * as pulumi from "@pulumi/pulumi";
import { StoredFile } from "pulumi-tuskr";
import { declared } from "./files";

// Each file's blobId is what its upload returned (`npm run demo` uploads ./files and sets them):
//   pulumi config set logoBlobId <blobId>
const config = new pulumi.Config();

export const files: Record<string, pulumi.Output<unknown>> = {};
for (const [name, args] of Object.entries(declared)) {
  const file = new StoredFile(name, { ...args, blobId: config.require(`${name}BlobId`) });
  files[name] = pulumi.output({ tag: file.tag, retentionEpochs: file.retentionEpochs, expiresAt: file.expiresAt, url: file.url });
}
