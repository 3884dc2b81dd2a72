import type * as pulumi from "@pulumi/pulumi";

/**
 * The only folder code Pulumi serializes into state, like stored-file-stub.ts. States name these
 * entry points forever, so `folder-provider` and `folder-impl` must never move.
 */
const storedFolderProviderStub = {
  configure: (...a: any[]) => require("pulumi-tuskr/folder-impl").configure(...a),
  check: (...a: any[]) => require("pulumi-tuskr/folder-impl").check(...a),
  diff: (...a: any[]) => require("pulumi-tuskr/folder-impl").diff(...a),
  create: (...a: any[]) => require("pulumi-tuskr/folder-impl").create(...a),
  read: (...a: any[]) => require("pulumi-tuskr/folder-impl").read(...a),
  update: (...a: any[]) => require("pulumi-tuskr/folder-impl").update(...a),
  delete: (...a: any[]) => require("pulumi-tuskr/folder-impl").delete(...a),
} as unknown as pulumi.dynamic.ResourceProvider;

export = storedFolderProviderStub;
