import type * as pulumi from "@pulumi/pulumi";
import { isPlainObject } from "../api";
import type { TuskrClientOptions } from "./client/client";
import type { ConfigSource } from "./settings";
import { type ProviderLog, StoredFileCore } from "./stored-file-core";
import { StoredFolderCore, type StoredFolderRequest } from "./stored-folder-core";
import { type StoredFolderState, StoredFolderStateSchema } from "./stored-folder-schema";

/**
 * The dynamic resource's front door for StoredFolder kept as one resource (`StoredFolder` with
 * `oneResource: true`): what Pulumi's dynamic-provider host calls, turned into typed requests for
 * the folder core — the same core the plugin's `tuskr:index:StoredFolder` runs. As for
 * StoredFile, the resource passes its URN and the names of its secret inputs as inputs of its own.
 */

type Props = Record<string, unknown>;

const URN_KEY = "__urn";
const SECRETS_KEY = "__secretInputs";
const PROVIDER_KEY = "__provider";

function requestOf(news: Props): StoredFolderRequest & { carried: Props } {
  const { [URN_KEY]: urn, [SECRETS_KEY]: secrets, [PROVIDER_KEY]: _provider, ...inputs } = news ?? {};
  const secretInputs = Array.isArray(secrets) ? secrets.filter((s): s is string => typeof s === "string") : [];
  const carried: Props = {};
  if (typeof urn === "string") carried[URN_KEY] = urn;
  if (Array.isArray(secrets)) carried[SECRETS_KEY] = secrets;
  return { inputs, urn: typeof urn === "string" ? urn : undefined, secretInputs, carried };
}

const stateOf = (props: Props): StoredFolderState => {
  const parsed = StoredFolderStateSchema.safeParse(props);
  return parsed.success ? parsed.data : {};
};

/** A partial failure records what the engine stores with a dynamic resource's state: its provider. */
function withProvider(news: Props): (error: unknown) => never {
  return (error) => {
    const e = error as { properties?: Props };
    if (e && isPlainObject(e.properties)) e.properties = { ...e.properties, [PROVIDER_KEY]: news[PROVIDER_KEY] };
    throw error;
  };
}

class StoredFolderProvider implements pulumi.dynamic.ResourceProvider {
  private readonly files: StoredFileCore;
  private readonly core: StoredFolderCore;

  constructor(clientOptions: Partial<TuskrClientOptions> = {}, log: ProviderLog = (line) => console.log(line)) {
    this.files = new StoredFileCore(clientOptions, log);
    this.core = new StoredFolderCore(this.files, log);
  }

  async configure(req: { config: ConfigSource } | undefined): Promise<void> {
    this.files.configure(req?.config);
  }

  async check(olds: Props, news: Props): Promise<pulumi.dynamic.CheckResult> {
    const { inputs, secretInputs, carried, urn } = requestOf(news);
    const checked = this.core.check(olds, inputs, secretInputs, urn);
    return { inputs: { ...checked.inputs, ...carried }, failures: checked.failures };
  }

  async diff(id: string, olds: Props, news: Props): Promise<pulumi.dynamic.DiffResult> {
    const { changes, replaces, deleteBeforeReplace } = this.core.diff(id, stateOf(olds), requestOf(news));
    return { changes, replaces, deleteBeforeReplace };
  }

  async create(news: Props): Promise<pulumi.dynamic.CreateResult> {
    const { id, state } = await this.core.create(requestOf(news)).catch(withProvider(news));
    return { id, outs: state };
  }

  async read(id: string, props: Props): Promise<pulumi.dynamic.ReadResult> {
    const { id: found, state, inputs } = await this.core.read(id, stateOf(props));
    return found === undefined || state === undefined ? {} : { id: found, props: state, inputs };
  }

  async update(id: string, olds: Props, news: Props): Promise<pulumi.dynamic.UpdateResult> {
    return { outs: await this.core.update(id, stateOf(olds), requestOf(news)).catch(withProvider(news)) };
  }

  /** Blobs cannot be deleted through the API: the files keep their periods, and no request is sent. */
  async delete(_id: string, _props: Props): Promise<void> {}
}

/** The provider the serialized stub loads (`pulumi-tuskr/folder-impl`): one per provider process. */
export const storedFolderProvider = new StoredFolderProvider();
