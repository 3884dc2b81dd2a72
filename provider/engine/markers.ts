/**
 * Pulumi's special values on the wire (unknowns at preview, secrets, assets): constants of the
 * engine's protocol. Written here rather than imported from `@pulumi/pulumi/runtime/rpc`, whose
 * loading brings much of the SDK's runtime into the provider plugin, which needs none of it; a
 * unit test checks each against the SDK's own, for the SDK this package is tested with.
 */
export const SIG_KEY = "4dabf18193072939515e22adb298388d";
export const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";
export const ASSET_SIG = "c44067f5952c0a294b673a41bacd8c17";
export const ARCHIVE_SIG = "0def7320c3a5731c473e5ecbe6d01bc7";
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
