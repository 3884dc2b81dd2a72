import type { TestProject } from "vitest/node";
import { FIXTURE_PROJECT } from "./live";
import { setupEngine } from "./engine-setup";

/** The live tier's set-up: the engine, and the one project its lifecycle runs. */
export default async function setup(project: TestProject): Promise<void> {
  await setupEngine(project, [FIXTURE_PROJECT]);
}
