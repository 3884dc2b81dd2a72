import type * as pulumi from "@pulumi/pulumi";

/**
 * The provider object of StoredFolder's one resource (`oneResource: true`): the only folder code
 * Pulumi serializes into state. Like stored-file-stub.ts, installed as a package it is written as
 * `require("pulumi-tuskr/folder-provider")`, and otherwise as arrow functions that load the real
 * provider by package name; `pulumi-tuskr/folder-provider` and `pulumi-tuskr/folder-impl` are
 * therefore permanent entry points.
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
