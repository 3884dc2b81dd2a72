import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Child processes, not threads: the e2e tier drives the Pulumi CLI and changes directories.
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
