import * as pulumi from "@pulumi/pulumi";
import { afterEach, describe, expect, it } from "vitest";
import { StoredFile } from "../../../provider/dynamic/stored-file";

afterEach(() => pulumi.runtime.setAllConfig({}, []));

describe("StoredFile refuses an API key that would be stored in plain text", () => {
  it("throws before registering anything when tuskr:apiKey is not a secret", () => {
    pulumi.runtime.setAllConfig({ "tuskr:apiKey": "tsk_live_plain_key_123" }, []);
    expect(() => new StoredFile("f", { blobId: "b" })).toThrow(/tuskr:apiKey is set in plain text.*pulumi config set --secret tuskr:apiKey/);
  });
  it("the message does not repeat the key", () => {
    pulumi.runtime.setAllConfig({ "tuskr:apiKey": "tsk_live_plain_key_123" }, []);
    expect(() => new StoredFile("f", { blobId: "b" })).not.toThrow(/tsk_live_plain_key_123/);
  });
  it("accepts a secret key (the constructor gets past the check)", () => {
    pulumi.runtime.setAllConfig({ "tuskr:apiKey": "tsk_live_secret_key_123" }, ["tuskr:apiKey"]);
    let error: unknown;
    try {
      new StoredFile("f", { blobId: "b" });
    } catch (e) {
      error = e;
    }
    expect(String(error ?? "")).not.toMatch(/plain text/);
  });
});
