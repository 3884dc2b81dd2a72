import { describe, expect, it } from "vitest";
import { redactString, redactValue } from "../../../provider/client/errors";

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

  it("masks any run of 8 or more characters of a long secret, so a secret cut short, trimmed or embedded is caught", () => {
    const secret = `SEKRIT-name-${"q".repeat(100)}-tail.txt`;
    for (const part of [secret.slice(0, 80), secret.slice(30), secret.slice(5, 13), ` ${secret.slice(0, 100)}  `.trim()]) {
      expect(redactString(`named "${part}" here`, [secret]), part).toBe('named "[REDACTED]" here');
    }
    // Cut inside its JSON-escaped or percent-encoded form, as a message quoting it would.
    const quoted = 'a "quoted" secret, with ö';
    expect(redactString(`got ${JSON.stringify(quoted).slice(0, 14)}`, [quoted])).toBe('got "[REDACTED]');
    expect(redactString(`GET /files?q=${encodeURIComponent(quoted).slice(0, 20)}`, [quoted])).toBe("GET /files?q=[REDACTED]");
    // Overlapping and adjacent runs are one mask.
    expect(redactString(`${secret.slice(0, 20)}${secret.slice(10, 40)}!`, [secret])).toBe("[REDACTED]!");
  });

  it("masks a long secret a service stored normalised: case, Unicode compatibility forms, spaces collapsed", () => {
    const secret = "Quarterly  Ｆｉｇｕｒｅｓ  Board-Only";
    expect(redactString(`name "${secret.normalize("NFKC").replace(/\s+/g, " ").toUpperCase()}"`, [secret])).toBe('name "[REDACTED]"');
  });

  it("masks a long secret a service stored decomposed (NFD, NFKD)", () => {
    for (const secret of ["비밀번호는한국어로된긴문장입니다", "résumé-éléphant-ça-déjà"])
      for (const form of ["NFD", "NFKD"] as const) expect(redactString(`said: ${secret.normalize(form)} (end)`, [secret])).toBe("said: [REDACTED] (end)");
  });

  it("keeps wording that shares fewer than 8 characters with a long secret, and matches a short secret only whole", () => {
    const secret = "the-release-notes-2027";
    expect(redactString("the release notes of 2027: the-rel", [secret])).toBe("the release notes of 2027: the-rel");
    expect(redactString("token tok tokens", ["token"])).toBe("[REDACTED] tok [REDACTED]s");
  });

  it("masks short secrets and regex metacharacters, and never searches a mask again", () => {
    expect(redactString("a.b* and D", ["a.b*", "D"])).toBe("[REDACTED] and [REDACTED]");
    expect(redactString("xEx", ["E"])).toBe("x[REDACTED]x");
  });

  it("keeps a key named __proto__ as a key when it masks a value's strings", () => {
    const out = redactValue(JSON.parse('{"__proto__":{"k":"a-long-secret-key"}}'), ["a-long-secret-key"]) as Record<string, unknown>;
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    expect(JSON.stringify(out)).toBe('{"__proto__":{"k":"[REDACTED]"}}');
  });

  it("masks a secret in nested arrays and keys, keeping order, and leaves the value given as it was", () => {
    const secret = "tsk-secret-key-123";
    const given = { a: "x", list: ["ok", { [`k ${secret}`]: ["a", `pre ${secret}`] }, 2], n: 1, z: null };
    const copy = JSON.parse(JSON.stringify(given));
    const out = redactValue(given, [secret]);
    expect(JSON.stringify(out)).toBe('{"a":"x","list":["ok",{"k [REDACTED]":["a","pre [REDACTED]"]},2],"n":1,"z":null}');
    expect(given).toEqual(copy);
    const clean = { a: "x", list: ["ok", { k: ["a"] }] };
    expect(redactValue(clean, [secret])).toBe(clean);
  });
});
