import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blobIdOf, type DuplicateUploadMode, type Emulator, type IdempotencyMode, startEmulator } from "../../../emulator";
import { StoredFolder } from "../../../provider/dynamic/stored-folder";
import { configuredProvider } from "../../helpers/provider-fixture";
import { EngineStack, type StepRecord } from "../../helpers/provider-driver";
import { folderRegistrations } from "../../helpers/folder-program";
import { recordResult, sized } from "../../helpers/reliability-results";

/**
 * Randomized sequences of what happens to a folder kept by a StoredFolder — a duplicate added, a
 * file moved, edited, reverted to earlier content, deleted, an epoch passing (then a refresh),
 * an `up` killed after the service applied one of its writes — each followed by `pulumi up`,
 * against the emulator in each of its behaviours (keys honoured or ignored; a second upload of
 * stored bytes answered with the entry, taken as a purchase on it, or refused). After every
 * `up` that completes: every content the folder declares is stored exactly until the latest
 * end declared for it, and no request went to a blobId the stack never declared.
 *
 * The folder is the real StoredFolder (what it registers is captured through Pulumi's mocks);
 * the engine is test/helpers/provider-driver.ts's model: each registered StoredFile by name is
 * created, diffed and updated, replaced when diff says so; one gone from the program is deleted
 * (no request). A kill is an `apply-then-drop` on one write, in an up on a copy of the stack
 * that is then discarded, as a killed process records nothing; the SIGKILL tier
 * (test/e2e/properties/crash.e2e.test.ts) kills the real engine.
 */

const RETENTION = 3;
const CONTENTS = ["alpha\n", "beta\n", "", "gamma gamma\n", "delta\n"];
const PATHS = ["a.txt", "b.txt", "docs/c.txt", "docs/d.txt", "e/f/g.txt"];

let root: string;

beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "tuskr-folder-seq-"));
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** What the program registers for the folder now: each StoredFile's name and inputs, `source` in the engine's wire form. */
const declared = (dir: string) =>
  folderRegistrations(
    "proj",
    "stack",
    () => new StoredFolder("site", { path: dir, retentionEpochs: RETENTION }),
    (name) => `urn:pulumi:stack::proj::site$${name}`,
  );

/** The content a recorded StoredFile holds (bookkeeping, under its hidden key). */
const hashOf = (r: { state: Record<string, unknown> }) => String(r.state.__sourceHash);
/** What check refused in a run: nothing, even in a killed up, where a refused declaration would pass for the kill. */
const checkFailures = (steps: StepRecord[]) => steps.flatMap((s) => s.failures ?? []);

type Op =
  | { kind: "duplicate"; from: number; to: number }
  | { kind: "move"; from: number; to: number }
  | { kind: "edit"; at: number; content: number }
  | { kind: "delete"; at: number }
  | { kind: "epoch" }
  | { kind: "kill"; write: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("duplicate" as const), from: fc.nat(4), to: fc.nat(4) }),
  fc.record({ kind: fc.constant("move" as const), from: fc.nat(4), to: fc.nat(4) }),
  // An edit to one of a few contents: editing back to an earlier one is a revert.
  fc.record({ kind: fc.constant("edit" as const), at: fc.nat(4), content: fc.nat(CONTENTS.length - 1) }),
  fc.record({ kind: fc.constant("delete" as const), at: fc.nat(4) }),
  fc.constant({ kind: "epoch" as const }),
  fc.record({ kind: fc.constant("kill" as const), write: fc.nat(2) }),
);

const SERVICES: Array<{ idempotency: IdempotencyMode; duplicateUpload: DuplicateUploadMode }> = [
  { idempotency: "honour", duplicateUpload: "existing" },
  { idempotency: "ignore", duplicateUpload: "existing" },
  { idempotency: "honour", duplicateUpload: "refuse" },
  { idempotency: "ignore", duplicateUpload: "refuse" },
  { idempotency: "honour", duplicateUpload: "purchase" },
  { idempotency: "ignore", duplicateUpload: "purchase" },
];

const sha = (text: string) => createHash("sha256").update(text).digest("hex");
const results: Record<string, unknown> = {};
afterAll(() => recordResult("folder-sequences", results));

