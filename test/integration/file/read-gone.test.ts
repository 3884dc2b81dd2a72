import { once } from "node:events";
import * as net from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Emulator, startEmulator } from "../../../emulator";
import { hostileService, json, type HostileService } from "../../helpers/hostile-service";
import { configuredProvider } from "../../helpers/provider-fixture";

/**
 * A refresh drops a file from the stack only when the service itself says that this file does
 * not exist or has expired. A 404 from a path the service does not have (a wrong base URL), or
 * one without the service's error naming the file, is an error that names the URL tried and
 * changes nothing.
 */

let emu: Emulator;
let service: HostileService | undefined;
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
});
afterAll(() => emu.close());
afterEach(async () => {
  await service?.close();
  service = undefined;
});

/** The message a refresh through `service` fails with (a refresh that succeeds fails the test). */
async function readFailure(service: { url: string }, id: string, state: Record<string, unknown>): Promise<string> {
  const read = await (await configuredProvider(service)).read(id, state).then(
    () => undefined,
    (e: Error) => e,
  );
  expect(read).toBeInstanceOf(Error);
  return (read as Error).message;
}

async function created(content: string) {
  const provider = await configuredProvider(emu);
  const blobId = (await emu.uploadFile({ content })).blobId;
  const { id, outs } = await provider.create({ blobId, tag: "kept" });
  return { id, outs };
}

