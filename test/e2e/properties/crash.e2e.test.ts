import { afterAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator, type IdempotencyMode, type ScriptedFault } from "../../../emulator";
import { FIXTURE, killTree, openStack, type EngineStack } from "../../helpers/engine";
import { recordResult } from "../../helpers/reliability-results";

/**
 * The crash tier: through the real engine, `pulumi up` is SIGKILLed (the CLI's process group and
 * every descendant) while requests of each kind are in flight — create's GET, PATCH, renew and
 * upload; update's PATCH and renew; keep-alive's renew — with the service having applied the writes.
 * Then what the CLI's messages tell a user to do is done (`pulumi cancel`, `pulumi refresh`,
 * `pulumi up`: no step of the provider's own), and the service is checked: each file stored
 * exactly until its declared end, metadata as declared. Against a service that honours
 * Idempotency-Key and one that ignores it.
 */

type Files = Record<string, Record<string, unknown>>;
interface Row {
  file: string;
  killedDuring: string;
  /** The end declared for it, in epochs from the epoch its resource was created in. */
  declared: number;
  /** Where it ends on the service, in the same terms. */
  stored: number;
  tagExact: boolean;
}
const results: Record<string, { rows: Row[]; runs: string[] }> = {};
afterAll(() => recordResult("crash", results));

/** Runs `up` and SIGKILLs it once every held request is in flight (the service applied the writes, none was answered). */
async function killedUp(rs: EngineStack, emu: Emulator, holds: ScriptedFault[]): Promise<string> {
  emu.setFaults({ script: holds });
  const run = rs.startCli(["up", "--yes", "--skip-preview"]);
  const deadline = Date.now() + 240_000;
  for (;;) {
    const held = emu.inFlight().filter((r) => r.held);
    // Each scripted hold has its request held (uploads have no blobId: counted by route).
    const same = (x: { route: string; blobId?: string }, h: ScriptedFault) => x.route === h.route && x.blobId === h.blobId;
    if (holds.every((h) => held.filter((r) => same(r, h)).length >= holds.filter((o) => same(o, h)).length)) break;
    const ended = await Promise.race([run.exited.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 100))]);
    if (ended) throw new Error(`up ended before every request was held:\n${run.output()}`);
    if (Date.now() > deadline) throw new Error(`requests never all held: ${JSON.stringify(emu.inFlight())}\n${run.output()}`);
  }
  killTree(run.pid);
  const { signal } = await run.exited;
  emu.setFaults({});
  expect(signal).toBe("SIGKILL");
  return run.output();
}

/**
 * What a user does after the kill, reading each message: the next command says the stack is
 * locked and to run `pulumi cancel`; `pulumi up` then warns of operations left pending and says to
 * repair with `pulumi refresh`; then `pulumi up`, which must succeed: nothing else to do.
 */
async function recover(rs: EngineStack, runs: string[]): Promise<void> {
  const locked = await rs.cli(["up", "--yes", "--skip-preview"]);
  expect(locked.code).not.toBe(0);
  expect(locked.stderr + locked.stdout).toMatch(/the stack is currently locked.*delete the lock file with `pulumi cancel`/s);
  runs.push("up (locked)");
  expect((await rs.cli(["cancel", "--yes"])).code).toBe(0);
  runs.push("cancel");
  const refreshed = await rs.cli(["refresh", "--yes"]);
  expect(refreshed.code, refreshed.stderr).toBe(0);
  runs.push("refresh");
  const up = await rs.cli(["up", "--yes", "--skip-preview"]);
  expect(up.code, up.stdout + up.stderr).toBe(0);
  runs.push("up");
}

/** Each file's end, in epochs from `createdIn`, next to the end declared for it. */
function checkService(emu: Emulator, files: Files, createdIn: number, declared: Record<string, number>, killedDuring: Record<string, string>): Row[] {
  return Object.entries(files).map(([name, args]) => {
    const f = emu.files().find((x) => (args.blobId ? x.blobId === args.blobId : x.name === args.name))!;
    return { file: name, killedDuring: killedDuring[name], declared: declared[name], stored: f.endEpoch - createdIn, tagExact: f.tag === args.tag };
  });
}