describe("folder sequences: every content ends at the latest end declared for it", () => {
  for (const service of SERVICES) {
    const label = `keys ${service.idempotency === "honour" ? "honoured" : "ignored"}, duplicate upload: ${service.duplicateUpload}`;
    it(label, async () => {
      let emu: Emulator | undefined;
      let runs = 0;
      let ups = 0;
      let kills = 0;
      const numRuns = sized(6, 40);
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 2, maxLength: 8 }), async (ops) => {
          runs++;
          emu = await startEmulator({ port: 0, ...service });
          try {
            const dir = fs.mkdtempSync(path.join(root, "run-"));
            const write = (rel: string, content: string) => {
              fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
              fs.writeFileSync(path.join(dir, rel), content);
            };
            write(PATHS[0], CONTENTS[0]);
            write(PATHS[1], CONTENTS[1]);
            // The stack knows the service's epoch (as doctor measured it): these are stories of folders, not of learning it.
            const known = { "tuskr:epochSeconds": String(emu.epochSeconds) };
            const stack = new EngineStack(await configuredProvider(emu, known, { retry: { baseDelayMs: 1, maxDelayMs: 5 } }));
            // The model: the latest end declared for each content (an absolute epoch), and every blobId declared.
            const requiredEnd = new Map<string, number>();
            const declaredBlobIds = new Set<string>();
            const blobOf = new Map<string, string>();
            const files = () => PATHS.filter((p) => fs.existsSync(path.join(dir, p)));
            const settle = async () => {
              const current = new Set(files().map((p) => sha(fs.readFileSync(path.join(dir, p), "utf8"))));
              for (const [name, r] of stack.entries()) {
                const hash = hashOf(r);
                expect(current.has(hash), `${name} is recorded but its content is no longer declared`).toBe(true);
              }
              // Every content declared now: its entry ends exactly at the latest end declared for it
              // (a service that sells on re-upload: at least that, at most RETENTION later).
              for (const [name, r] of stack.entries()) {
                const entry = emu!.files().find((f) => f.blobId === r.state.blobId && !f.expired);
                expect(entry, `${name}: no live entry`).toBeDefined();
                const want = requiredEnd.get(hashOf(r))!;
                if (service.duplicateUpload === "purchase") {
                  expect(entry!.endEpoch).toBeGreaterThanOrEqual(want);
                  expect(entry!.endEpoch).toBeLessThanOrEqual(want + RETENTION);
                } else {
                  expect(entry!.endEpoch, `${name} (${ops.map((o) => o.kind).join(", ")})`).toBe(want);
                }
              }
              for (const r of emu!.requests()) if (r.blobId !== undefined) expect(declaredBlobIds.has(r.blobId), `a request to ${r.blobId}`).toBe(true);
            };
            /** A content newly declared now requires RETENTION epochs from this epoch (its resource is created now). */
            const declareNew = () => {
              const live = new Set(
                emu!
                  .files()
                  .filter((f) => !f.expired)
                  .map((f) => f.blobId),
              );
              for (const p of files()) {
                const bytes = fs.readFileSync(path.join(dir, p));
                declaredBlobIds.add(blobIdOf(bytes));
                const hash = sha(bytes.toString("utf8"));
                blobOf.set(hash, blobIdOf(bytes));
                const kept = stack.entries().some(([, r]) => hashOf(r) === hash && live.has(String(r.state.blobId)));
                if (!kept) requiredEnd.set(hash, Math.max(requiredEnd.get(hash) ?? 0, emu!.currentEpoch() + RETENTION));
              }
            };
            const fullUp = async () => {
              declareNew();
              ups++;
              const run = await stack.up(await declared(dir));
              expect(checkFailures(run.steps)).toEqual([]);
              expect(run.steps.filter((s) => s.outcome === "failed" || s.outcome === "partial")).toEqual([]);
              await settle();
            };
            await fullUp();
            for (const op of ops) {
              const present = files();
              if (op.kind === "duplicate" && present.length > 0)
                write(PATHS[op.to], fs.readFileSync(path.join(dir, present[op.from % present.length]), "utf8"));
              if (op.kind === "move" && present.length > 0) {
                const from = present[op.from % present.length];
                const text = fs.readFileSync(path.join(dir, from), "utf8");
                fs.rmSync(path.join(dir, from));
                write(PATHS[op.to], text);
              }
              if (op.kind === "edit") write(PATHS[op.at], CONTENTS[op.content]);
              if (op.kind === "delete" && present.length > 1) fs.rmSync(path.join(dir, present[op.at % present.length]));
              if (op.kind === "epoch") {
                await emu.advanceEpochs(1);
                await stack.refresh();
                // A content whose entry expired is declared anew by the next up (uploaded again).
                const alive = new Set(
                  emu
                    .files()
                    .filter((f) => !f.expired)
                    .map((f) => f.blobId),
                );
                for (const hash of [...requiredEnd.keys()]) if (!alive.has(blobOf.get(hash) ?? "")) requiredEnd.delete(hash);
              }
              if (op.kind === "kill") {
                // The next up dies after the service applied one of its writes (if it makes any).
                write(PATHS[(op.write + 2) % PATHS.length], `killed ${op.write} ${runs}\n`);
                declareNew();
                emu.setFaults({ script: [{ route: op.write === 0 ? "upload" : "renew", fault: "apply-then-drop" }] });
                const killer = await configuredProvider(emu, known, { retry: { baseDelayMs: 1, maxDelayMs: 5, maxAttempts: 1 } });
                const killed = await stack.fork(killer).up(await declared(dir));
                emu.setFaults({});
                expect(checkFailures(killed.steps)).toEqual([]);
                const dead = !killed.done;
                if (dead) kills++;
              }
              await fullUp();
            }
          } finally {
            await emu?.close();
          }
        }),
        { numRuns, seed: 20_261_123 },
      );
      // The sequences do kill runs (a counter that stayed 0 once hid that none was counted).
      expect(kills).toBeGreaterThan(0);
      results[label] = { sequences: runs, ups, kills };
    }, 600_000);
  }
});
