import { defineConfig } from "vitest/config";

/**
 * The engine tier's set-up: the Pulumi CLI found or built, each Pulumi project installed with
 * this checkout packed as `pulumi-tuskr` (test/helpers/engine-setup.ts).
 */
const engine = {
  globalSetup: ["test/helpers/engine-setup.ts"],
  // Every step drives the real engine (CLI, language host, provider process): seconds each.
  testTimeout: 600_000,
  hookTimeout: 900_000,
};

/**
 * The reliability and security set: `npm test` runs these in their tiers at bounded sizes;
 * `npm run reliability` runs just these (`--project reliability`) at full size and writes
 * RELIABILITY.md from what they measured.
 */
const RELIABILITY = [
  "test/unit/properties/stored-file.test.ts",
  "test/integration/client/auth.test.ts",
  "test/integration/properties/secret-inputs.test.ts",
  "test/integration/properties/reliability.test.ts",
  "test/integration/properties/crash-safety.test.ts",
  "test/integration/folder/sequences.test.ts",
  "test/integration/file/check-one-declaration.test.ts",
  "test/integration/file/update-ends.test.ts",
  "test/unit/folder/check-content.test.ts",
  "test/unit/folder/check-links.test.ts",
  "test/integration/file/read-gone.test.ts",
  "test/integration/file/create-recorded-is-sent.test.ts",
  "test/e2e/properties/inline-preview.e2e.test.ts",
  "test/integration/client/hostile-answers.test.ts",
  "test/integration/properties/preview-refuses.test.ts",
  "test/e2e/properties/crash.e2e.test.ts",
  "test/e2e/properties/failed-up.e2e.test.ts",
  "test/e2e/properties/rate-limit.e2e.test.ts",
  "test/e2e/properties/secrets.e2e.test.ts",
  "test/e2e/properties/soak.e2e.test.ts",
];

export default defineConfig({
  test: {
    // Child processes, not threads: the engine tier spawns the Pulumi CLI (and Pulumi's closure
    // serialization needs the inspector, which worker threads do not have).
    pool: "forks",
    // One file at a time in each vitest process: the engine is CPU-heavy, and the pool is shared
    // by every project of a process (a project's own setting does not limit it). `npm test` runs
    // the engine tier and the other two as two processes side by side (scripts/test.mjs).
    fileParallelism: false,
    projects: [
      // Timeouts here catch a hang, not slowness: `npm test` runs these tiers alongside the engine's,
      // and CI runs them on a second Node while the Go builds take both cores.
      { extends: true, test: { name: "unit", include: ["test/unit/**/*.test.ts"], testTimeout: 30_000 } },
      { extends: true, test: { name: "integration", include: ["test/integration/**/*.test.ts"], testTimeout: 120_000 } },
      { extends: true, test: { name: "e2e", include: ["test/e2e/**/*.test.ts"], ...engine } },
      { extends: true, test: { name: "reliability", include: RELIABILITY, ...engine } },
      // The real service (or an emulator standing for it) that TUSKR_API_KEY and TUSKR_BASE_URL name: scripts/test-live.mjs.
      { extends: true, test: { name: "live", include: ["test/live/**/*.live.test.ts"], ...engine, globalSetup: ["test/helpers/live-setup.ts"] } },
    ],
  },
});