describe("refresh: a file is gone only when the service says so", () => {
  it("a wrong base path (the service answers 404 'no route') keeps the file and names the URL and the setting", async () => {
    const { id, outs } = await created(`wrong base ${Math.random()}`);
    const wrong = await configuredProvider({ url: `${emu.url}/api` });
    const error = await wrong.read(id, outs).then(
      (r) => r,
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain(`${emu.url}/api/v1/files/`);
    expect((error as Error).message).toMatch(/check tuskr:baseUrl/);
    // With the right base URL, the same state reads back as it is.
    expect((await (await configuredProvider(emu)).read(id, outs)).props).toMatchObject({ blobId: id, tag: "kept" });
  });

  it("a 404 without the service's error naming the file (a proxy's, a bare one) changes nothing", async () => {
    const { id, outs } = await created(`bare 404 ${Math.random()}`);
    for (const body of [undefined, { error: { code: "NOT_FOUND", message: "not here" } }, { error: { code: "NOT_FOUND", details: { blobId: "another" } } }]) {
      service = await hostileService((_req, res) => (body === undefined ? res.writeHead(404).end("Not Found") : json(res, 404, body)));
      const provider = await configuredProvider(service);
      await expect(provider.read(id, outs)).rejects.toThrow(/check tuskr:baseUrl/);
      await service.close();
      service = undefined;
    }
  });

  it("a server that does not have the method (405, 501, as a static file server answers a PATCH) is named as a possible wrong base URL", async () => {
    const { id, outs } = await created(`no patch ${Math.random()}`);
    for (const status of [405, 501]) {
      service = await hostileService((req, res) =>
        req.method === "GET"
          ? json(res, 200, { ...outs, name: null, metadata: {}, size: 1, mimeType: "text/plain", createdAt: outs.createdAt, url: outs.url })
          : res.writeHead(status).end("Unsupported method"),
      );
      const provider = await configuredProvider(service, {}, { retry: { baseDelayMs: 1, maxDelayMs: 2, maxAttempts: 2 } });
      await expect(provider.update(id, outs, { blobId: id, tag: "changed" })).rejects.toThrow(
        new RegExp(`PATCH .* failed with ${status} .*not the service's error.*check tuskr:baseUrl`),
      );
      // Neither is a failure that passes (501: not implemented): sent once.
      expect(service.requests.filter((r) => r.method === "PATCH")).toHaveLength(1);
      await service.close();
      service = undefined;
    }
  });

  it("a server that answers HTML, or nothing listening: the error names its code and points at tuskr:baseUrl", async () => {
    const { id, outs } = await created(`not the api ${Math.random()}`);
    service = await hostileService((_req, res) => res.writeHead(200, { "Content-Type": "text/html" }).end("<html>a web page</html>"));
    const html = await (await configuredProvider(service)).read(id, outs).then(
      () => undefined,
      (e: Error) => e.message,
    );
    expect(html).toMatch(
      new RegExp(`GET ${service.url}/v1/files/\\S+ answered 200 with an unexpected body \\(INVALID_RESPONSE\\): the body is not JSON; .*check tuskr:baseUrl`),
    );
    // A port nothing listens on (taken, then let go; no connection to it was ever pooled).
    const free = net.createServer().listen(0, "127.0.0.1");
    await once(free, "listening");
    const port = (free.address() as net.AddressInfo).port;
    await new Promise((r) => free.close(r));
    const refused = await (await configuredProvider({ url: `http://127.0.0.1:${port}` }, {}, { retry: { maxAttempts: 1 } })).read(id, outs).then(
      () => undefined,
      (e: Error) => e.message,
    );
    expect(refused).toMatch(/failed \(NETWORK_ERROR\): ECONNREFUSED: nothing answers at http:\/\/127\.0\.0\.1:\d+: check tuskr:baseUrl/);
  });

  it("the service's own 404 for this file, or 410 expired, drops it", async () => {
    const provider = await configuredProvider(emu);
    expect(await provider.read("nope", { blobId: "never-uploaded-blob", tag: "x" })).toEqual({});
    const { id, outs } = await created(`expires ${Math.random()}`);
    await emu.advanceEpochs(5);
    expect(await provider.read(id, outs)).toEqual({});
  });

  it("another live service's NOT_FOUND (tuskr:baseUrl moved) keeps the file and names both URLs; its own service still reads it", async () => {
    const { id, outs } = await created(`elsewhere ${Math.random()}`);
    expect(outs.__serviceUrl).toBe(emu.url);
    const other = await startEmulator({ port: 0 });
    try {
      expect(await readFailure(other, id, outs)).toContain(`${other.url} says the file does not exist (unknown blobId), but it is held by ${emu.url}: kept`);
    } finally {
      await other.close();
    }
    const read = await (await configuredProvider(emu)).read(id, outs);
    expect(read.props).toMatchObject({ blobId: id, tag: "kept", __serviceUrl: emu.url });
  });

  it("another service holding its own entry of the same bytes is not taken for the file's: nothing recorded, both URLs named", async () => {
    const content = `twice ${Math.random()}`;
    const { id, outs } = await created(content);
    const other = await startEmulator({ port: 0 });
    try {
      await new Promise((r) => setTimeout(r, 5)); // another upload, another createdAt
      expect((await other.uploadFile({ content })).blobId).toBe(id);
      expect(await readFailure(other, id, outs)).toContain(`${other.url} holds another entry of this file than ${emu.url}`);
    } finally {
      await other.close();
    }
    // The same service under another name of the same host holds the same entry: read, and its URL recorded.
    const sameService = emu.url.replace("127.0.0.1", "localhost");
    const read = await (await configuredProvider({ url: sameService })).read(id, outs);
    expect(read.props).toMatchObject({ blobId: id, __serviceUrl: sameService });
  });

  it("a state of the release before (no service recorded): another live service's NOT_FOUND keeps it while its url does not say it is gone", async () => {
    const legacyContent = `legacy elsewhere ${Math.random()}`;
    const { id, outs } = await created(legacyContent);
    const { __serviceUrl: _, ...previous } = outs;
    const other = await startEmulator({ port: 0 });
    try {
      expect(await readFailure(other, id, previous)).toContain(
        `${other.url} says the file does not exist (unknown blobId), but its url ${outs.url} does not: kept`,
      );
    } finally {
      await other.close();
    }
    // Another service whose own entry of these bytes has expired (410): the file's url still serves it.
    const expired = await startEmulator({ port: 0 });
    try {
      const again = await expired.uploadFile({ content: legacyContent, filename: "l.txt", epochs: 1 });
      expect(again.blobId).toBe(id);
      await expired.advanceEpochs(5);
      expect(await readFailure(expired, id, previous)).toContain(`${expired.url} says the file has expired, but its url ${outs.url} does not: kept`);
    } finally {
      await expired.close();
    }
    // Its own service's 404, its url saying so too: dropped.
    await emu.advanceEpochs(5);
    expect(await (await configuredProvider(emu)).read(id, previous)).toEqual({});
  });

  it("a state of the release before (no service recorded) learns its service from the first read that finds the file", async () => {
    const { id, outs } = await created(`upgraded ${Math.random()}`);
    const { __serviceUrl: _, ...previous } = outs;
    expect((await (await configuredProvider(emu)).read(id, previous)).props).toMatchObject({ __serviceUrl: emu.url });
  });
});
