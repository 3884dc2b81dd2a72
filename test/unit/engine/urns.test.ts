import { describe, expect, it } from "vitest";
import { folderEntryUrn, parseUrn, resourceUrnOf, urnName } from "../../../provider/engine/urns";

describe("URNs are taken apart in one place", () => {
  it("a URN's stack, project, own type and name; a parent's type is not the resource's", () => {
    expect(parseUrn("urn:pulumi:dev::site::tuskr:index:StoredFolder$pulumi-nodejs:dynamic/tuskr:StoredFile::docs/sha256:ab")).toEqual({
      stack: "dev",
      project: "site",
      type: "pulumi-nodejs:dynamic/tuskr:StoredFile",
      name: "docs/sha256:ab",
    });
  });

  it("a name holding `::` is kept whole", () => {
    expect(urnName("urn:pulumi:dev::p::tuskr:index:StoredFile::a::b")).toBe("a::b");
  });

  it("text that is not a URN is no URN, and names itself", () => {
    expect(parseUrn("site")).toBeUndefined();
    expect(parseUrn("a::b::c::d")).toBeUndefined();
    expect(urnName("site")).toBe("site");
  });

  it("a folder entry's URN is said of its folder", () => {
    const folder = "urn:pulumi:dev::p::tuskr:index:StoredFolder::site";
    const entry = folderEntryUrn(folder, "0".repeat(64));
    expect(resourceUrnOf(entry)).toBe(folder);
    expect(parseUrn(resourceUrnOf(entry))?.type).toBe("tuskr:index:StoredFolder");
  });
});
