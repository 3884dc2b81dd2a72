import { describe, expect, it } from "vitest";
import { ERRORS, type Emulator, type FaultConfig } from "../../../emulator";
import { addFaultFlag, validateFaultConfig } from "../../../emulator/faults";
import { filePath, getFile, jsonHeaders, patchFile, rawRequest, renewFile, request, useEmulator, withEmulator } from "../../helpers/emulator";

const emulator = useEmulator();

async function uploaded(content = `faults ${Math.random()}`): Promise<string> {
  const record = await emulator().uploadFile({ content, epochs: 2 });
  return record.blobId;
}

function rawRenew(target: Emulator, blobId: string, epochs: number, idempotencyKey?: string) {
  const headers = jsonHeaders(idempotencyKey === undefined ? {} : { "Idempotency-Key": idempotencyKey });
  return rawRequest(target, "POST", `${filePath(blobId)}/renew`, { headers, body: JSON.stringify({ epochs }) });
}

describe("scripted faults", () => {
  it("5xx answers 503 (or the scripted 500) and does not apply the change", async () => {
    const blobId = await uploaded();
    emulator().setFaults({
      script: [
        { route: "renew", fault: "5xx" },
        { route: "patch", fault: "5xx", status: 500 },
      ],
    });
    const renew = await renewFile(emulator(), blobId, { epochs: 3 });
    expect([renew.status, renew.body.error.code]).toEqual([ERRORS.injectedUnavailable.status, ERRORS.injectedUnavailable.code]);
    const patch = await patchFile(emulator(), blobId, { tag: "never" });
    expect([patch.status, patch.body.error.code]).toEqual([ERRORS.injectedInternal.status, ERRORS.injectedInternal.code]);
    expect(emulator().files()[0]).toMatchObject({ epochsBought: 0, endEpoch: 2, tag: null });

    // The script is used up: the same requests now go through.
    expect((await renewFile(emulator(), blobId, { epochs: 3 })).status).toBe(200);
    expect(emulator().files()[0].epochsBought).toBe(3);
    expect(
      emulator()
        .requests()
        .map((e) => [e.route, e.status, e.fault]),
    ).toEqual([
      ["renew", 503, "5xx"],
      ["patch", 500, "5xx"],
      ["renew", 200, undefined],
    ]);
  });

  it("429 answers with the scripted Retry-After and X-RateLimit-Reset and does not apply", async () => {
    const blobId = await uploaded();
    emulator().setFaults({ script: [{ route: "patch", fault: "429", retryAfterSeconds: 7 }] });
    const response = await patchFile(emulator(), blobId, { tag: "later" });
    expect([response.status, response.body.error.code]).toEqual([ERRORS.rateLimited.status, ERRORS.rateLimited.code]);
    expect(response.headers.get("retry-after")).toBe("7");
    const reset = Number(response.headers.get("x-ratelimit-reset"));
    expect(Math.abs(reset - (Date.now() / 1000 + 7))).toBeLessThan(2);
    expect(emulator().files()[0].tag).toBeNull();
  });

  it("reset cuts the connection without applying or answering", async () => {
    const blobId = await uploaded();
    emulator().setFaults({ script: [{ route: "patch", fault: "reset" }] });
    const result = await rawRequest(emulator(), "PATCH", filePath(blobId), { headers: jsonHeaders(), body: '{"tag":"lost"}' });
    expect(result.kind).toBe("connection-error");
    expect(emulator().files()[0]).toMatchObject({ tag: null, updateCount: 0 });
    expect(emulator().requests()).toEqual([expect.objectContaining({ route: "patch", status: 0, fault: "reset", requestBody: { tag: "lost" } })]);
  });

  it("apply-then-drop applies the renew, then cuts the connection; a retry with the same key buys nothing twice", async () => {
    const blobId = await uploaded();
    emulator().setFaults({ script: [{ route: "renew", fault: "apply-then-drop" }] });
    const dropped = await rawRenew(emulator(), blobId, 4, "renew-once");
    expect(dropped.kind).toBe("connection-error");
    expect(emulator().files()[0]).toMatchObject({ epochsBought: 4, endEpoch: 6, renewCount: 1 });

    const retry = await rawRenew(emulator(), blobId, 4, "renew-once");
    expect(retry.kind === "response" && [retry.status, retry.headers["idempotent-replayed"], retry.body.endEpoch]).toEqual([200, "true", 6]);
    expect(emulator().files()[0]).toMatchObject({ epochsBought: 4, endEpoch: 6, renewCount: 1 });
    expect(
      emulator()
        .requests()
        .map((e) => [e.status, e.fault, e.idempotencyKey]),
    ).toEqual([
      [0, "apply-then-drop", "renew-once"],
      [200, undefined, "renew-once"],
    ]);
  });

  it("apply-then-drop applies a PATCH too", async () => {
    const blobId = await uploaded();
    emulator().setFaults({ script: [{ route: "patch", fault: "apply-then-drop" }] });
    const dropped = await rawRequest(emulator(), "PATCH", filePath(blobId), { headers: jsonHeaders(), body: '{"metadata":{"applied":true}}' });
    expect(dropped.kind).toBe("connection-error");
    expect((await getFile(emulator(), blobId)).body.metadata).toEqual({ applied: true });
  });

  it("latency delays the answer by the scripted time", async () => {
    const blobId = await uploaded();
    emulator().setFaults({ script: [{ route: "get", fault: "latency", latencyMs: 300 }] });
    const started = Date.now();
    const slow = await getFile(emulator(), blobId);
    const slowMs = Date.now() - started;
    expect(slow.status).toBe(200);
    expect(slowMs).toBeGreaterThanOrEqual(290);
    // The next answer is not delayed: the log says which request the fault was applied to (a time would vary with the machine's load).
    await getFile(emulator(), blobId);
    expect(
      emulator()
        .requests()
        .map((r) => r.fault),
    ).toEqual(["latency", undefined]);
  });

  it("uses the first entry with times left whose route matches, and shows what is left", async () => {
    const blobId = await uploaded();
    emulator().setFaults({
      script: [
        { route: "renew", fault: "5xx" },
        { route: "*", fault: "429", times: 2 },
      ],
    });
    const statuses = [
      (await getFile(emulator(), blobId)).status, // "*" entry, 1 of 2
      (await renewFile(emulator(), blobId, { epochs: 1 })).status, // renew entry
    ];
    expect(emulator().faults().script).toEqual([{ route: "*", fault: "429", times: 1 }]);
    statuses.push((await renewFile(emulator(), blobId, { epochs: 1 })).status); // "*" entry, 2 of 2
    statuses.push((await getFile(emulator(), blobId)).status); // nothing left
    expect(statuses).toEqual([429, 503, 429, 200]);
    expect((await request(emulator(), "GET", "/_emulator/faults")).body.script).toEqual([]);
  });
});

