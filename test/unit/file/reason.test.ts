import { describe, expect, it } from "vitest";
import { StoredFileInputsSchema } from "../../../provider/file/schema";
import { issueReason, reasonText, shows } from "../../../provider/file/reason";
import { checkFailure } from "../../../provider/file/validate";

/** A check failure's reason is made of typed parts; which form a user reads is chosen by the input's secret flag. */

describe("a reason in parts", () => {
  const reason = ["metadata must be nested at most 32 levels deep", shows(" (metadata.a.b is deeper)"), "; ", shows("metadata.a", "a key")];

  it("says the value parts for an input that is not secret, and leaves them out (or says their stand-in) for a secret one", () => {
    expect(reasonText(reason, false)).toBe("metadata must be nested at most 32 levels deep (metadata.a.b is deeper); metadata.a");
    expect(reasonText(reason, true)).toBe("metadata must be nested at most 32 levels deep; a key");
  });

  it("becomes a failure by the secret flag alone, its wording as written even where it matches the value", () => {
    const rule = ["tag must be at most 256 characters", shows(" (got 300)")];
    expect(checkFailure("tag", rule, false)).toEqual({ property: "tag", reason: "tag must be at most 256 characters (got 300)" });
    expect(checkFailure("tag", rule, true)).toEqual({
      property: "",
      reason: "tag (a secret input): tag must be at most 256 characters",
      input: "tag",
      secret: true,
    });
  });

  it("rides on a schema's issue: the check that shows the value makes the parts, a fixed message is one part", () => {
    const parsed = StoredFileInputsSchema.shape.retentionEpochs.safeParse(1.5);
    expect(parsed.success).toBe(false);
    const [issue] = parsed.error!.issues;
    expect(issueReason(issue)).toEqual(["retentionEpochs must be a whole number of epochs", { value: " (got 1.5)" }]);
    expect(issue.message).toBe("retentionEpochs must be a whole number of epochs (got 1.5)");
    const [typeIssue] = StoredFileInputsSchema.shape.retentionEpochs.safeParse("5").error!.issues;
    expect(issueReason(typeIssue)).toEqual(["retentionEpochs must be a number"]);
  });
});
