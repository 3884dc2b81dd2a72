import { createHash } from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import { beforeAll, describe, expect, it } from "vitest";
import { StoredFolder } from "../../../provider/dynamic/stored-folder";
import { partOf } from "../../../provider/folder/parts";

/**
 * The TypeScript StoredFolder with `parts`: the resources it declares and the outputs it makes of
 * theirs (the engine mocked: each part answers the state set for it below).
 */

interface Registered {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
}
let registered: Registered[] = [];
/** What each part's resource records, by name: the maps by path as a release before recorded them, and its end. */
const recorded: Record<string, Record<string, unknown>> = {
  site: { blobIds: { "a.html": "blob-a" }, urls: { "a.html": "https://x/a" }, earliestExpiresAt: "2027-01-03T00:00:00.000Z" },
  "site-part1": { blobIds: { "b.html": "blob-b" }, urls: { "b.html": "https://x/b" }, earliestExpiresAt: "2027-01-02T00:00:00.000Z" },
  // A part that keeps no file: no end of its own.
  "site-part2": { blobIds: {}, urls: {} },
};
beforeAll(() => {
  pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        registered.push({ type: args.type, name: args.name, inputs: args.inputs });
        return { id: `${args.name}-id`, state: { ...args.inputs, ...(recorded[args.name] ?? {}) } };
      },
      call: (args) => args.inputs,
    },
    "proj",
    "stack",
    false,
  );
});

const outputOf = <T>(o: pulumi.Output<T>) => new Promise<T>((resolve) => o.apply(resolve));

describe("StoredFolder { parts }", () => {
  it("declares the first part under the folder's name and the others as -part<i>, each told its part; the outputs are theirs together", async () => {
    registered = [];
    const folder = new StoredFolder("site", { path: "public", parts: 3, tag: "web" });
    const blobIds = await outputOf(folder.blobIds);
    const parts = registered.filter((r) => r.type !== "tuskr:index:StoredFolder");
    expect(parts.map((r) => [r.name, r.inputs.parts, r.inputs.part, r.inputs.tag])).toEqual([
      ["site", 3, 0, "web"],
      ["site-part1", 3, 1, "web"],
      ["site-part2", 3, 2, "web"],
    ]);
    expect(blobIds).toEqual({ "a.html": "blob-a", "b.html": "blob-b" });
    expect(await outputOf(folder.urls)).toEqual({ "a.html": "https://x/a", "b.html": "https://x/b" });
    // The soonest end of the parts that keep files; the empty part's missing end does not make it unknown.
    expect(await outputOf(folder.earliestExpiresAt)).toBe("2027-01-02T00:00:00.000Z");
  });

  it("a count the check refuses is sent to one resource, for its check to say so; oneResource: false with parts is refused", async () => {
    registered = [];
    await outputOf(new StoredFolder("odd", { path: "public", parts: 65 }).blobIds);
    expect(registered.filter((r) => r.type !== "tuskr:index:StoredFolder").map((r) => [r.name, r.inputs.parts, r.inputs.part])).toEqual([
      ["odd", 65, undefined],
    ]);
    expect(() => new StoredFolder("both", { path: "public", parts: 2, oneResource: false })).toThrow(
      "StoredFolder both: parts keeps the folder as that many resources, which oneResource: false refuses; declare one of them",
    );
  });

  it("one part more moves only the contents the new part takes, about 1 in the new count; the parts stay even", () => {
    const hashes = Array.from({ length: 4000 }, (_, i) => createHash("sha256").update(String(i)).digest("hex"));
    for (let parts = 1; parts < 12; parts++) {
      const moved = hashes.filter((h) => partOf(h, parts + 1) !== partOf(h, parts));
      // A content that moves goes to the new part, never from one old part to another.
      expect(moved.every((h) => partOf(h, parts + 1) === parts)).toBe(true);
      expect(Math.abs(moved.length / hashes.length - 1 / (parts + 1))).toBeLessThan(0.03);
    }
    const sizes = new Array(20).fill(0);
    for (const h of hashes) sizes[partOf(h, 20)]++;
    expect(Math.min(...sizes)).toBeGreaterThan(150);
    expect(Math.max(...sizes)).toBeLessThan(250);
  });
});
