import { afterAll, describe, expect, it } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, startEmulator } from "../../../emulator";
import { FIXTURE, STORED_FILE_TYPE, stopEmulator, storedOnEmulator, upload, withStack } from "../../helpers/engine";

const DAY_MS = 86_400_000;
afterAll(stopEmulator);

const writes = <R extends { route: string }>(reqs: R[]) => reqs.filter((r) => r.route === "patch" || r.route === "renew");

describe("StoredFile through the real Pulumi engine", () => {
  it("1-2. up adopts three files, an unchanged preview sends no write; one tag change is an update of that file only", async () => {
    const [a, b, c] = await Promise.all([upload("a"), upload("b"), upload("c")]);
    await withStack(FIXTURE, async ({ stack, emu, declare, fileRequests, ops, onEvent, events }) => {
      const files = {
        a: { blobId: a, name: "a.txt", tag: "one", metadata: { k: 1 } },
        b: { blobId: b, tag: "two" },
        c: { blobId: c, tag: "three", retentionEpochs: 3 },
      };
      await declare(files);
      const up = await stack.up({ onEvent });
      expect(up.summary.resourceChanges).toMatchObject({ create: 4 });
      expect(ops(events)).toEqual({ a: "create", b: "create", c: "create" });
      expect((await storedOnEmulator(a)).tag).toBe("one");
      // Stored for one epoch: 3 from this epoch lack 2.
      expect((await storedOnEmulator(c)).epochsBought).toBe(2);

      emu.clearRequests();
      const quiet = await stack.preview();
      expect(quiet.changeSummary).toEqual({ same: 4 });
      expect(writes(fileRequests())).toEqual([]);

      events.length = 0;
      await declare({ ...files, b: { blobId: b, tag: "two-renamed" } });
      const preview = await stack.preview({ onEvent, diff: true });
      expect(ops(events)).toEqual({ a: "same", b: "update", c: "same" });
      expect(preview.stdout).toMatch(/~ tag\s*:\s*"two"\s*=>\s*"two-renamed"/);
      expect(preview.changeSummary).toMatchObject({ update: 1, same: 3 });
      expect(writes(fileRequests())).toEqual([]);

      emu.clearRequests();
      await stack.up();
      expect(writes(fileRequests()).map((r) => [r.route, r.blobId, r.requestBody])).toEqual([["patch", b, { tag: "two-renamed" }]]);
    });
  });
});

