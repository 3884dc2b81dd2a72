import type * as pulumi from "@pulumi/pulumi";

/**
 * The provider object handed to `pulumi.dynamic.Resource`, i.e. the only StoredFile code Pulumi
 * serializes into state (as `__provider`, in each resource's inputs and outputs).
 *
 * It is this module's whole `module.exports`, on purpose. Pulumi's closure serializer writes a
 * value that is the exports of a module under `node_modules` as a `require()` of that module,
 * mapped through the package's `exports` field: installed as a package, the state holds only
 * `require("pulumi-tuskr/provider")` (about 300 bytes). When the package is not under
 * `node_modules` (a symlinked checkout, `npm link`), the object below is serialized by value
 * instead: seven capture-free arrow functions (about 1.9 KB), each loading the real provider by
 * package name inside the provider process.
 *
 * Either way the state holds no client, schema, URL or key, and an upgraded package takes effect
 * — `delete` included — without a replace. `pulumi-tuskr/provider` and `pulumi-tuskr/impl` are
 * therefore permanent entry points: states written by any release name one of them.
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
