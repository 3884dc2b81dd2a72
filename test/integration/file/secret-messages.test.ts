import { afterEach, describe, expect, it, vi } from "vitest";
import { EMULATOR_DEFAULT_API_KEY, startEmulator } from "../../../emulator";
import { ASSET_SIG, SIG_KEY } from "../../../provider/engine/markers";
import { STORED_FILE_TYPES } from "../../../provider/engine/urns";
import { rewritingProxy } from "../../helpers/hostile-service";
import { configuredProvider } from "../../helpers/provider-fixture";

/**
 * A message cuts what it quotes short (a name to 80 characters, a service's message to 1,000), and
 * a service may store a value trimmed or normalised: the secret then never appears whole, yet no
 * part of it long enough to mean something may reach a failure, its recorded answer or a warning.
 */

const urn = (name: string) => `urn:pulumi:dev::proj::${STORED_FILE_TYPES.dynamic}::${name}`;
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  vi.restoreAllMocks();
});

/** The emulator behind a proxy that lies as `rewrite` says; a provider pointed at the proxy, and what it logs. */
async function behind(rewrite: Parameters<typeof rewritingProxy>[1]) {
  const emu = await startEmulator({ port: 0 });
  closers.push(() => emu.close());
  const proxy = await rewritingProxy(emu.url, rewrite);
  closers.push(() => proxy.close());
  const logged: string[] = [];
  vi.spyOn(console, "log").mockImplementation((line: unknown) => void logged.push(String(line)));
  const provider = await configuredProvider(proxy, {}, { retry: { baseDelayMs: 1, maxDelayMs: 5 } });
  return { emu, provider, logged };
}

/** A step's failure, with what the engine records beside its message. */
type Failure = Error & { responseBody?: unknown; reasons?: string[] };

/** Everything the failure and the run say, as one text. */
const said = (error: Failure, logged: string[]) =>
  [error?.message, JSON.stringify(error?.responseBody ?? null), ...(error?.reasons ?? []), ...logged].join("\n");

const failure = (p: Promise<unknown>): Promise<Failure> =>
  p.then(
    () => {
      throw new Error("expected a failure");
    },
    (e: unknown) => e as Failure,
  );

