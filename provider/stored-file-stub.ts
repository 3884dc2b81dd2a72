import type * as pulumi from "@pulumi/pulumi";

/**
 * The only StoredFile code Pulumi serializes into state (as `__provider`). It captures nothing:
 * each method loads the real provider from the installed `pulumi-tuskr` package, by name, inside
 * the provider process. So the state stays small (< 2 KB a resource), holds no client, schema,
 * URL or key, and an upgraded package takes effect — `delete` included — without a replace.
 *
 * Every method is a capture-free arrow function on purpose: each captured helper would be
 * serialized too, at about 200 bytes apiece.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
export const storedFileProviderStub = {
  configure: (...a: any[]) => require("pulumi-tuskr/impl").configure(...a),
  check: (...a: any[]) => require("pulumi-tuskr/impl").check(...a),
  diff: (...a: any[]) => require("pulumi-tuskr/impl").diff(...a),
  create: (...a: any[]) => require("pulumi-tuskr/impl").create(...a),
  read: (...a: any[]) => require("pulumi-tuskr/impl").read(...a),
  update: (...a: any[]) => require("pulumi-tuskr/impl").update(...a),
  delete: (...a: any[]) => require("pulumi-tuskr/impl").delete(...a),
} as unknown as pulumi.dynamic.ResourceProvider;
