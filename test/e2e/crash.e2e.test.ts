import { afterAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator, type IdempotencyMode, type ScriptedFault } from "../../emulator";
import { FIXTURE, killTree, openStack, type EngineStack } from "../helpers/engine";
import { recordResult } from "../helpers/reliability-results";

/**
 * The crash tier: through the real engine, `pulumi up` is SIGKILLed (the CLI's process group and
 * every descendant) while requests of each kind are in flight — create's GET, PATCH, renew and
 * upload; update's PATCH and renew; keep-alive's renew — with the service having applied the writes.
 * Then exactly what the CLI's messages (and the provider's) tell a user to do is done, and the
 * service is checked: epochs bought = declared, metadata = declared. Against a service that
 * honours Idempotency-Key and one that ignores it.
 */

type Files = Record<string, Record<string, unknown>>;
interface Row {
  file: string;
  killedDuring: string;
  declared: number;
  bought: number;
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
 * repair with `pulumi refresh`; then `pulumi up`. Where the provider stops with a message naming
 * a value to declare, that value is declared and `up` run again, until an `up` succeeds.
 */
async function recover(rs: EngineStack, declared: Files, runs: string[], beforeLastEdit: Record<string, number>): Promise<Files> {
  const locked = await rs.cli(["up", "--yes", "--skip-preview"]);
  expect(locked.code).not.toBe(0);
  expect(locked.stderr + locked.stdout).toMatch(/the stack is currently locked.*delete the lock file with `pulumi cancel`/s);
  runs.push("up (locked)");
  expect((await rs.cli(["cancel", "--yes"])).code).toBe(0);
  runs.push("cancel");
  const refreshed = await rs.cli(["refresh", "--yes"]);
  expect(refreshed.code, refreshed.stderr).toBe(0);
  runs.push("refresh");
  // The engine stops scheduling steps after a failure, so each run may stop on other files:
  // follow every message each run gives, and once an up succeeds, declare the program's own
  // values again, until an up with them succeeds.
  let current = declared;
  for (let attempt = 0; attempt < 8; attempt++) {
    const up = await rs.cli(["up", "--yes", "--skip-preview"]);
    const text = up.stdout + up.stderr;
    runs.push(up.code === 0 ? "up" : "up (stopped)");
    if (up.code === 0) {
      if (JSON.stringify(current) === JSON.stringify(declared)) return declared;
      current = declared;
      await rs.declare(current);
      continue;
    }
    const next: Files = structuredClone(current);
    let followed = false;
    for (const name of Object.keys(current)) {
      const id = String(current[name].blobId);
      // "declare retentionEpochs: N for the next `pulumi up`" (an unattributed move, keys not honoured)
      const count = new RegExp(`StoredFile [^\\n]*${id}[^\\n]*declare retentionEpochs: (\\d+) for the next`).exec(text);
      // "Declare retentionEpochs as that run did (the value before your last change)" (key reused for another amount)
      const asBefore = new RegExp(`StoredFile [^\\n]*${id}[^\\n]*Declare retentionEpochs as that run did`).test(text);
      if (count) next[name].retentionEpochs = Number(count[1]);
      else if (asBefore) next[name].retentionEpochs = beforeLastEdit[name];
      else continue;
      followed = true;
      runs.push(`declared ${name}.retentionEpochs = ${String(next[name].retentionEpochs)} as the message said`);
    }
    if (!followed) throw new Error(`up failed with no message to follow:\n${text}`);
    current = next;
    await rs.declare(current);
  }
  throw new Error("no up succeeded");
}

async function checkService(emu: Emulator, files: Files, expectBought: Record<string, number>, killedDuring: Record<string, string>): Promise<Row[]> {
  return Object.entries(files).map(([name, args]) => {
    const f = emu.files().find((x) => x.blobId === args.blobId)!;
    return { file: name, killedDuring: killedDuring[name], declared: expectBought[name], bought: f.epochsBought, tagExact: f.tag === args.tag };
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
      rs = await openStack(FIXTURE, { emu });
      const upload = async (label: string, epochs = 10) =>
        (await emu.uploadFile({ content: `${label} ${mode} ${Math.random()}`, filename: `${label}.txt`, tag: "uploaded", epochs })).blobId;
      const [a, b, c] = [await upload("get"), await upload("patch"), await upload("renew")];
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
      const final = await recover(rs, files, runs, {});
      const killedDuring = { get: "create: GET", patch: "create: PATCH", renew: "create: renew" };
      const got = await checkService(emu, final, { get: 4, patch: 3, renew: 9 }, killedDuring);
      rows.push(...got);
      expect(got.every((r) => r.tagExact)).toBe(true);
      expect(emu.files().find((f) => f.blobId === b)!.metadata).toEqual({ k: 1 });
      const byFile = Object.fromEntries(got.map((r) => [r.file, r.bought]));
      expect(byFile.get).toBe(4);
      expect(byFile.patch).toBe(3);
      // A create has no record of its own yet: with keys honoured the retry is a replay; ignored,
      // nothing tells the provider that the killed run bought, and it says so as it buys.
      expect(byFile.renew).toBe(mode === "honour" ? 9 : 18);
      if (mode === "ignore") expect(rs.transcript.join("\n")).toMatch(/did not confirm the Idempotency-Key/);
      expect((await rs.preview()).changeSummary).toEqual({ same: 4 });
    });

    it("killed while update's PATCH and renews and a keep-alive renew are in flight; one program edited after the kill", async () => {
      const upload = async (label: string, epochs = 10) =>
        (await emu.uploadFile({ content: `${label} ${mode} ${Math.random()}`, filename: `${label}.txt`, tag: "uploaded", epochs })).blobId;
      const [d, e, f, g] = [await upload("u-patch"), await upload("u-renew"), await upload("u-keepalive", 3), await upload("u-edited")];
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
        // 1 + 3 = 4 epochs left at most: fewer than 6, so keep-alive buys 4.
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
      const final = await recover(rs, after, runs, { edited: 5, urenew: 5 });
      const killedDuring = {
        upatch: "update: PATCH",
        urenew: "update: renew",
        keepalive: "keep-alive: renew",
        edited: "update: renew, then the program edited",
      };
      // Bought in all: declared retention, plus keep-alive's one purchase of 4.
      const got = await checkService(emu, final, { upatch: 1, urenew: 5, keepalive: 1 + 4, edited: 6 }, killedDuring);
      rows.push(...got);
      for (const r of got) expect([r.file, r.bought, r.tagExact]).toEqual([r.file, r.declared, true]);
      expect((await rs.preview()).changeSummary).toEqual({ same: 5 });
    });

    it("killed while create's uploads are in flight (source)", async () => {
      const content = { ua: `upload a ${mode} ${Math.random()}\n`, ub: `upload b ${mode} ${Math.random()}\n` };
      const files: Files = {
        ua: { source: { text: content.ua }, name: "a.txt", tag: "ua", metadata: { k: 1 }, retentionEpochs: 4 },
        ub: { source: { text: content.ub }, name: "b.txt", tag: "ub", retentionEpochs: 2 },
      };
      await rs.declare(files);
      await killedUp(rs, emu, [
        { route: "upload", fault: "apply-then-hang" },
        { route: "upload", fault: "apply-then-hang" },
      ]);
      runs.push("create: up SIGKILLed with two uploads in flight");
      await recover(rs, files, runs, {});
      const got: Row[] = [];
      for (const [name, args] of Object.entries(files)) {
        // One file per content, whatever happened: never a second index entry.
        const stored = emu.files().filter((f) => f.name === args.name);
        expect(stored).toHaveLength(1);
        const [f] = stored;
        got.push({
          file: name,
          killedDuring: "create: upload",
          declared: Number(args.retentionEpochs),
          bought: f.uploadEpochs + f.epochsBought,
          tagExact: f.tag === args.tag,
        });
      }
      rows.push(...got);
      expect(got.every((r) => r.tagExact)).toBe(true);
      expect(emu.files().find((f) => f.name === "a.txt")!.metadata).toEqual({ k: 1 });
      // With keys honoured the upload sent again is replayed; ignored, the service answers with
      // the file it already stores, for exactly the declared epochs since its upload: counted as
      // the killed run's, not bought again, and said.
      expect(got.map((r) => r.bought)).toEqual([4, 2]);
      if (mode === "ignore")
        expect(rs.transcript.join("\n")).toMatch(/taken as this stack's own upload from an earlier, interrupted run, and not bought again/);
      expect((await rs.preview()).changeSummary).toEqual({ same: 3 });
    });
  });
}
