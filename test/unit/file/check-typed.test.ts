import { describe, expect, it } from "vitest";
import { UNKNOWN } from "../../../provider/engine/markers";
import { StoredFileProvider } from "../../../provider/dynamic/stored-file-provider";
import { StoredFileCore } from "../../../provider/file/core";
import { declaredInputsOf, validateInputs } from "../../../provider/file/validate";
import { StoredFilePlugin } from "../../../provider/plugin/provider";

/**
 * StoredFileCore.check judges declared inputs its front door typed once (`validateInputs` for the
 * new ones, `declaredInputsOf` for those check returned before), as the folder core does.
 */

const config = { get: (key: string) => ({ "tuskr:apiKey": "k", "tuskr:baseUrl": "http://127.0.0.1:1" })[key] };
/** A date past the horizon: refused unless it was declared before. */
const FAR = "2099-01-01";

describe("the file core takes typed inputs", () => {
  it("passes the front door's inputs and failures through, adding those of the change after them", () => {
    const core = new StoredFileCore({}, () => undefined);
    core.configure(config);
    const news = validateInputs({ blobId: "b1", tag: 5, retentionEpochs: 60, retainUntil: FAR });
    const checked = core.check({ blobId: "b1" }, news, [], "urn:pulumi:s::p::tuskr:index:StoredFile::typed");
    expect(checked.inputs).toBe(news.inputs);
    expect(checked.failures.map((f) => f.property)).toEqual(["tag", "retentionEpochs", "retainUntil"]);
    // Judged against the inputs before: a date declared then, and a rise within the horizon, pass.
    expect(
      core.check({ blobId: "b1", retentionEpochs: 10, retainUntil: FAR }, validateInputs({ blobId: "b1", retentionEpochs: 60, retainUntil: FAR }), []).failures,
    ).toEqual([]);
  });

  it("declaredInputsOf keeps the input fields as they are, unknowns and all, and nothing else", () => {
    const metadata = JSON.parse('{"__proto__": 1}');
    const props = { blobId: "b1", tag: UNKNOWN, metadata, url: "https://x", __urn: "urn", __secretInputs: ["tag"], __provider: "p" };
    const inputs = declaredInputsOf(props);
    expect(Object.keys(inputs)).toEqual(["blobId", "tag", "metadata"]);
    expect(inputs.tag).toBe(UNKNOWN);
    expect(inputs.metadata).toBe(metadata);
  });

  it("each front door types the inputs before as the engine sends them: their own bookkeeping and secret markers aside", async () => {
    const dynamic = new StoredFileProvider({}, () => undefined);
    await dynamic.configure({ config });
    const olds = { blobId: "b1", retainUntil: FAR, __urn: "urn:pulumi:s::p::tuskr:index:StoredFile::d", __secretInputs: [], __provider: "p" };
    expect((await dynamic.check(olds, { blobId: "b1", retainUntil: FAR })).failures).toEqual([]);
    const plugin = new StoredFilePlugin(() => undefined);
    await plugin.configure({ apiKey: "k", baseUrl: "http://127.0.0.1:1" });
    const secret = { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", value: FAR };
    const urn = "urn:pulumi:s::p::tuskr:index:StoredFile::e";
    expect((await plugin.check(urn, { blobId: "b2", retainUntil: secret }, { blobId: "b2", retainUntil: secret })).failures).toEqual([]);
    expect((await plugin.check(urn, {}, { blobId: "b2", retainUntil: secret })).failures).toEqual([
      { property: "", reason: expect.stringMatching(/^retainUntil \(a secret input\): /), input: "retainUntil", secret: true },
    ]);
  });
});
