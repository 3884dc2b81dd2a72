import * as pulumi from "@pulumi/pulumi";
import { INPUT_FIELDS, REPORTED_FIELDS, STORED_FILE_TYPE, type StoredFileInputs, type StoredFileState } from "./stored-file-schema";
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
    // The resource's URN, so that its purchase keys are the same in every run (a create
    // interrupted and run again included); the dynamic provider is not told it otherwise.
    const __urn = pulumi.createUrn(name, STORED_FILE_TYPE, opts?.parent);
    super(storedFileProviderStub, name, { ...props, ...args, __urn, __secretInputs: secretFieldsOf(args) }, opts, "tuskr", "StoredFile");
  }
}

/**
 * The names of the inputs given as secrets. The engine strips secrecy from what a dynamic
 * provider receives, so the provider is told this way which values it must never put in a
 * message (the names only: the list itself is not secret).
 */
function secretFieldsOf(args: StoredFileArgs): pulumi.Output<string[]> {
  const fields = Object.keys(args).filter((f) => (args as Record<string, unknown>)[f] !== undefined);
  const flags = Promise.all(fields.map((f) => pulumi.isSecret(pulumi.output((args as Record<string, pulumi.Input<unknown>>)[f]))));
  return pulumi.output(flags.then((secret) => fields.filter((_, i) => secret[i])));
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
