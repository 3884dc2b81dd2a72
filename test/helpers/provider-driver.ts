type Props = Record<string, unknown>;
/** A provider, or a way to start one for each command: the engine starts a provider process per `pulumi` command. */
type Source<P> = P | (() => Promise<P>);

interface CheckAnswer {
  inputs?: Props;
  failures?: unknown[];
}
interface DiffAnswer {
  changes?: boolean;
  replaces?: string[];
  detailedDiff?: unknown;
}
interface ReadAnswer {
  id?: string;
  props?: Props;
  inputs?: Props;
}

/** A dynamic resource's provider (StoredFileProvider's shape), which the engine reaches through the SDK's dynamic-provider host. */
interface DynamicProvider {
  check(olds: Props, news: Props): Promise<CheckAnswer>;
  diff(id: string, olds: Props, news: Props): Promise<DiffAnswer>;
  create(news: Props): Promise<{ id: string; outs?: Props }>;
  update(id: string, olds: Props, news: Props): Promise<{ outs?: Props }>;
  read(id: string, props: Props): Promise<ReadAnswer>;
  delete(id: string, props: Props): Promise<void>;
}

/** A provider plugin's resource (StoredFolderPlugin's shape): the engine sends the URN with each call, and diff the inputs it recorded. */
interface PluginResource {
  check(urn: string, olds: Props, news: Props): Promise<CheckAnswer>;
  diff(id: string, urn: string, olds: Props, news: Props, oldInputs: Props): Promise<DiffAnswer>;
  create(urn: string, news: Props): Promise<{ id: string; outs?: Props }>;
  update(id: string, urn: string, olds: Props, news: Props): Promise<{ outs?: Props }>;
  read(id: string, urn: string, props: Props): Promise<ReadAnswer>;
}

/** A stack's provider: a dynamic one, or a plugin's resource at `urn` (`{ plugin, urn }`). */
type StackProvider = Source<DynamicProvider> | { plugin: Source<PluginResource>; urn: string };

/** The engine's calls, whichever way it reaches the provider. */
interface Port {
  check(olds: Props, news: Props): Promise<CheckAnswer>;
  diff(id: string, olds: Props, news: Props, oldInputs: Props): Promise<DiffAnswer>;
  create(news: Props): Promise<{ id: string; outs?: Props }>;
  update(id: string, olds: Props, news: Props): Promise<{ outs?: Props }>;
  read(id: string, props: Props): Promise<ReadAnswer>;
  delete(id: string, props: Props): Promise<void>;
}

/** What the engine records of one resource. */
interface EngineResource {
  id: string;
  /** Recorded outputs: what `diff`, `update` and `read` get as olds. */
  state: Props;
  /** Recorded inputs: what `check` gets as olds. */
  inputs: Props;
  /** The last step failed with a partial state: the next `up` updates it whatever diff says. */
  initErrors: boolean;
}

/** One step the engine took on one resource: data the suites assert on, where their own drivers once asserted inside. */
export interface StepRecord {
  name: string;
  /** `replace`: diff named replaces, so a new resource was created in its place and the old one deleted. */
  op: "create" | "update" | "same" | "replace" | "delete" | "read" | "read-gone";
  outcome: "ok" | "noop" | "partial" | "failed";
  error?: string;
  /** The failure's own typed field: requests the client held back (the service seemed to refuse everyone), none sent. */
  notSent?: boolean;
  /** What check refused ([] when it passed); absent for a refresh's read and a delete. */
  failures?: unknown[];
  /** What diff said, for a resource recorded before. */
  diff?: DiffAnswer;
}

/** One command's steps in order; `done` unless a step failed, which stops the run as it stops the engine. */
interface Run {
  steps: StepRecord[];
  done: boolean;
}

const viaWire = <T>(v: T): T => (v === undefined ? v : JSON.parse(JSON.stringify(v)));

/** The serialized provider the SDK's dynamic resource adds to its inputs: the provider must take it and ignore it. */
const PROVIDER_KEY = "__provider";
const STUB = "stub-provider-text";

function withoutProvider(props: Props): Props;
function withoutProvider(props: Props | undefined): Props | undefined;
function withoutProvider(props: Props | undefined): Props | undefined {
  if (!props) return props;
  const { [PROVIDER_KEY]: _, ...rest } = props;
  return rest;
}

