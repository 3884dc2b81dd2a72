import * as rpc from "@pulumi/pulumi/runtime/rpc";
import { expect, it } from "vitest";
import * as markers from "../../../provider/engine/markers";

// The plugin writes the protocol's special values itself (the SDK module that exports them loads
// most of the SDK): they must be the SDK's, in every SDK version CI runs.
it("the special values are the SDK's", () => {
  expect({ ...markers }).toEqual({
    SIG_KEY: rpc.specialSigKey,
    SECRET_SIG: rpc.specialSecretSig,
    ASSET_SIG: rpc.specialAssetSig,
    ARCHIVE_SIG: rpc.specialArchiveSig,
    UNKNOWN: rpc.unknownValue,
  });
});