for (const mode of ["honour", "ignore"] as IdempotencyMode[]) {
  describe(`pulumi up SIGKILLed mid-request, against a service that ${mode}s Idempotency-Key`, () => {
    let emu: Emulator;
    let rs: EngineStack;
    const runs: string[] = [];
    const rows: Row[] = [];
    afterAll(async () => {
      results[mode] = { rows, runs };
      await rs?.dispose().catch(() => undefined);
      await emu?.close();
    });

    it("killed while create's GET, PATCH and renew are in flight", async () => {
      emu = await startEmulator({ port: 0, idempotency: mode });
      // The stack knows the service's epoch (as `pulumi-tuskr doctor` measures it): these kills are
      // about crashes, not about learning the length (test/integration/properties/crash-safety.test.ts).
      rs = await openStack(FIXTURE, { emu, config: { "tuskr:epochSeconds": String(emu.epochSeconds) } });
      const upload = async (label: string, epochs = 1) =>
        (await emu.uploadFile({ content: `${label} ${mode} ${Math.random()}`, filename: `${label}.txt`, tag: "uploaded", epochs })).blobId;
      const [a, b, c] = [await upload("get"), await upload("patch"), await upload("renew")];
      const createdIn = emu.currentEpoch();
      const files: Files = {
        get: { blobId: a, tag: "a", retentionEpochs: 4 },
        patch: { blobId: b, tag: "b", metadata: { k: 1 }, retentionEpochs: 3 },
        renew: { blobId: c, tag: "uploaded", retentionEpochs: 9 },
      };
      await rs.declare(files);
      await killedUp(rs, emu, [
        { route: "get", blobId: a, fault: "hang" },
        { route: "patch", blobId: b, fault: "apply-then-hang" },
        { route: "renew", blobId: c, fault: "apply-then-hang" },
      ]);
      runs.push("create: up SIGKILLed with get, patch, renew in flight");
      await recover(rs, runs);
      const killedDuring = { get: "create: GET", patch: "create: PATCH", renew: "create: renew" };
      const got = checkService(emu, files, createdIn, { get: 4, patch: 3, renew: 9 }, killedDuring);
      rows.push(...got);
      expect(emu.files().find((f) => f.blobId === b)!.metadata).toEqual({ k: 1 });
      // Each file ends exactly at its declared end, keys honoured or not: the run after the kill
      // reads the expiry the killed one reached and buys only what is missing.
      for (const r of got) expect([r.file, r.stored, r.tagExact]).toEqual([r.file, r.declared, true]);
      expect((await rs.preview()).changeSummary).toEqual({ same: 4 });
    });

    it("killed while update's PATCH and renews and a keep-alive renew are in flight; one program edited after the kill", async () => {
      const upload = async (label: string, epochs = 1) =>
        (await emu.uploadFile({ content: `${label} ${mode} ${Math.random()}`, filename: `${label}.txt`, tag: "uploaded", epochs })).blobId;
      const [d, e, f, g] = [await upload("u-patch"), await upload("u-renew"), await upload("u-keepalive", 3), await upload("u-edited")];
      const createdIn = emu.currentEpoch();
      const before: Files = {
        upatch: { blobId: d, tag: "d1", retentionEpochs: 1 },
        urenew: { blobId: e, tag: "e", retentionEpochs: 2 },
        keepalive: { blobId: f, tag: "f", retentionEpochs: 1 },
        edited: { blobId: g, tag: "g", retentionEpochs: 2 },
      };
      await rs.declare(before);
      const setup = await rs.cli(["up", "--yes", "--skip-preview"]);
      expect(setup.code, setup.stdout + setup.stderr).toBe(0);
      const during: Files = {
        upatch: { ...before.upatch, tag: "d2" },
        urenew: { ...before.urenew, retentionEpochs: 5 },
        // 3 epochs left: fewer than 6, so keep-alive buys 4 (the file then ends 7 epochs on).
        keepalive: { ...before.keepalive, keepAlive: { minRemainingEpochs: 6, renewEpochs: 4 } },
        edited: { ...before.edited, retentionEpochs: 5 },
      };
      await rs.declare(during);
      await killedUp(rs, emu, [
        { route: "patch", blobId: d, fault: "apply-then-hang" },
        { route: "renew", blobId: e, fault: "apply-then-hang" },
        { route: "renew", blobId: f, fault: "apply-then-hang" },
        { route: "renew", blobId: g, fault: "apply-then-hang" },
      ]);
      runs.push("update: up SIGKILLed with patch, renew, keep-alive renew, renew in flight");
      // After the kill, and before anything else, the user raises one file again.
      const after: Files = { ...during, edited: { ...during.edited, retentionEpochs: 6 } };
      await rs.declare(after);
      runs.push("program edited: edited.retentionEpochs 5 → 6");
      await recover(rs, runs);
      const killedDuring = {
        upatch: "update: PATCH",
        urenew: "update: renew",
        keepalive: "keep-alive: renew",
        edited: "update: renew, then the program edited",
      };
      // Ends: as declared; keep-alive's one purchase of 4 on the 3 the file had (not made twice:
      // the run after the kill finds 7 left, no longer fewer than 6).
      const got = checkService(emu, after, createdIn, { upatch: 1, urenew: 5, keepalive: 3 + 4, edited: 6 }, killedDuring);
      rows.push(...got);
      for (const r of got) expect([r.file, r.stored, r.tagExact]).toEqual([r.file, r.declared, true]);
      expect((await rs.preview()).changeSummary).toEqual({ same: 5 });
    });

    it("killed while create's uploads are in flight (source)", async () => {
      const content = { ua: `upload a ${mode} ${Math.random()}\n`, ub: `upload b ${mode} ${Math.random()}\n` };
      const files: Files = {
        ua: { source: { text: content.ua }, name: "a.txt", tag: "ua", metadata: { k: 1 }, retentionEpochs: 4 },
        ub: { source: { text: content.ub }, name: "b.txt", tag: "ub", retentionEpochs: 2 },
      };
      await rs.declare(files);
      const createdIn = emu.currentEpoch();
      await killedUp(rs, emu, [
        { route: "upload", fault: "apply-then-hang" },
        { route: "upload", fault: "apply-then-hang" },
      ]);
      runs.push("create: up SIGKILLed with two uploads in flight");
      await recover(rs, runs);
      // One entry per content, whatever happened: never a second index entry.
      for (const args of Object.values(files)) expect(emu.files().filter((f) => f.name === args.name)).toHaveLength(1);
      const got = checkService(emu, files, createdIn, { ua: 4, ub: 2 }, { ua: "create: upload", ub: "create: upload" });
      rows.push(...got);
      expect(emu.files().find((f) => f.name === "a.txt")!.metadata).toEqual({ k: 1 });
      // With keys honoured the upload sent again is replayed; ignored, the service answers with
      // the entry it already stores, whose end already is the declared one: nothing more bought.
      for (const r of got) expect([r.file, r.stored, r.tagExact]).toEqual([r.file, r.declared, true]);
      expect((await rs.preview()).changeSummary).toEqual({ same: 3 });
    });
  });
}