describe("random faults", () => {
  it("applies a rate of 1 to its route only", async () => {
    const blobId = await uploaded();
    emulator().setFaults({ routes: { get: { error5xxRate: 1 } } });
    expect((await getFile(emulator(), blobId)).status).toBe(503);
    expect((await getFile(emulator(), blobId)).status).toBe(503);
    expect((await patchFile(emulator(), blobId, { tag: "fine" })).status).toBe(200);
  });

  it("takes a route's own fields over those of *", async () => {
    const blobId = await uploaded();
    emulator().setFaults({ routes: { "*": { error5xxRate: 1 }, get: { error5xxRate: 0 } } });
    expect((await getFile(emulator(), blobId)).status).toBe(200);
    expect((await patchFile(emulator(), blobId, { tag: "x" })).status).toBe(503);
  });

  it("random apply-then-drop really applies", async () => {
    const blobId = await uploaded();
    emulator().setFaults({ routes: { renew: { applyThenDropRate: 1 } } });
    expect((await rawRenew(emulator(), blobId, 2)).kind).toBe("connection-error");
    expect((await rawRenew(emulator(), blobId, 3)).kind).toBe("connection-error");
    expect(emulator().files()[0].epochsBought).toBe(5);
  });

  const config: FaultConfig = { routes: { "*": { error5xxRate: 0.3, rateLimitRate: 0.2, resetRate: 0.1 } } };

  async function sequence(target: Emulator, blobId: string, n: number): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      const result = await rawRequest(target, "GET", filePath(blobId));
      out.push(result.kind === "response" ? String(result.status) : "cut");
    }
    return out;
  }

  it("gives the same faults for the same seed and different ones for another seed", async () => {
    const run = (seed: number) =>
      withEmulator(
        async (target) => {
          const record = await target.uploadFile({ content: "seeded" });
          return sequence(target, record.blobId, 30);
        },
        { seed, faults: config },
      );
    const first = await run(42);
    const second = await run(42);
    const other = await run(43);
    expect(second).toEqual(first);
    expect(other).not.toEqual(first);
    // All four outcomes occur with these rates over 30 requests, so the draw really is used.
    expect(new Set(first)).toEqual(new Set(["200", "503", "429", "cut"]));
  });

  it("restarts the random sequence whenever faults are set", async () => {
    const blobId = await uploaded();
    emulator().setFaults({ ...config, seed: 7 });
    const first = await sequence(emulator(), blobId, 15);
    emulator().setFaults({ ...config, seed: 7 });
    expect(await sequence(emulator(), blobId, 15)).toEqual(first);
  });
});