/** The dynamic-provider host: the serialized provider goes in with the inputs and is kept out of what the stack records. */
function dynamicPort(provider: DynamicProvider): Port {
  const withStub = (news: Props) => ({ ...news, [PROVIDER_KEY]: STUB });
  const partial = (e: unknown): never => {
    const err = e as { properties?: Props };
    if (err && typeof err.properties === "object") err.properties = withoutProvider(err.properties);
    throw e;
  };
  return {
    check: async (olds, news) => {
      const checked = await provider.check(olds, withStub(news));
      return { ...checked, inputs: withoutProvider(checked.inputs) };
    },
    diff: (id, olds, news) => provider.diff(id, olds, withStub(news)),
    create: async (news) => {
      const { id, outs } = await provider.create(withStub(news)).catch(partial);
      return { id, outs: withoutProvider(outs) };
    },
    update: async (id, olds, news) => {
      const { outs } = await provider.update(id, olds, withStub(news)).catch(partial);
      return { outs: withoutProvider(outs) };
    },
    read: async (id, props) => {
      const read = await provider.read(id, props);
      return { ...read, props: withoutProvider(read.props), inputs: withoutProvider(read.inputs) };
    },
    delete: (id, props) => provider.delete(id, props),
  };
}

/** A plugin's resource: the URN with each call. Deleting one sends nothing (the plugin's delete is a no-op for every resource). */
function pluginPort(resource: PluginResource, urn: string): Port {
  return {
    check: (olds, news) => resource.check(urn, olds, news),
    diff: (id, olds, news, oldInputs) => resource.diff(id, urn, olds, news, oldInputs),
    create: (news) => resource.create(urn, news),
    update: (id, olds, news) => resource.update(id, urn, olds, news),
    read: (id, props) => resource.read(id, urn, props),
    delete: async () => {},
  };
}

async function started<P>(source: Source<P>): Promise<P> {
  return typeof source === "function" ? (source as () => Promise<P>)() : source;
}

/**
 * A stack of named resources driven as the Pulumi engine drives them, in-process: the suites'
 * one model of the engine, so each asserts on the same steps. Everything crossing the engine
 * goes through JSON, as it would through gRPC.
 */
export class EngineStack {
  private readonly resources = new Map<string, EngineResource>();

  constructor(private readonly provider: StackProvider) {}

  /** What the stack records for `name` (a copy). */
  get(name: string): EngineResource | undefined {
    return viaWire(this.resources.get(name));
  }

  /** Every recorded resource by name, in the order first recorded (copies). */
  entries(): Array<[string, EngineResource]> {
    return viaWire([...this.resources]);
  }

  /** Records a resource as something other than this stack's runs wrote it: a state an earlier release wrote, a partial failure. */
  record(name: string, resource: Omit<EngineResource, "initErrors"> & { initErrors?: boolean }): void {
    this.resources.set(name, viaWire({ initErrors: false, ...resource }));
  }

  /** A copy of the records under another provider (one configured otherwise): runs on either leave the other's records alone. */
  fork(provider: StackProvider): EngineStack {
    const copy = new EngineStack(provider);
    for (const [name, r] of this.resources) copy.resources.set(name, viaWire(r));
    return copy;
  }

  /** `pulumi refresh`. */
  async refresh(): Promise<Run> {
    const steps: StepRecord[] = [];
    await this.read(await this.port(), steps);
    return { steps, done: true };
  }

  /**
   * `pulumi up` of what the program declares, each resource's inputs by name, in order
   * (`refresh`: `pulumi up --refresh`, one provider process for both). A resource recorded but
   * no longer declared is deleted once every declared one went through. `concurrent`: every
   * declared resource stepped at once, as the engine steps those that do not depend on each other
   * (in no order it keeps), each through to its end.
   */
  async up(declared: Map<string, Props> | Record<string, Props>, options: { refresh?: boolean; concurrent?: boolean } = {}): Promise<Run> {
    const port = await this.port();
    const steps: StepRecord[] = [];
    if (options.refresh) await this.read(port, steps);
    const program = declared instanceof Map ? declared : new Map(Object.entries(declared));
    const failed = (step: StepRecord) => step.outcome === "failed" || step.outcome === "partial";
    if (options.concurrent) {
      steps.push(...(await Promise.all([...program].map(([name, news]) => this.apply(port, name, news)))));
      if (steps.some(failed)) return { steps, done: false };
    }
    for (const [name, news] of options.concurrent ? [] : program) {
      const step = await this.apply(port, name, news);
      steps.push(step);
      if (failed(step)) return { steps, done: false };
    }
    for (const [name, r] of [...this.resources]) {
      if (program.has(name)) continue;
      await port.delete(r.id, viaWire(r.state));
      this.resources.delete(name);
      steps.push({ name, op: "delete", outcome: "ok" });
    }
    return { steps, done: true };
  }

