import * as pulumi from "@pulumi/pulumi";
import type { StoredFileArgs } from "../file/args";
import { STORED_FILE_TYPES, formatUrn } from "../engine/urns";
import { INPUT_FIELDS, REPORTED_FIELDS, type StoredFileInputs, type StoredFileState } from "../file/schema";
import { withProtoKeysNamed } from "../file/validate";
import { assetProblem, sourceProblemMarker } from "../file/source";
import storedFileProviderStub from "../stored-file-stub";

export type { StoredFileArgs } from "../file/args";

type ReportedField = (typeof REPORTED_FIELDS)[number];
/**
 * Outputs: every input as applied, plus what the service reports or the provider derives.
 * `retentionEpochs` is always set: the declared end reached, 0 if none.
 */
export type StoredFileOutputs = { readonly [K in keyof StoredFileInputs]-?: pulumi.Output<StoredFileInputs[K]> } & {
  readonly blobId: pulumi.Output<string>;
  readonly retentionEpochs: pulumi.Output<number>;
} & { readonly [K in ReportedField]: pulumi.Output<NonNullable<StoredFileState[K]> | undefined> };

/**
 * A file kept on Tuskr, uploaded from `source` or adopted by `blobId`; name, tag and metadata
 * converge to what is declared. Deleting sends no request: the API cannot delete blobs, so the paid
 * period stands.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the outputs are declared on the class this way; the dynamic resource sets them at run time.
export interface StoredFile extends StoredFileOutputs {}
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: as above.
export class StoredFile extends pulumi.dynamic.Resource {
  constructor(name: string, args: StoredFileArgs, opts?: pulumi.CustomResourceOptions) {
    refusePlaintextApiKey();
    // Only properties passed here become outputs of a dynamic resource: every output is passed,
    // undefined unless declared (undefined inputs never reach the provider).
    const props: Record<string, unknown> = {};
    for (const field of [...INPUT_FIELDS, ...REPORTED_FIELDS]) props[field] = undefined;
    // The resource's identity, so that its purchase keys are the same in every run (a create
    // interrupted and run again included); the dynamic provider is not told it otherwise.
    const __urn = identityOf(name, opts?.parent);
    super(
      storedFileProviderStub,
      name,
      { ...props, ...protoKeysNamed({ ...args, source: undefined }), source: checkedSource(name, args.source), __urn, __secretInputs: secretFieldsOf(args) },
      opts,
      "tuskr",
      "StoredFile",
    );
  }
}

/**
 * A URN-like identity, known at once: stack, project, type, and the parent's name when there is
 * one. (pulumi.createUrn, which waits for the parent's URN, hangs a program that declares two
 * StoredFiles under one component.)
 */
export function identityOf(name: string, parent: pulumi.Resource | undefined, type: string = STORED_FILE_TYPES.dynamic): string {
  const parentName = (parent as { __name?: unknown } | undefined)?.__name;
  const qualified = typeof parentName === "string" ? `${parentName}$${name}` : name;
  return formatUrn({ stack: pulumi.getStack(), project: pulumi.getProject(), type, name: qualified });
}

/**
 * Renames `__proto__` keys to the standin, inside outputs and promises too, because the SDK copies
 * objects by assignment and would drop them before check could refuse them.
 */
export function protoKeysNamed<T>(value: T): T {
  return withProtoKeysNamed(value, (v) => {
    if (pulumi.Output.isInstance(v)) return v.apply(protoKeysNamed);
    return v instanceof Promise ? v.then(protoKeysNamed) : v;
  });
}

/**
 * Names of the inputs given as secrets. The engine strips secrecy from a dynamic provider's inputs,
 * so this tells it which values never to put in a message.
 */
export function secretFieldsOf(args: object): pulumi.Output<string[]> {
  const fields = Object.keys(args).filter((f) => (args as Record<string, unknown>)[f] !== undefined);
  const flags = Promise.all(fields.map((f) => pulumi.isSecret(pulumi.output((args as Record<string, pulumi.Input<unknown>>)[f]))));
  return pulumi.output(flags.then((secret) => fields.filter((_, i) => secret[i])));
}

/**
 * Checks the content before the engine sees it, so a bad path fails check with this resource's name
 * and the limit. An asset is passed as a promise of itself because pulumi.output() would flatten
 * it.
 */
function checkedSource(name: string, source: StoredFileArgs["source"]): StoredFileArgs["source"] {
  if (source === undefined || pulumi.Output.isInstance(source)) return source;
  return (async () => {
    const asset = await source;
    const fields = asset as unknown as { path?: Promise<string>; text?: Promise<string>; uri?: Promise<string> };
    const problem = await assetProblem(fields, pulumi.asset.Archive.isInstance(asset));
    // Reported by check (a rejected input would hang an inline Automation API preview).
    if (problem) return sourceProblemMarker(`StoredFile ${name}: ${problem}`) as unknown as typeof asset;
    return asset;
  })();
}

/**
 * Pulumi stores the stack config it hands to providers in the state: a key set without
 * `--secret` would sit there in plain text. Refuse it before anything is registered.
 */
export function refusePlaintextApiKey(): void {
  const key = "tuskr:apiKey";
  // isConfigSecret is exported at run time but not typed; without it, there is nothing to check.
  const isSecret = (pulumi.runtime as unknown as { isConfigSecret?: (k: string) => boolean }).isConfigSecret;
  if (isSecret && pulumi.runtime.getConfig(key) !== undefined && !isSecret(key)) {
    throw new Error(
      `${key} is set in plain text, so Pulumi would store it unencrypted in the state; ` + `set it as a secret: pulumi config set --secret ${key} <key>`,
    );
  }
}