describe("a secret cut short, trimmed or normalised by a message or the service is still masked", () => {
  it.each([
    ["kept cut to 100 characters", (name: string) => name.slice(0, 100)],
    ["trimmed, its spaces collapsed and lower-cased", (name: string) => name.trim().replace(/\s+/g, " ").toLowerCase()],
  ])("a secret name the service stores %s: the upload's refusal shows no part of it", async (_how, stored) => {
    const secretName = `  SEKRITPREFIX-Quarterly   Figures-${"q".repeat(90)}-tail.txt`;
    const { provider, logged } = await behind({
      json: (method, path, _status, body) => {
        const b = body as Record<string, unknown>;
        return method === "GET" && path.startsWith("/v1/files/") && typeof b.name === "string" ? { ...b, name: stored(b.name) } : body;
      },
    });
    const error = await failure(
      provider.create({
        source: { [SIG_KEY]: ASSET_SIG, text: `cut ${Math.random()}` },
        name: secretName,
        retentionEpochs: 1,
        __urn: urn("cut"),
        __secretInputs: ["name"],
      }),
    );
    expect(error.message).toMatch(/unexpected body \(INVALID_RESPONSE\): the upload's blobId is named "\[REDACTED\]", not "\[REDACTED\]" as uploaded/);
    const text = said(error, logged).toLowerCase();
    for (const part of ["sekritprefix", "quarterly", "figures", "qqqqqqqq"]) expect(text).not.toContain(part);
  });

  it("a secret metadata value of 1,500 characters a 422 echoes, cut to 1,000: the failure shows no part of it", async () => {
    const value = `SEKRITVAL-${"z".repeat(1490)}`;
    const { emu, provider, logged } = await behind({
      answer: (method) =>
        method === "PATCH" ? [422, { error: { code: "VALIDATION_ERROR", message: `metadata.token is not allowed: ${JSON.stringify(value)}` } }] : undefined,
    });
    const file = await emu.uploadFile({ content: `m ${Math.random()}`, filename: "m.txt", epochs: 2 });
    const error = await failure(provider.create({ blobId: file.blobId, metadata: { token: value }, __urn: urn("m"), __secretInputs: ["metadata"] }));
    expect(error.message).toMatch(/failed with 422 VALIDATION_ERROR: metadata\.\[REDACTED\] is not allowed: "\[REDACTED\]$/);
    const text = said(error, logged);
    expect(text).not.toContain("SEKRITVAL");
    expect(text).not.toContain("zzzzzzzz");
  });

  it("the API key a service echoes at the end of a long message, cut to 1,000 characters: no part of it is shown", async () => {
    const { emu, provider, logged } = await behind({
      answer: (method) =>
        method === "PATCH"
          ? [422, { error: { code: "VALIDATION_ERROR", message: `${"not allowed ".repeat(82)}(key ${EMULATOR_DEFAULT_API_KEY})` } }]
          : undefined,
    });
    const file = await emu.uploadFile({ content: `k ${Math.random()}`, filename: "k.txt", epochs: 2 });
    const error = await failure(provider.create({ blobId: file.blobId, tag: "t", __urn: urn("k") }));
    expect(error.message).toMatch(/not allowed \(key \[REDACTED\]$/);
    expect(said(error, logged)).not.toContain(EMULATOR_DEFAULT_API_KEY.slice(0, 8));
  });
});

describe("the API key in a service's answer is masked before anything records or says it", () => {
  it("a record's url carrying the key in its query (a signed link): the state has the link masked", async () => {
    const { emu, provider, logged } = await behind({
      json: (_method, _path, _status, body) => {
        const b = body as Record<string, unknown>;
        return b && typeof b.url === "string" ? { ...b, url: `${b.url}?access_token=${EMULATOR_DEFAULT_API_KEY}` } : body;
      },
    });
    const file = await emu.uploadFile({ content: `u ${Math.random()}`, filename: "u.txt" });
    const created = await provider.create({ blobId: file.blobId, tag: "x", __urn: urn("u") });
    expect((created.outs as { url: string }).url).toMatch(/\?access_token=\[REDACTED\]$/);
    expect(JSON.stringify(created.outs)).not.toContain(EMULATOR_DEFAULT_API_KEY);
    expect(logged.join("\n")).not.toContain(EMULATOR_DEFAULT_API_KEY);
  });

  it('a user\'s value that reads like a token ("Bearer bonds") is data: recorded as it is, no drift', async () => {
    const { emu, provider } = await behind({});
    const file = await emu.uploadFile({ content: `b ${Math.random()}`, filename: "b.txt" });
    const created = await provider.create({ blobId: file.blobId, tag: "Bearer bonds", __urn: urn("b") });
    expect((created.outs as { tag: string }).tag).toBe("Bearer bonds");
    const read = await provider.read(created.id, created.outs as never);
    expect((read.props as { tag: string }).tag).toBe("Bearer bonds");
  });

  it("a tag the service changed to hold the key: a refresh's drift warning does not show it", async () => {
    let echo = false;
    const { emu, provider, logged } = await behind({
      json: (_method, _path, _status, body) => {
        const b = body as Record<string, unknown>;
        return echo && b && typeof b.tag === "string" ? { ...b, tag: `scoped to ${EMULATOR_DEFAULT_API_KEY}` } : body;
      },
    });
    const file = await emu.uploadFile({ content: `t ${Math.random()}`, filename: "t.txt" });
    const created = await provider.create({ blobId: file.blobId, tag: "x", __urn: urn("t") });
    echo = true;
    const read = await provider.read(created.id, created.outs as never);
    expect(JSON.stringify(read)).not.toContain(EMULATOR_DEFAULT_API_KEY);
    expect(logged.join("\n")).not.toContain(EMULATOR_DEFAULT_API_KEY);
  });
});
