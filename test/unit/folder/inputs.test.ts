import { describe, expect, it } from "vitest";
import { validatedInputs } from "../../../provider/folder/inputs";

describe("a folder's inputs, typed at its front door", () => {
  it("a secret input's failure names no property and shows none of its value", () => {
    const secret = `s3cret-${"x".repeat(80)}`;
    const { failures } = validatedInputs({ path: "site", retainUntil: secret }, ["retainUntil"]);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ property: "", input: "retainUntil", secret: true });
    expect(failures[0].reason).toMatch(/^retainUntil \(a secret input\): /);
    expect(JSON.stringify(failures)).not.toContain("s3cret");
  });

  it("the same failure of an input that is not secret names its property", () => {
    const { failures } = validatedInputs({ path: "site", retainUntil: "soon" });
    expect(failures).toEqual([{ property: "retainUntil", reason: expect.stringContaining("retainUntil") }]);
  });
});
