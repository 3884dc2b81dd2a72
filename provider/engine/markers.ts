/**
 * Pulumi's wire constants (unknowns, secrets, assets), copied rather than imported from
 * `@pulumi/pulumi/runtime/rpc`, which would load much of the SDK into the plugin. A unit test
 * checks them against the SDK's.
 */
export const SIG_KEY = "4dabf18193072939515e22adb298388d";
export const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";
export const ASSET_SIG = "c44067f5952c0a294b673a41bacd8c17";
export const ARCHIVE_SIG = "0def7320c3a5731c473e5ecbe6d01bc7";
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
