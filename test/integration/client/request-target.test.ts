import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TuskrClient } from "../../../provider/client/client";

/**
 * Each request goes where the base URL and the route, written one after the other, say: the
 * client reuses the base's parts instead of parsing a URL per request, and must not send
 * anywhere else for it (a gateway's path prefix, a query, a host name).
 */

const BLOB = "target-blob_1";
let server: http.Server;
let port = 0;
const seen: Array<{ method: string; url: string; host: string; authorization: string }> = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push({ method: req.method ?? "", url: req.url ?? "", host: req.headers.host ?? "", authorization: req.headers.authorization ?? "" });
    req.resume();
    res.writeHead(404, { "Content-Type": "application/json" }).end(JSON.stringify({ error: { code: "NOT_FOUND", message: "no", details: { blobId: BLOB } } }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("client: where a request goes", () => {
  it("the route after the base URL's path, as the URL written whole names it", async () => {
    const bases = [
      `http://127.0.0.1:${port}`,
      `http://127.0.0.1:${port}/`,
      `http://127.0.0.1:${port}/api`,
      `http://127.0.0.1:${port}/api/`,
      `http://127.0.0.1:${port}/a.b/~c_-d/`,
      `http://localhost:${port}/gw`,
      `http://LocalHost:${port}/gw`,
      // Parsed per request, as a URL: a query or an empty segment in the base.
      `http://127.0.0.1:${port}/api?x=1`,
      `http://127.0.0.1:${port}//api`,
    ];
    for (const baseUrl of bases) {
      seen.length = 0;
      const client = new TuskrClient({ baseUrl, apiKey: "tsk_target_key", retry: { maxAttempts: 1 } });
      await expect(client.getFile(BLOB)).rejects.toMatchObject({ status: 404 });
      const whole = new URL(`${baseUrl.replace(/\/+$/, "")}/v1/files/${BLOB}`);
      expect(seen, baseUrl).toEqual([{ method: "GET", url: `${whole.pathname}${whole.search}`, host: whole.host, authorization: "Bearer tsk_target_key" }]);
    }
  });
});
