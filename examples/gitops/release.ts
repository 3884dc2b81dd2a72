/**
 * The release folder's declaration in one environment (apart from index.ts so that a test runs it
 * as the stacks do). Both stacks upload the same files/, and the service keeps one entry per
 * content: what each stack sets on an entry (name, tag, metadata) must be the same in both, or
 * each `up` sets it back from the other's. Only the end differs per environment, and ends do not
 * fight: purchases only add, so the entry is kept until the latest any stack declares.
 */
export interface Environment {
  retentionEpochs: number;
  keepAlive?: { minRemainingEpochs: number; renewEpochs: number };
}

export function releaseArgs({ retentionEpochs, keepAlive }: Environment) {
  return {
    path: "files",
    tag: "docs",
    metadata: { managedBy: "pulumi" },
    retentionEpochs,
    keepAlive,
    files: { "app.js": { tag: "app" } },
  };
}
