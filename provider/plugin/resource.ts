import * as pulumi from "@pulumi/pulumi";
import { STORED_FILE_TYPES, STORED_FOLDER_TYPES } from "../engine/urns";
import type { StoredFileArgs } from "../file/args";
import type { StoredFolderArgs } from "../folder/args";
import { PACKAGE_VERSION } from "../engine/identity";

/**
 * The plugin's StoredFile, declared as a `pulumi package add` SDK would, so the engine runs the
 * `tuskr` plugin instead of a dynamic provider. Used by the bench and the migration test.
 */
export class PluginStoredFile extends pulumi.CustomResource {
  constructor(name: string, args: StoredFileArgs, opts?: pulumi.CustomResourceOptions) {
    super(STORED_FILE_TYPES.plugin, name, { ...args }, { version: PACKAGE_VERSION, ...opts });
  }
}

/**
 * The provider plugin's StoredFolder (the folder as one resource, `tuskr:index:StoredFolder`),
 * declared as a generated SDK declares it. The inputs of `StoredFolder` but `oneResource` (the
 * plugin's folder is always one resource); the bench uses it.
 */
export class PluginStoredFolder extends pulumi.CustomResource {
  constructor(name: string, args: Omit<StoredFolderArgs, "oneResource"> & { part?: number }, opts?: pulumi.CustomResourceOptions) {
    super(STORED_FOLDER_TYPES.plugin, name, { ...args }, { version: PACKAGE_VERSION, ...opts });
  }
}
