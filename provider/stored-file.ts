import * as pulumi from "@pulumi/pulumi";
import { INPUT_FIELDS, REPORTED_FIELDS, type StoredFileInputs, type StoredFileState } from "./stored-file-schema";
import storedFileProviderStub from "./stored-file-stub";

/**
 * Arguments of a StoredFile: one `pulumi.Input` per field of the input schema
 * (`StoredFileInputsSchema`), so a documented input cannot be missing from the type. Every
 * field but `blobId` is optional; an omitted field is unmanaged.
 */
export type StoredFileArgs = { [K in keyof StoredFileInputs]: pulumi.Input<StoredFileInputs[K]> };

type ReportedField = (typeof REPORTED_FIELDS)[number];
/**
 * Outputs: every input, as applied, and what the service reports (`url`, `size`, `createdAt`,
 * `expiresAt`) or the provider derives (`remainingEpochs`, `keepAliveEpochs`).
 * `retentionEpochs` is always set: the epochs bought through this resource and confirmed, 0 if
 * none were declared.
 */
export type StoredFileOutputs = { readonly [K in keyof StoredFileInputs]-?: pulumi.Output<StoredFileInputs[K]> } & {
  readonly blobId: pulumi.Output<string>;
  readonly retentionEpochs: pulumi.Output<number>;
} & { readonly [K in ReportedField]: pulumi.Output<NonNullable<StoredFileState[K]> | undefined> };

/**
 * A file kept on the Tuskr service, adopted by blobId. Its name, tag and metadata converge to
 * what is declared; raising `retentionEpochs` buys storage epochs. Deleting the resource sends
 * no request: blobs cannot be deleted through this API, so the file keeps its paid period.
 */
export interface StoredFile extends StoredFileOutputs {}
export class StoredFile extends pulumi.dynamic.Resource {
  constructor(name: string, args: StoredFileArgs, opts?: pulumi.CustomResourceOptions) {
    refusePlaintextApiKey();
    // Only properties passed here become outputs of a dynamic resource: every output is passed,
    // undefined unless declared (undefined inputs never reach the provider).
    const props: Record<string, unknown> = {};
    for (const field of [...INPUT_FIELDS, ...REPORTED_FIELDS]) props[field] = undefined;
    super(storedFileProviderStub, name, { ...props, ...args }, opts, "tuskr", "StoredFile");
  }
}

/**
 * Pulumi stores the stack config it hands to providers in the state: a key set without
 * `--secret` would sit there in plain text. Refuse it before anything is registered.
 */
function refusePlaintextApiKey(): void {
  const key = "tuskr:apiKey";
  // isConfigSecret is exported at run time but not typed; without it, there is nothing to check.
  const isSecret = (pulumi.runtime as unknown as { isConfigSecret?: (k: string) => boolean }).isConfigSecret;
  if (isSecret && pulumi.runtime.getConfig(key) !== undefined && !isSecret(key)) {
    throw new Error(
      `${key} is set in plain text, so Pulumi would store it unencrypted in the state; ` +
        `set it as a secret: pulumi config set --secret ${key} <key>`,
    );
  }
}
