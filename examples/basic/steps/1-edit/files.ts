import type { StoredFileArgs } from "pulumi-tuskr";

type Values = Omit<StoredFileArgs, "blobId" | "source">;

/** Step 1: the handbook is re-tagged and the dataset's metadata edited (add, change, remove). */
export const declared: Record<"logo" | "handbook" | "dataset", Values> = {
  logo: { name: "logo.svg", tag: "brand", metadata: { team: "web", format: "svg" }, retentionEpochs: 5 },
  handbook: { name: "handbook.md", tag: "policies", metadata: { team: "people", audience: "staff" }, retentionEpochs: 0 },
  dataset: { name: "prices.csv", tag: "data", metadata: { source: "erp-v2", currency: "EUR" } },
};
