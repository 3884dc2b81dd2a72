import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Child processes, not threads: the e2e tier spawns the Pulumi CLI.
    pool: "forks",
    projects: [
      { extends: true, test: { name: "unit", include: ["test/unit/**/*.test.ts"] } },
      { extends: true, test: { name: "integration", include: ["test/integration/**/*.test.ts"], testTimeout: 30_000 } },
      {
        extends: true,
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          globalSetup: ["test/e2e/global-setup.ts"],
          // Every step drives the real engine (CLI, language host, provider process): seconds each.
          testTimeout: 600_000,
          hookTimeout: 900_000,
          // The engine is CPU-heavy; on 2 cores, files run one at a time.
          fileParallelism: false,
        },
      },
    ],
  },
});
