import { afterEach, expect, it, vi } from "vitest";
import { type Emulator, startEmulator } from "../../../emulator";
import { patchFile } from "../../helpers/emulator";
import { EngineStack } from "../../helpers/provider-driver";
import { configuredProvider } from "../../helpers/provider-fixture";

/**
 * A value made secret without changing it is still a change: the state must record its name, or a
 * later refresh shows the value in its drift warning and keeps its drift fingerprint.
 */

const URN = "urn:pulumi:dev::p::pulumi-nodejs:dynamic:Resource::f";
const TAG = "customer-acme-corp-internal";
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  vi.restoreAllMocks();
});

async function stackOnEmulator() {
  const emu: Emulator = await startEmulator({ port: 0 });
  closers.push(() => emu.close());
  const logged: string[] = [];
  vi.spyOn(console, "log").mockImplementation((line: unknown) => void logged.push(String(line)));
  const blobId = (await emu.uploadFile({ content: `s ${Math.random()}`, filename: "s.txt" })).blobId;
  const stack = new EngineStack(() => configuredProvider(emu, {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } }));
  return { emu, logged, blobId, stack };
}

it("a tag made secret, its value unchanged: an update that sends nothing records the name, and a later refresh does not show it", async () => {
  const { emu, logged, blobId, stack } = await stackOnEmulator();
  await stack.up({ f: { blobId, tag: TAG, __urn: URN, __secretInputs: [] } });
  emu.clearRequests();
  const run = await stack.up({ f: { blobId, tag: TAG, __urn: URN, __secretInputs: ["tag"] } });
  expect(run.steps.map((s) => [s.op, s.outcome])).toEqual([["update", "ok"]]);
  expect(emu.requests().filter((r) => r.method !== "GET")).toEqual([]);
  expect(stack.get("f")?.state.__secretInputs).toEqual(["tag"]);
  await patchFile(emu, blobId, { tag: "edited-by-hand" });
  logged.length = 0;
  await stack.refresh();
  expect(logged.join("\n")).not.toContain("acme-corp");
  expect(JSON.stringify(stack.get("f")?.state.__driftSeen ?? {})).not.toContain("tag");
});

it("a state recording its secret names (as the release before did), the program unchanged: no change", async () => {
  const { blobId, stack } = await stackOnEmulator();
  await stack.up({ f: { blobId, tag: TAG, __urn: URN, __secretInputs: ["tag"] } });
  expect(stack.get("f")?.state.__secretInputs).toEqual(["tag"]);
  const run = await stack.up({ f: { blobId, tag: TAG, __urn: URN, __secretInputs: ["tag"] } });
  expect(run.steps.map((s) => s.op)).toEqual(["same"]);
});
