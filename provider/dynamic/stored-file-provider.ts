import type * as pulumi from "@pulumi/pulumi";
import type { TuskrClientOptions } from "../client/client";
import type { ConfigSource } from "../config/settings";
import { StoredFileCore, type StoredFileDiff, type StoredFileRequest } from "../file/core";
import { type ProviderLog, inertError, inertFailure } from "../engine/notice";
import { PROVIDER_KEY } from "../engine/provider-key";
import { hideBookkeeping, parseState } from "../file/state";
import { declaredInputsOf, validateInputs } from "../file/validate";

/**
 * The dynamic resource's front door. A dynamic provider is told neither the URN nor which inputs
 * are secret, so `StoredFile` passes them as extra inputs (keys below), which go no further than
 * this file.
 */

type Props = Record<string, unknown>;

/** Inputs the resource adds for its provider, and the one the engine adds (the serialized provider). */
const URN_KEY = "__urn";
const SECRETS_KEY = "__secretInputs";

/** The resource's own inputs, the URN and secret names split off (StoredFolder's front door too). */
export function requestOf(news: Props): { inputs: Props; urn?: string; secretInputs: string[]; carried: Props } {
  const { [URN_KEY]: urn, [SECRETS_KEY]: secrets, [PROVIDER_KEY]: _provider, ...inputs } = news ?? {};
  const secretInputs = Array.isArray(secrets) ? secrets.filter((s): s is string => typeof s === "string") : [];
  const carried: Props = {};
  if (typeof urn === "string") carried[URN_KEY] = urn;
  if (Array.isArray(secrets)) carried[SECRETS_KEY] = secrets;
  return { inputs, urn: typeof urn === "string" ? urn : undefined, secretInputs, carried };
}

/** A request for the core: the inputs as `check` returned them, typed (the URN and secret names split off). */
const fileRequestOf = (news: Props): StoredFileRequest => {
  const { inputs, urn, secretInputs } = requestOf(news);
  return { inputs: declaredInputsOf(inputs), urn, secretInputs };
};

/** A partial failure records what the engine stores with a dynamic resource's state (`shape`d as recorded): its provider. Its message is made inert. */
export function withProvider(news: Props, shape: (properties: Props) => Props = hideBookkeeping): (error: unknown) => never {
  return (error) => {
    const e = error as { properties?: Props };
    if (e && typeof e.properties === "object" && e.properties !== null) e.properties = { ...shape(e.properties), [PROVIDER_KEY]: news[PROVIDER_KEY] };
    throw inertError(error);
  };
}

/**
 * The dynamic-provider host prints a check, diff or read error as message plus stack, then the
 * engine repeats the message: three copies. The error keeps its message for the engine; the host's
 * print only points at it.
 */
export async function toldOnce<T>(step: "check" | "diff" | "read", work: () => T | Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof Error) {
      const pointer = `${step === "read" ? "refresh" : step === "diff" ? "preview" : "check"} failed (the error reported for the resource says why)`;
      for (const [key, value] of [
        ["stack", pointer],
        ["toString", () => "tuskr"],
      ] as const) {
        Object.defineProperty(error, key, { value, configurable: true, writable: true, enumerable: false });
      }
    }
    throw inertError(error);
  }
}

export class StoredFileProvider implements pulumi.dynamic.ResourceProvider {
  /** Shared with the one-resource StoredFolder in the same provider process: one claim of each content across both. */
  readonly core: StoredFileCore;

  /**
   * @param clientOptions added to what the settings give (tests inject retry counters here).
   * @param log where warnings go (stdout: the engine shows a dynamic provider's output).
   */
  constructor(clientOptions: Partial<TuskrClientOptions> = {}, log?: ProviderLog) {
    this.core = new StoredFileCore(clientOptions, log);
  }

  async configure(req: { config: ConfigSource } | undefined): Promise<void> {
    this.core.configure(req?.config);
  }

  async check(olds: Props, news: Props): Promise<pulumi.dynamic.CheckResult> {
    const { inputs, secretInputs, carried, urn } = requestOf(news);
    const checked = await toldOnce("check", () => this.core.check(declaredInputsOf(olds), validateInputs(inputs, secretInputs), secretInputs, urn));
    // The URN and the secret names stay among the inputs: the engine hands them to diff, create and update.
    return { inputs: { ...checked.inputs, ...carried }, failures: checked.failures.map(({ property, reason }) => inertFailure({ property, reason })) };
  }

  async diff(id: string, olds: Props, news: Props): Promise<StoredFileDiff> {
    return toldOnce("diff", () => this.core.diff(id, parseState(olds), fileRequestOf(news)));
  }

  async create(news: Props): Promise<pulumi.dynamic.CreateResult> {
    const { id, state } = await this.core.create(fileRequestOf(news)).catch(withProvider(news));
    return { id, outs: hideBookkeeping(state) };
  }

  async read(id: string, props: Props): Promise<pulumi.dynamic.ReadResult> {
    const { id: found, state, inputs } = await toldOnce("read", () => this.core.read(id, parseState(props)));
    return found === undefined || state === undefined ? {} : { id: found, props: hideBookkeeping(state), inputs };
  }

  async update(id: string, olds: Props, news: Props): Promise<pulumi.dynamic.UpdateResult> {
    const outs = await this.core.update(id, parseState(olds), fileRequestOf(news)).catch(withProvider(news));
    return { outs: hideBookkeeping(outs) };
  }

  /**
   * Blobs cannot be deleted through this API: the file keeps its paid period and simply stops
   * being managed by this stack. No request is sent.
   */
  async delete(_id: string, _props: Props): Promise<void> {}
}

/** The provider the serialized stub loads (`pulumi-tuskr/impl`): one per provider process. */
export const storedFileProvider = new StoredFileProvider();
