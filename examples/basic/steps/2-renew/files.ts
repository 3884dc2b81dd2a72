import type { StoredFileArgs } from "pulumi-tuskr";

type Values = Omit<StoredFileArgs, "blobId" | "source">;

/** Step 2: more storage — the logo goes from 5 to 12 epochs bought, the handbook from 0 to 7. */
export const declared: Record<"logo" | "handbook" | "dataset", Values> = {
  logo: { name: "logo.svg", tag: "brand", metadata: { team: "web", format: "svg" }, retentionEpochs: 12 },
  handbook: { name: "handbook.md", tag: "policies", metadata: { team: "people", audience: "staff" }, retentionEpochs: 7 },
  dataset: { name: "prices.csv", tag: "data", metadata: { source: "erp-v2", currency: "EUR" } },
};
