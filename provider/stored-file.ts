import * as pulumi from "@pulumi/pulumi";
import storedFileProviderStub from "./stored-file-stub";

/** Arguments of a StoredFile. Every field but `blobId` is optional; an omitted field is unmanaged. */
export interface StoredFileArgs {
  /** The file's blob id, as returned by the upload. A change means another file: replace. */
  blobId: pulumi.Input<string>;
  /** Display name (≤ 256 characters). A change is one PATCH. `""` clears it. */
  name?: pulumi.Input<string>;
  /** Label used for filtering (≤ 256 characters). A change is one PATCH. `""` clears it. */
  tag?: pulumi.Input<string>;
  /**
   * Free-form JSON object (≤ 64 keys, ≤ 16 KiB as JSON). The stored metadata is made exactly
   * equal to it: keys you remove are removed. `{}` clears it. Values may not be `null`.
   */
  metadata?: pulumi.Input<Record<string, any>>;
  /**
   * Whole epochs bought through this resource so far (≥ 0; an epoch is about a day). Raising it
   * by N buys N epochs with one renew; it can never go down, since bought epochs cannot be
   * returned. One raise can buy at most 53 epochs (the service's horizon).
   */
  retentionEpochs?: pulumi.Input<number>;
}

/**
 * A file kept on the Tuskr service, adopted by blobId. Its name, tag and metadata converge to
 * what is declared; raising `retentionEpochs` buys storage epochs. Deleting the resource sends
 * no request: blobs cannot be deleted through this API, so the file keeps its paid period.
 */
export class StoredFile extends pulumi.dynamic.Resource {
  declare readonly blobId: pulumi.Output<string>;
  declare readonly name: pulumi.Output<string | undefined>;
  declare readonly tag: pulumi.Output<string | undefined>;
  declare readonly metadata: pulumi.Output<Record<string, any> | undefined>;
  /** Epochs bought through this resource and confirmed by the service. */
  declare readonly retentionEpochs: pulumi.Output<number>;
  /** Where the file is served. */
  declare readonly url: pulumi.Output<string | undefined>;
  /** Size in bytes. */
  declare readonly size: pulumi.Output<number | undefined>;
  declare readonly createdAt: pulumi.Output<string | undefined>;
  /** End of the paid storage period, as of the last read or write. */
  declare readonly expiresAt: pulumi.Output<string | undefined>;

  constructor(name: string, args: StoredFileArgs, opts?: pulumi.CustomResourceOptions) {
    refusePlaintextApiKey();
    const outputsOnly = { url: undefined, size: undefined, createdAt: undefined, expiresAt: undefined };
    super(storedFileProviderStub, name, { ...outputsOnly, ...args }, opts, "tuskr", "StoredFile");
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
