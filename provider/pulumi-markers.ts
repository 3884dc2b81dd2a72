/**
 * Pulumi's special values on the wire (unknowns at preview, secrets, assets), taken from the SDK
 * so that they cannot drift from the engine's.
 */
export {
  specialArchiveSig as ARCHIVE_SIG,
  specialAssetSig as ASSET_SIG,
  specialSecretSig as SECRET_SIG,
  specialSigKey as SIG_KEY,
  unknownValue as UNKNOWN,
} from "@pulumi/pulumi/runtime/rpc";