  /**
   * `pulumi up` again after each failed one, at most `maxRuns` times: what a user (or CI) does, with
   * nothing changed in between. With `holdMs`, a run whose failures were all requests the client
   * held back (typed `notSent`: the service seemed to refuse everyone) is what a user reruns "once
   * it answers": it waits that long and does not count, up to `maxRuns` such runs more.
   */
  async upUntilDone(
    declared: Map<string, Props> | Record<string, Props>,
    maxRuns: number,
    options: { holdMs?: number } = {},
  ): Promise<{ runs: Run[]; done: boolean }> {
    const runs: Run[] = [];
    let held = 0;
    for (let counted = 0; counted < maxRuns; ) {
      const run = await this.up(declared);
      runs.push(run);
      if (run.done) return { runs, done: true };
      const failures = run.steps.filter((s) => s.error !== undefined);
      if (options.holdMs !== undefined && held < maxRuns && failures.length > 0 && failures.every((s) => s.notSent === true)) {
        held++;
        await new Promise((r) => setTimeout(r, options.holdMs));
        continue;
      }
      counted++;
    }
    return { runs, done: false };
  }

  private async port(): Promise<Port> {
    const p = this.provider;
    if (typeof p === "object" && "plugin" in p) return pluginPort(await started(p.plugin), p.urn);
    return dynamicPort(await started(p));
  }

  /** A read that finds the resource takes its state, and the inputs it hands back, and clears init errors (as the engine's refresh does); a gone one drops out. */
  private async read(port: Port, steps: StepRecord[]): Promise<void> {
    for (const [name, r] of [...this.resources]) {
      const read = viaWire(await port.read(r.id, viaWire(r.state)));
      if (!read.props) {
        this.resources.delete(name);
        steps.push({ name, op: "read-gone", outcome: "ok" });
        continue;
      }
      this.resources.set(name, { id: read.id ?? r.id, state: read.props, inputs: read.inputs ?? r.inputs, initErrors: false });
      steps.push({ name, op: "read", outcome: "ok" });
    }
  }

  /**
   * One declared resource: check, then create (none recorded), or diff and then create anew
   * (replaces), update (changes, or init errors: the engine retries a partial one whatever diff
   * says) or nothing. A failed create or update with `id` and `properties` is a partial failure:
   * its properties are recorded, with init errors; any other leaves the record as it was. An
   * error from check or diff is the test's: it is thrown.
   */
  private async apply(port: Port, name: string, declared: Props): Promise<StepRecord> {
    const before = this.resources.get(name);
    const checked = viaWire(await port.check(viaWire(before?.inputs ?? {}), viaWire(declared)));
    const failures = checked.failures ?? [];
    if (failures.length > 0) return { name, op: before ? "update" : "create", outcome: "failed", error: `check: ${JSON.stringify(failures)}`, failures };
    const inputs = checked.inputs ?? {};
    const record = (id: string, outs: Props | undefined, initErrors: boolean) =>
      this.resources.set(name, { id, state: viaWire(outs ?? {}), inputs: viaWire(inputs), initErrors });
    const failed = (op: StepRecord["op"], e: unknown, diff?: DiffAnswer): StepRecord => {
      const err = e as { id?: unknown; properties?: Props; message?: string; notSent?: unknown };
      const error = String(err?.message ?? e);
      const notSent = err?.notSent === true ? { notSent: true } : {};
      if (err && typeof err.id === "string" && err.id !== "" && err.properties) {
        record(err.id, err.properties, true);
        return { name, op, outcome: "partial", error, ...notSent, failures, diff };
      }
      return { name, op, outcome: "failed", error, ...notSent, failures, diff };
    };

    if (!before) {
      try {
        const { id, outs } = await port.create(viaWire(inputs));
        record(id, outs, false);
        return { name, op: "create", outcome: "ok", failures };
      } catch (e) {
        return failed("create", e);
      }
    }
    const diff = viaWire(await port.diff(before.id, viaWire(before.state), viaWire(inputs), viaWire(before.inputs)));
    if (diff.replaces && diff.replaces.length > 0) {
      // Created before the old one is deleted (the engine's default), so a failed create leaves the old one recorded.
      try {
        const { id, outs } = await port.create(viaWire(inputs));
        record(id, outs, false);
      } catch (e) {
        return failed("replace", e, diff);
      }
      await port.delete(before.id, viaWire(before.state));
      return { name, op: "replace", outcome: "ok", failures, diff };
    }
    if (!diff.changes && !before.initErrors) {
      this.resources.set(name, { ...before, inputs: viaWire(inputs) });
      return { name, op: "same", outcome: "noop", failures, diff };
    }
    try {
      const { outs } = await port.update(before.id, viaWire(before.state), viaWire(inputs));
      record(before.id, outs, false);
      return { name, op: "update", outcome: "ok", failures, diff };
    } catch (e) {
      return failed("update", e, diff);
    }
  }
}
