import type { StoredFileArgs } from "pulumi-tuskr";

/** What each file is kept with; index.ts says where its content comes from. */
type Values = Omit<StoredFileArgs, "blobId" | "source">;

/**
 * What this stack keeps, by resource name. A change here is reviewed in a pull request and
 * applied by `pulumi up`: a new tag or metadata is one PATCH per file, a higher
 * `retentionEpochs` (epochs from the file's upload or adoption) buys what the file lacks of it
 * with one renew.
 */
export const declared: Record<"logo" | "handbook" | "dataset", Values> = {
  logo: { name: "logo.svg", tag: "brand", metadata: { team: "web", format: "svg" }, retentionEpochs: 5 },
  handbook: { name: "handbook.md", tag: "docs", metadata: { team: "people", audience: "staff" }, retentionEpochs: 0 },
  dataset: { name: "prices.csv", tag: "data", metadata: { source: "erp", rows: 3 } },
};
