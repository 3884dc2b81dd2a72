import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { StoredFileProvider } from "../../../provider/dynamic/stored-file-provider";
import { configureProvider } from "../../helpers/provider-fixture";

/**
 * What the provider says in the console (warnings, check failures, errors) shows a user's
 * control, bidi and zero-width characters escaped, as the PR comment does: a name holding U+202E
 * would otherwise reorder the line it is printed in.
 */

const DAY = 86_400_000;
const RAW = /[\p{Cc}\u200B\u202E]/u;
const name = "invoice\u202Efdp.exe";
const key = "team\u200B";
const stateOf = (daysLeft: number) => ({
  blobId: "b1",
  name,
  tag: "t\u202Eag",
  metadata: { [key]: "web" },
  retentionEpochs: 0,
  createdAt: new Date(Date.now() - DAY).toISOString(),
  expiresAt: new Date(Date.now() + daysLeft * DAY).toISOString(),
});

let lines: string[];
let provider: StoredFileProvider;
beforeEach(async () => {
  lines = [];
  vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
  provider = new StoredFileProvider();
  await configureProvider(provider, { url: "http://127.0.0.1:9" });
});
afterEach(() => vi.restoreAllMocks());

describe("the dynamic provider's console output", () => {
  it("a warning about a file whose name, tag and metadata key hold bidi and zero-width characters shows them escaped", async () => {
    await provider.diff("b1", stateOf(1.5), { blobId: "b1", name, tag: "t\u202Eag", metadata: {}, __urn: "urn:pulumi:dev::p::t::f" });
    expect(lines).toEqual([
      expect.stringMatching(/^warning: StoredFile "invoice\\u202Efdp\.exe" \(b1\): expiring soon/),
      expect.stringMatching(
        /^warning: StoredFile "invoice\\u202Efdp\.exe" \(b1\): metadata is declared empty: the up removes every stored key \(team\\u200B\)/,
      ),
    ]);
    for (const line of lines) expect(line).not.toMatch(RAW);
  });

  it("a check failure quoting the value, and an error thrown to the engine naming the file, show them escaped too", async () => {
    const { failures } = await provider.check({}, { blobId: "b1", retainUntil: "2027-01-01\u202E\n" });
    expect(failures).toEqual([{ property: "retainUntil", reason: expect.stringContaining('got "2027-01-01\\u202E\\n"') }]);
    const refused = await provider.diff("b1", stateOf(-2), { blobId: "b1", name, tag: "new", __urn: "urn:pulumi:dev::p::t::f" }).catch((e: Error) => e);
    expect((refused as Error).message).toMatch(/^StoredFile "invoice\\u202Efdp\.exe" \(b1\): .*expired/);
    expect((refused as Error).message).not.toMatch(RAW);
  });
});
