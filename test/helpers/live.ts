import * as fs from "node:fs";
import * as path from "node:path";

/** The project the live tier's lifecycle runs: the e2e fixture (StoredFiles, folders and getFile from stack config). */
export const FIXTURE_PROJECT = "test/e2e/fixture";

/** What the live tier may buy, in all (scripts/test-live.mjs prints it first). */
export const LIVE_BUDGET = JSON.parse(fs.readFileSync(path.resolve(__dirname, "../live/budget.json"), "utf8")) as {
  uploads: number;
  bytesPerFile: number;
  epochsPerUpload: number;
  renewEpochs: number;
};
