import { describe, expect, it } from "vitest";
import { LIMITS } from "../../../api";
import { StoredFileCore } from "../../../provider/file/core";
import { changeFailures, validateInputs } from "../../../provider/file/validate";

/**
 * A secret input's check failure names the field and the limit, never the value: its reason is
 * made without the value, so no form of it (cut short, quoted, a count read from it) gets through,
 * and the wording and the limit are never mangled by masking text that happens to match it.
 */

const secretFailures = (news: Record<string, unknown>, field: string) => validateInputs({ blobId: "b1", ...news }, [field]).failures;

/** The one failure of a secret `field`: no property, the reason as given. */
const secretFailure = (field: string, reason: string) => [{ property: "", reason: `${field} (a secret input): ${reason}`, input: field, secret: true }];

describe("a secret input's check failure is made without its value", () => {
  it("says no part of a long text the schema quotes when it is not secret", () => {
    const date = `SECRET-DATE-${"q".repeat(80)}`;
    const iso = "retainUntil must be an ISO 8601 date (2027-01-31, read as midnight UTC) or a time with its zone (2027-01-31T12:00:00Z)";
    expect(validateInputs({ blobId: "b1", retainUntil: date }).failures[0].reason).toBe(`${iso}; got ${JSON.stringify(date.slice(0, 64))}`);
    expect(secretFailures({ retainUntil: date }, "retainUntil")).toEqual(secretFailure("retainUntil", iso));
    const type = `SECRET-TYPE-${"t".repeat(80)}`;
    const source = { "4dabf18193072939515e22adb298388d": "c44067f5952c0a294b673a41bacd8c17", text: "x" };
    expect(validateInputs({ source, contentType: type }, ["contentType"]).failures).toEqual(
      secretFailure("contentType", "contentType must be a media type, type/subtype with optional parameters (text/html, text/plain; charset=utf-8)"),
    );
  });

  it("keeps the limit and the wording whole when the value's texts are short or numbers", () => {
    const keys = Object.fromEntries(Array.from({ length: LIMITS.metadataMaxKeys + 1 }, (_, i) => [`k${i}`, i]));
    expect(secretFailures({ metadata: keys }, "metadata")).toEqual(secretFailure("metadata", `metadata must have at most ${LIMITS.metadataMaxKeys} keys`));
    expect(secretFailures({ keepAlive: { minRemainingEpochs: 0, renewEpochs: 1 } }, "keepAlive")).toEqual(
      secretFailure("keepAlive", "keepAlive.minRemainingEpochs must be >= 1"),
    );
    expect(secretFailures({ tag: "b".repeat(300) }, "tag")).toEqual(secretFailure("tag", "tag must be at most 256 characters"));
  });

  it("names no key a secret keepAlive holds that its schema does not know (the key is part of the value)", () => {
    expect(secretFailures({ keepAlive: { minRemainingEpochs: 1, renewEpochs: 1, "s3cret-key": 1 } }, "keepAlive")).toEqual(
      secretFailure("keepAlive", "Unrecognized key"),
    );
  });

  it("says where in metadata a bad value is only when metadata is not secret", () => {
    expect(validateInputs({ blobId: "b1", metadata: { owner: { team: null } } }).failures[0].reason).toMatch(/^metadata\.owner\.team is null:/);
    expect(secretFailures({ metadata: { owner: { team: null } } }, "metadata")).toEqual(
      secretFailure("metadata", 'a value in metadata is null: under merge-patch semantics null means "remove", so it cannot be stored; omit the key instead'),
    );
    expect(secretFailures({ metadata: { owner: { count: Number.POSITIVE_INFINITY } } }, "metadata")).toEqual(
      secretFailure("metadata", "a number in metadata is not finite, not a JSON value: numbers must be finite"),
    );
    expect(secretFailures({ metadata: JSON.parse('{"owner":{"__proto__":1}}') }, "metadata")).toEqual(
      secretFailure("metadata", "metadata: a key named __proto__ cannot be stored safely (Pulumi's SDKs drop it without a word); rename it"),
    );
  });

  it("says neither the increase nor the path of a secret source", () => {
    const rise = `retentionEpochs can rise by at most ${LIMITS.maxEpochsAhead} epochs in one update (storage is bought at most ${LIMITS.maxEpochsAhead} epochs ahead)`;
    const clock = { nowMs: Date.now(), epochMs: 86_400_000 };
    expect(changeFailures({ retentionEpochs: 10 }, { retentionEpochs: 70 }, [], clock)[0].reason).toBe(`${rise}; got an increase of 60`);
    expect(changeFailures({ retentionEpochs: 10 }, { retentionEpochs: 70 }, ["retentionEpochs"], clock)).toEqual(secretFailure("retentionEpochs", rise));
    const source = { "4dabf18193072939515e22adb298388d": "c44067f5952c0a294b673a41bacd8c17", path: "/nonexistent/SECRET-PATH.txt" };
    const [failure] = validateInputs({ source }, ["source"]).failures;
    expect(failure.reason).toMatch(/^source \(a secret input\): source file does not exist \(paths are relative to the program's directory, /);
    expect(failure.reason).not.toContain("SECRET-PATH");
    // What the program's own check found (its words name the path) is left out whole.
    const marked = { tuskrSourceProblem: "StoredFile x: source file /nonexistent/SECRET-PATH.txt does not exist" };
    expect(validateInputs({ source: marked }, ["source"]).failures).toEqual(
      secretFailure("source", "source cannot be uploaded (the program's check refused it)"),
    );
  });

  it("at check, a date past the horizon names neither the date nor how far it is", () => {
    const core = new StoredFileCore({}, () => undefined);
    core.configure({ get: (key: string) => ({ "tuskr:apiKey": "k", "tuskr:baseUrl": "http://127.0.0.1:1" })[key] });
    const until = "2099-01-01";
    const check = (secrets: string[]) => core.check({}, validateInputs({ blobId: "b1", retainUntil: until }, secrets), secrets).failures;
    const shown = check([]);
    expect(shown).toEqual([
      {
        property: "retainUntil",
        reason: expect.stringMatching(/^retainUntil must be at most 52 epochs from now \(got 2099-01-01, [\d.]+ epochs from now\): /),
      },
    ]);
    const [secret] = check(["retainUntil"]);
    expect(secret.reason).toMatch(
      /^retainUntil \(a secret input\): retainUntil must be at most 52 epochs from now: the service sells at most 53 epochs ahead\. Declare \S+ or earlier$/,
    );
    expect(secret.reason).not.toContain("2099");
  });
});