describe("StoredFile through the real Pulumi engine: epochs, metadata, drift", () => {
  it("3. retentionEpochs 0 → 5 → 12 on a file stored for one epoch buys 1 (to learn the epoch) and 3, then 7; it ends 12 epochs from its adoption", async () => {
    const id = await upload("epochs");
    await withStack(FIXTURE, async ({ stack, emu, declare, fileRequests }) => {
      await declare({ f: { blobId: id, retentionEpochs: 0 } });
      const first = await stack.up();
      const expiresAt0 = Date.parse(first.outputs.files.value.f.expiresAt);
      // Documented outputs a program can read; and a declared 0 survives a refresh unchanged.
      expect(first.outputs.files.value.f.remainingEpochs).toBe(1);
      await stack.refresh();
      expect((await stack.preview()).changeSummary).toEqual({ same: 2 });
      emu.clearRequests();
      await declare({ f: { blobId: id, retentionEpochs: 5 } });
      await stack.up();
      await declare({ f: { blobId: id, retentionEpochs: 12 } });
      const last = await stack.up();
      // The adoption's start is a guess until an answer shows the length: the first purchase buys 1 first.
      expect(writes(fileRequests()).map((r) => [r.route, r.requestBody])).toEqual([
        ["renew", { epochs: 1 }],
        ["renew", { epochs: 3 }],
        ["renew", { epochs: 7 }],
      ]);
      expect((await storedOnEmulator(id)).epochsBought).toBe(11);
      expect(Date.parse(last.outputs.files.value.f.expiresAt) - expiresAt0).toBe(11 * DAY_MS);
      expect(last.outputs.files.value.f.retentionEpochs).toBe(12);
    });
  });

  it("4. metadata keys added, changed and removed: the stored metadata equals the declared object", async () => {
    const id = await upload("meta");
    await withStack(FIXTURE, async ({ stack, declare }) => {
      await declare({ f: { blobId: id, metadata: { keep: "k", change: 1, remove: true, nested: { a: 1, b: 2 } } } });
      await stack.up();
      const declared = { keep: "k", change: 2, added: ["x"], nested: { a: 1 } };
      await declare({ f: { blobId: id, metadata: declared } });
      const up = await stack.up();
      expect(up.summary.resourceChanges).toMatchObject({ update: 1 });
      expect((await storedOnEmulator(id)).metadata).toEqual(declared);
      expect(up.outputs.files.value.f.metadata).toEqual(declared);
    });
  });

  it("5. an out-of-band edit shows as drift after refresh, and the next up restores the declared state", async () => {
    const id = await upload("drift");
    await withStack(FIXTURE, async ({ stack, emu, declare, fileRequests }) => {
      await declare({ f: { blobId: id, name: "declared.txt", tag: "declared", metadata: { owner: "ops" } } });
      await stack.up();
      const res = await fetch(`${emu.url}/v1/files/${encodeURIComponent(id)}`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${EMULATOR_DEFAULT_API_KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ tag: "hand-edited", metadata: { owner: null, rogue: 1 } }),
      });
      expect(res.status).toBe(200);
      const refresh = await stack.refresh();
      expect(refresh.summary.resourceChanges).toMatchObject({ update: 1 });
      const refreshed = (await stack.exportStack()).deployment.resources.find((r: { type: string }) => r.type === STORED_FILE_TYPE);
      expect(refreshed.outputs).toMatchObject({ tag: "hand-edited", metadata: { rogue: 1 } });
      const preview = await stack.preview({ diff: true });
      expect(preview.changeSummary).toMatchObject({ update: 1 });
      expect(preview.stdout).toMatch(/~ tag\s*:\s*"hand-edited"\s*=>\s*"declared"/);
      emu.clearRequests();
      await stack.up();
      expect(writes(fileRequests()).map((r) => r.requestBody)).toEqual([{ tag: "declared", metadata: { owner: "ops", rogue: null } }]);
      expect(await storedOnEmulator(id)).toMatchObject({ name: "declared.txt", tag: "declared", metadata: { owner: "ops" } });
    });
  });

  it("6. a blobId change is a replace; destroy sends no request and leaves the files with their period", async () => {
    const [one, two] = await Promise.all([upload("one"), upload("two")]);
    await withStack(FIXTURE, async ({ stack, emu, declare, fileRequests, steps, onEvent, events }) => {
      await declare({ f: { blobId: one, tag: "x", retentionEpochs: 2 } });
      await stack.up();
      await declare({ f: { blobId: two, tag: "x", retentionEpochs: 2 } });
      await stack.preview({ onEvent });
      expect(steps(events).f).toContain("replace");
      expect(steps(events).f).not.toContain("update");
      const up = await stack.up();
      expect(up.summary.resourceChanges).toMatchObject({ replace: 1 });
      const before = [await storedOnEmulator(one), await storedOnEmulator(two)].map((f) => ({ ...f }));
      emu.clearRequests();
      const destroyed = await stack.destroy();
      expect(destroyed.summary.resourceChanges).toMatchObject({ delete: 2 });
      expect(fileRequests()).toEqual([]);
      const after = [await storedOnEmulator(one), await storedOnEmulator(two)];
      expect(after.map((f) => [f.tag, f.expiresAt, f.epochsBought])).toEqual(before.map((f) => [f.tag, f.expiresAt, f.epochsBought]));
      expect(after.every((f) => !f.expired)).toBe(true);
    });
  });
});

