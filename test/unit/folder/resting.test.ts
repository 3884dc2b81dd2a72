import { describe, expect, it } from "vitest";
import { RESTING, type Resting, restingFor, restingRecord } from "../../../provider/folder/resting";
import { createRequire } from "node:module";

/** The message the engine and the SDK carry a dynamic resource's properties in: the SDK's own copy of it. */
interface StructMessage {
  serializeBinary(): Uint8Array;
  toJavaScript(): Record<string, unknown>;
}
const fromSdk = createRequire(createRequire(__filename).resolve("@pulumi/pulumi"));
const { Struct } = fromSdk("google-protobuf/google/protobuf/struct_pb") as {
  Struct: { fromJavaScript(value: unknown): StructMessage; deserializeBinary(bytes: Uint8Array): StructMessage };
};

/**
 * A folder's verdict of "nothing to do" is taken by the next diff only for the outputs and inputs
 * it was made for, as they come back from the engine: through its wire (a Struct, whose keys keep
 * no order), with the SDK's serialized provider added to the outputs.
 */

const resting: Resting = {
  from: 1_000,
  until: 5_000,
  epochMs: 86_400_000,
  epochKnown: true,
  warnWithinEpochs: 3,
  seen: [86_400_000],
  said: [{ severity: "warning", text: 'StoredFile "a.txt": expiring soon: 2 epoch(s) left' }],
};
const outs = () => ({
  path: "/site",
  entries: ["gzip:AAAA", "BBBB"],
  manifestText: '{\n"a.txt":"h1"\n}',
  partsBefore: 3,
  secretInputs: ["files"],
  urlBase: null,
});
const news = () => ({
  path: "/site",
  parts: 3,
  part: 1,
  manifest: { "": '{\n"a.txt":"h1"\n}' },
  files: { "a.txt": { tag: "x", metadata: { b: 1, a: [1, 2] } } },
  __provider: "stub",
});

/** As the engine sends it back: through a Struct, keys reversed at every depth. */
const viaEngine = (props: Record<string, unknown>): Record<string, unknown> => {
  const reversed = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(reversed)
      : v !== null && typeof v === "object"
        ? Object.fromEntries(
            Object.entries(v)
              .reverse()
              .map(([k, x]) => [k, reversed(x)]),
          )
        : v;
  const wire = Struct.fromJavaScript(reversed(props)).serializeBinary();
  return Struct.deserializeBinary(wire).toJavaScript();
};

describe("restingFor", () => {
  const written = () => {
    const recorded: Record<string, unknown> = outs();
    recorded[RESTING] = restingRecord(resting, recorded, news());
    return recorded;
  };

  it("takes the verdict back through the engine's wire, with the serialized provider among the outputs", () => {
    expect(restingFor(viaEngine({ ...written(), __provider: "stub" }), viaEngine(news()))).toEqual(resting);
  });

  it("a verdict that time never undoes is recorded and read as such", () => {
    const recorded: Record<string, unknown> = outs();
    recorded[RESTING] = restingRecord({ ...resting, until: Number.POSITIVE_INFINITY }, recorded, news());
    expect(restingFor(viaEngine(recorded), news())?.until).toBe(Number.POSITIVE_INFINITY);
  });

  it.each([
    ["an output changed (a refresh found another expiry)", (o: Record<string, unknown>) => ({ ...o, entries: ["gzip:AAAA", "BBBC"] }), news()],
    ["an output added", (o: Record<string, unknown>) => ({ ...o, handedOver: "x" }), news()],
    ["a file's declared value changed", (o: Record<string, unknown>) => o, { ...news(), files: { "a.txt": { tag: "y", metadata: { b: 1, a: [1, 2] } } } }],
    ["an array's order changed", (o: Record<string, unknown>) => o, { ...news(), files: { "a.txt": { tag: "x", metadata: { b: 1, a: [2, 1] } } } }],
    ["the manifest changed", (o: Record<string, unknown>) => o, { ...news(), manifest: { "": '{\n"a.txt":"h2"\n}' } }],
    ["a verdict unreadable", (o: Record<string, unknown>) => ({ ...o, [RESTING]: "{" }), news()],
    [
      "a verdict missing a fact",
      (o: Record<string, unknown>) => ({ ...o, [RESTING]: JSON.stringify({ ...JSON.parse(String(o[RESTING])), epochMs: "day" }) }),
      news(),
    ],
    [
      "a verdict's own end edited (never undone by time)",
      (o: Record<string, unknown>) => ({ ...o, [RESTING]: JSON.stringify({ ...JSON.parse(String(o[RESTING])), until: null }) }),
      news(),
    ],
    [
      "a verdict's notices edited",
      (o: Record<string, unknown>) => ({ ...o, [RESTING]: JSON.stringify({ ...JSON.parse(String(o[RESTING])), said: [] }) }),
      news(),
    ],
    [
      "a verdict another code made",
      (o: Record<string, unknown>) => ({ ...o, [RESTING]: JSON.stringify({ ...JSON.parse(String(o[RESTING])), code: "0".repeat(64) }) }),
      news(),
    ],
  ])("none when %s", (_, change, sent) => {
    expect(restingFor(viaEngine(written()), news())).toEqual(resting);
    expect(restingFor(viaEngine(change(written())), sent)).toBeUndefined();
  });

  it("none without a recorded verdict", () => {
    expect(restingFor(outs(), news())).toBeUndefined();
  });
});