describe("fault configuration", () => {
  it("is read and set over HTTP, and refused with 422 when invalid", async () => {
    const set = await request(emulator(), "POST", "/_emulator/faults", { json: { seed: 5, routes: { renew: { resetRate: 0.5 } } } });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ seed: 5, routes: { renew: { resetRate: 0.5 } }, script: [] });
    expect((await request(emulator(), "GET", "/_emulator/faults")).body).toEqual(set.body);

    const invalid: [unknown, string][] = [
      [{ routes: { delete: { resetRate: 1 } } }, "delete"],
      [{ routes: { get: { resetRate: 2 } } }, "resetRate"],
      [{ routes: { get: { resetRate: 0.6, error5xxRate: 0.6 } } }, "add up to 1.2"],
      [{ script: [{ route: "get", fault: "explode" }] }, "script[0].fault"],
      [{ script: [{ route: "get", fault: "5xx", status: 502 }] }, "500 or 503"],
      [{ colour: 1 }, '"colour"'],
    ];
    for (const [body, fragment] of invalid) {
      const response = await request(emulator(), "POST", "/_emulator/faults", { json: body });
      expect([response.status, response.body.error.code]).toEqual([ERRORS.invalidFaultConfig.status, ERRORS.invalidFaultConfig.code]);
      expect(response.body.error.message).toContain(fragment);
    }
    // A refused configuration leaves the previous one in place.
    expect((await request(emulator(), "GET", "/_emulator/faults")).body).toEqual(set.body);
  });

  it("turns CLI --fault flags into a validated configuration", () => {
    let config = addFaultFlag({}, "renew:applyThenDropRate=0.2");
    config = addFaultFlag(config, "*:error5xxRate=0.1");
    config = addFaultFlag(config, "renew:latencyMs=50");
    expect(config).toEqual({ routes: { renew: { applyThenDropRate: 0.2, latencyMs: 50 }, "*": { error5xxRate: 0.1 } } });
    expect(() => addFaultFlag({}, "renew:applyThenDropRate")).toThrow(/expected <route\|\*>:<field>=<value>/);
    expect(() => addFaultFlag({}, "renew:bogusRate=0.1")).toThrow(/bogusRate/);
    expect(() => addFaultFlag({}, "renew:resetRate=abc")).toThrow(/not a number/);
    expect(validateFaultConfig(undefined)).toEqual({});
  });
});
