import { afterAll, describe, expect, it } from "vitest";
import { summarizePreview } from "../../../provider/cli/summary";
import { FIXTURE, type EngineStack, stopEmulator, upload, withStack } from "../../helpers/engine";

afterAll(stopEmulator);

/** Blob ids and times differ on every run; the golden files hold the rest exactly. */
function normalize(markdown: string, blobIds: string[]): string {
  let out = markdown;
  for (const [i, id] of blobIds.entries()) out = out.split(id).join(`<blob-${i + 1}>`);
  return out.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "<time>");
}

/** `pulumi preview --json` (and `extra` options) on the stack, summarized, compared with golden/<name>.md (`vitest -u` rewrites it). */
async function expectSummary(ctx: EngineStack, name: string, blobIds: string[], extra: string[] = []): Promise<void> {
  const preview = await ctx.cli(["preview", "--json", ...extra]);
  expect(preview.code, preview.stderr).toBe(0);
  const markdown = normalize(summarizePreview(JSON.parse(preview.stdout)), blobIds);
  await expect(markdown).toMatchFileSnapshot(`./golden/${name}.md`);
}

describe("pulumi-tuskr summary on real preview output (golden files)", () => {
  it("adopt, a --refresh preview, then update (name, tag, metadata keys, epochs), keep-alive due, and replace", async () => {
    const [a, b, c] = await Promise.all([upload("sum-a"), upload("sum-b"), upload("sum-c")]);
    await withStack(FIXTURE, async (ctx) => {
      const { stack, emu, declare } = ctx;
      const base = {
        docs: { blobId: a, name: "guide.md", tag: "docs", metadata: { team: "web", draft: true }, retentionEpochs: 20 },
        logo: { blobId: b, tag: "brand", keepAlive: { minRemainingEpochs: 3, renewEpochs: 10 } },
      };
      await declare(base);
      await expectSummary(ctx, "adopt", [a, b, c]);
      await stack.up();
      await expectSummary(ctx, "no-change", [a, b, c]);
      // The pull-request workflow's preview reads each file again: a GET each, said as such.
      await expectSummary(ctx, "refresh", [a, b, c], ["--refresh"]);

      await declare({
        ...base,
        docs: { blobId: a, name: "guide-v2.md", tag: "docs-v2", metadata: { team: "web", owner: "ana" }, retentionEpochs: 27 },
      });
      await expectSummary(ctx, "update", [a, b, c]);

      // The logo's keep-alive bought 10 at adoption (1 + 10 left); 9 epochs later 2 are left.
      await emu.advanceEpochs(9);
      await stack.refresh();
      await declare({ ...base, logo: { blobId: c, tag: "brand", keepAlive: { minRemainingEpochs: 3, renewEpochs: 10 } } });
      await expectSummary(ctx, "replace", [a, b, c]);
      await declare(base);
      await expectSummary(ctx, "keep-alive-due", [a, b, c]);
    });
  });
});
