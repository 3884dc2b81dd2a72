import { ARCHIVE_SIG, ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LIMITS } from "../../../api";
import { planChange } from "../../../provider/file/plan";
import { validateInputs } from "../../../provider/file/validate";
import { walkedSource } from "../../../provider/file/source";

/** `source`: what check refuses before any request, and what the planner makes of a content change. */
const SIG = SIG_KEY;
const asset = (fields: Record<string, unknown>) => ({ [SIG]: ASSET_SIG, ...fields });
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-source-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const file = (name: string, content = "x") => {
  const p = path.join(dir, name);
  fs.writeFileSync(p, content);
  return p;
};
const failuresFor = (news: Record<string, unknown>) => validateInputs(news).failures.map((f) => `${f.property}: ${f.reason}`);

describe("check of source", () => {
  it("accepts a readable file within the limit, or a text", () => {
    expect(failuresFor({ source: asset({ path: file("ok.txt"), hash: "h" }) })).toEqual([]);
    expect(failuresFor({ source: asset({ text: "inline", hash: "h" }) })).toEqual([]);
  });

  it("refuses a missing file, a directory and a file over the limit, naming the path and the limit", () => {
    const missing = path.join(dir, "missing.txt");
    expect(failuresFor({ source: asset({ path: missing }) })).toEqual([expect.stringMatching(new RegExp(`^source: source file ${missing} does not exist`))]);
    expect(failuresFor({ source: asset({ path: dir }) })).toEqual([`source: source ${dir} is a directory, not a file: use StoredFolder for a directory`]);
    const big = file("big.bin");
    fs.truncateSync(big, LIMITS.uploadMaxBytes + 1);
    expect(failuresFor({ source: asset({ path: big }) })).toEqual([
      `source: source file ${big} is ${LIMITS.uploadMaxBytes + 1} bytes; an upload is at most ${LIMITS.uploadMaxBytes} bytes`,
    ]);
  });

  it("a source the folder's walk has just checked is not looked at again; a copy of it is (the mark is the object, not its fields)", () => {
    const gone = path.join(dir, "walked-then-gone.txt");
    const walked = walkedSource(asset({ path: gone, hash: "h" }));
    expect(failuresFor({ source: walked })).toEqual([]);
    expect(failuresFor({ source: { ...walked } })).toEqual([expect.stringMatching(new RegExp(`^source: source file ${gone} does not exist`))]);
  });

  it("refuses an archive, a remote asset and anything that is not an asset", () => {
    expect(failuresFor({ source: { [SIG]: ARCHIVE_SIG, assets: {} } })).toEqual([expect.stringMatching(/not an archive: use StoredFolder/)]);
    expect(failuresFor({ source: asset({ uri: "https://example.com/x" }) })).toEqual([expect.stringMatching(/not a remote asset/)]);
    expect(failuresFor({ source: "./x.txt" })).toEqual(["source: source must be a pulumi.asset.FileAsset or pulumi.asset.StringAsset"]);
  });

  it("takes exactly one of blobId and source", () => {
    expect(failuresFor({ blobId: "b", source: asset({ text: "t" }) })).toEqual([
      "source: blobId and source exclude each other: declare blobId to adopt an uploaded file, or source to upload one",
    ]);
    expect(failuresFor({ tag: "t" })).toEqual([expect.stringMatching(/^blobId: blobId or source is required/)]);
  });
});

describe("planChange with source", () => {
  const uploaded = { blobId: "b1", sourceHash: "aaa", tag: "t", retentionEpochs: 2 };
  it("the same content is no change; a tag change is a PATCH of the same file", () => {
    expect(planChange(uploaded, { source: asset({ path: "f", hash: "aaa" }), tag: "t", retentionEpochs: 2 })).toMatchObject({
      replace: false,
      changedFields: [],
    });
    expect(planChange(uploaded, { source: asset({ path: "f", hash: "aaa" }), tag: "u" })).toMatchObject({ replace: false, patch: { tag: "u" } });
  });
  it("other content is a replace (a new blob), and so is switching between adopting and uploading", () => {
    expect(planChange(uploaded, { source: asset({ path: "f", hash: "bbb" }) })).toMatchObject({ replace: true, replaceFields: ["source"] });
    expect(planChange(uploaded, { blobId: "b1" })).toMatchObject({ replace: true, replaceFields: ["blobId"] });
    expect(planChange({ blobId: "b1" }, { source: asset({ path: "f", hash: "aaa" }) })).toMatchObject({ replace: true, replaceFields: ["source"] });
  });
});