describe("StoredFile through the real Pulumi engine: failures", () => {
  it("7. bad inputs fail at preview with a message naming the field, and no request is sent", async () => {
    const id = await upload("bad");
    await withStack(FIXTURE, async ({ stack, emu, declare, fileRequests }) => {
      await declare({ f: { blobId: id, retentionEpochs: 4 } });
      await stack.up();
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ blobId: id, retentionEpochs: -1 }, /retentionEpochs must be >= 0 \(got -1\)/],
        [{ blobId: id, retentionEpochs: 4.5 }, /retentionEpochs must be a whole number of epochs \(got 4\.5\)/],
        [{ blobId: id, retentionEpochs: 60 }, /retentionEpochs can rise by at most 53 epochs in one update.*increase of 56/],
        [{ blobId: id, retentionEpochs: 4, name: "n".repeat(300) }, /name must be at most 256 characters \(got 300\)/],
        [{ blobId: id, retentionEpochs: 4, metadata: ["not", "an", "object"] }, /metadata must be a JSON object/],
        // The program reads its config with JSON.parse, which makes `__proto__` an own key: refused, not dropped.
        [
          { blobId: id, retentionEpochs: 4, metadata: JSON.parse('{"__proto__":1,"team":"web"}') },
          /metadata\.__proto__: a key named __proto__ cannot be stored safely/,
        ],
      ];
      for (const [args, message] of cases) {
        emu.clearRequests();
        await declare({ f: args });
        const failure = await stack.preview().then(
          () => undefined,
          (e: Error) => e,
        );
        expect(failure, JSON.stringify(args)).toBeInstanceOf(Error);
        expect(String(failure)).toMatch(message);
        expect(fileRequests()).toEqual([]);
      }
      await declare({ f: { blobId: id, retentionEpochs: 4 } });
    });
  });

  it("8. an unknown or expired blobId, or a wrong API key, fails up clearly and leaves the state as it was", async () => {
    const good = await upload("good");
    const doomed = await upload("doomed");
    await withStack(FIXTURE, async ({ stack, emu, declare }) => {
      await declare({ g: { blobId: good, tag: "kept" } });
      await stack.up();
      const stateBefore = JSON.stringify((await stack.exportStack()).deployment.resources.map((r: { urn: string }) => r.urn));
      const failUp = () =>
        stack.up().then(
          () => undefined,
          (e: Error) => String(e),
        );

      await declare({ g: { blobId: good, tag: "kept" }, u: { blobId: "no-such-blob" } });
      expect(await failUp()).toMatch(/StoredFile "no-such-blob": adopting the file failed: no file with blobId "no-such-blob" exists on the service/);

      await emu.advanceEpochs(2);
      await declare({ g: { blobId: good, tag: "kept" }, d: { blobId: doomed } });
      const expired = await failUp();
      expect(expired).toMatch(new RegExp(`StoredFile "${doomed}": adopting the file failed: .*has expired`));

      const after = JSON.stringify((await stack.exportStack()).deployment.resources.map((r: { urn: string }) => r.urn));
      expect(after).toBe(stateBefore);
    });
    await withStack(
      FIXTURE,
      async ({ stack, declare }) => {
        const fresh = await upload("fresh");
        await declare({ f: { blobId: fresh } });
        const wrongKey = await stack.up().then(
          () => "",
          (e: Error) => String(e),
        );
        expect(wrongKey).toMatch(/401 UNAUTHORIZED/);
        expect(wrongKey).not.toContain("tsk_live_wrong_key_for_e2e");
        const recorded = ((await stack.exportStack()).deployment.resources ?? []).filter((r: { type: string }) => r.type === STORED_FILE_TYPE);
        expect(recorded).toHaveLength(0);
      },
      { apiKey: "tsk_live_wrong_key_for_e2e" },
    );
  });

  it("9. the exported state holds no API key, and each serialized provider is one small require by name", async () => {
    const key = "tsk_live_e2e_secret_key_0123456789";
    // An emulator of its own that accepts this key, so the key under test is unique to this test.
    const keyed = await startEmulator({ port: 0, apiKeys: [key] });
    try {
      await keyed.uploadFile({ content: Buffer.from("state"), filename: "s.txt" });
      const keyedId = keyed.files()[0].blobId;
      await withStack(
        FIXTURE,
        async ({ stack, declare, storedState }) => {
          await stack.setConfig("tuskr:baseUrl", { value: keyed.url });
          await declare({ s: { blobId: keyedId, tag: "t", retentionEpochs: 1 } });
          const up = await stack.up();
          const preview = await stack.preview();
          const refresh = await stack.refresh();
          const state = storedState();
          expect(state).toContain(keyedId);
          for (const text of [up.stdout, up.stderr, preview.stdout, preview.stderr, refresh.stdout, refresh.stderr, state]) {
            expect(text).not.toContain(key);
          }
          const deployment = (await stack.exportStack()).deployment;
          const files = deployment.resources.filter((r: { type: string }) => r.type === STORED_FILE_TYPE);
          expect(files).toHaveLength(1);
          for (const r of files) {
            // Installed as a package, the provider object is serialized as one require by name.
            expect(r.outputs.__provider).toContain('require("pulumi-tuskr/provider")');
            expect(Buffer.byteLength(r.outputs.__provider)).toBeLessThan(400);
            expect(r.inputs.__provider).toBe(r.outputs.__provider);
          }
          expect(state).toContain("ciphertext");
        },
        { apiKey: key },
      );
    } finally {
      await keyed.close();
    }
  });
});
