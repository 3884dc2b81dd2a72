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

  it("a key a secret value's schema does not know is part of the value: not named (zod's message names it)", () => {
    const files = { "a.txt": { tag: "x", "s3cret-key": 1 } };
    expect(validatedInputs({ path: "site", files }, ["files"]).failures).toEqual([
      { property: "", reason: 'files["a.txt"] (a secret input): Unrecognized key', input: 'files["a.txt"]', secret: true },
    ]);
    expect(validatedInputs({ path: "site", files }).failures).toEqual([{ property: 'files["a.txt"]', reason: 'Unrecognized key: "s3cret-key"' }]);
    const keepAlive = { minRemainingEpochs: 1, renewEpochs: 1, "s3cret-key": 1, other: 2 };
    expect(JSON.stringify(validatedInputs({ path: "site", keepAlive }, ["keepAlive"]).failures)).not.toContain("s3cret");
    expect(validatedInputs({ path: "site", keepAlive }).failures[0].reason).toBe('Unrecognized keys: "s3cret-key", "other"');
  });

  it("the same failure of an input that is not secret names its property", () => {
    const { failures } = validatedInputs({ path: "site", retainUntil: "soon" });
    expect(failures).toEqual([{ property: "retainUntil", reason: expect.stringContaining("retainUntil") }]);
  });
});
