import { describe, expect, it } from "vitest";
import { goName, pythonName } from "../../../provider/docs/names";

/**
 * The names the reference tables give each property in Python and Go, as Pulumi's generators
 * make them (test/e2e/plugin/sdks.e2e.test.ts checks every property of the schema against the
 * generated SDKs; these are the cases its names do not have).
 */
describe("a property's name in each language", () => {
  it.each([
    ["blobId", "blob_id", "BlobId"],
    ["retentionEpochs", "retention_epochs", "RetentionEpochs"],
    ["url", "url", "Url"],
    ["sha256Hash", "sha256_hash", "Sha256Hash"],
    ["blobURLList", "blob_url_list", "BlobURLList"],
    ["uptimeCheckIPs", "uptime_check_ips", "UptimeCheckIPs"],
    ["from", "from_", "From"],
  ])("%s: Python %s, Go %s", (name, python, go) => {
    expect(pythonName(name)).toBe(python);
    expect(goName(name)).toBe(go);
  });
});
