import type * as pulumi from "@pulumi/pulumi";

/**
 * The only StoredFile code Pulumi serializes into state; it is the module's whole `module.exports`
 * so an installed package is recorded as a small `require("pulumi-tuskr/provider")`. States name
 * these entry points forever, so `provider` and `impl` must never move.
 */
const storedFileProviderStub = {
  configure: (...a: any[]) => require("pulumi-tuskr/impl").configure(...a),
  check: (...a: any[]) => require("pulumi-tuskr/impl").check(...a),
  diff: (...a: any[]) => require("pulumi-tuskr/impl").diff(...a),
  create: (...a: any[]) => require("pulumi-tuskr/impl").create(...a),
  read: (...a: any[]) => require("pulumi-tuskr/impl").read(...a),
  update: (...a: any[]) => require("pulumi-tuskr/impl").update(...a),
  delete: (...a: any[]) => require("pulumi-tuskr/impl").delete(...a),
} as unknown as pulumi.dynamic.ResourceProvider;

export = storedFileProviderStub;
