// The program-facing arguments live with the file's core, not in a front door, so that dynamic/ and
// plugin/ both import them and neither imports the other.
import type * as pulumi from "@pulumi/pulumi";
import type { StoredFileInputDocs } from "./documented-args";
import type { StoredFileInputs } from "./schema";

/**
 * Arguments of a StoredFile: one `pulumi.Input` per field of the input schema
 * (`StoredFileInputsSchema`), mapped over the generated `StoredFileInputDocs` so that each field
 * carries its documentation to the editor. Exactly one of `source` and `blobId`; any other
 * omitted field is unmanaged.
 */
export type StoredFileArgs = { [K in keyof StoredFileInputDocs]: pulumi.Input<StoredFileInputs[K & keyof StoredFileInputs]> };
