import { describe, expect, it } from "vitest";
import { redactString } from "../../../provider/client/errors";

/** A secret never survives redaction, whatever its size, characters or the form a message carries it in. */
describe("redactString", () => {
  it("masks a 200,000-character secret without failing (and so without printing it)", () => {
    const secret = "k".repeat(200_000);
    expect(redactString(`${secret}x${secret}`, [secret])).toBe("[REDACTED]x[REDACTED]");
  });

  it("masks the forms a message may carry: raw, JSON-escaped (also \\u), percent-encoded (either case), form-encoded", () => {
    const secret = 'p@ss wörd+/&="q';
    const forms = [
      secret,
      JSON.stringify(secret).slice(1, -1),
      JSON.stringify(secret).slice(1, -1).replace("ö", "\\u00f6"),
      encodeURIComponent(secret),
      encodeURIComponent(secret).toLowerCase(),
      new URLSearchParams({ k: secret }).toString().slice(2),
    ];
    for (const form of forms) expect(redactString(`before ${form} after`, [secret]), form).toBe("before [REDACTED] after");
  });

  it("masks short secrets and regex metacharacters, and never searches a mask again", () => {
    expect(redactString("a.b* and D", ["a.b*", "D"])).toBe("[REDACTED] and [REDACTED]");
    expect(redactString("xEx", ["E"])).toBe("x[REDACTED]x");
  });
});
