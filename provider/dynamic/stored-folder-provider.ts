import type * as pulumi from "@pulumi/pulumi";
import { isPlainObject } from "../../api";
import { fromOutputTexts, pathParts, withOutputTexts } from "../folder/entries";
import { reclaimAfter } from "../folder/memory";
import type { ConfigSource } from "../config/settings";
import type { StoredFileCore } from "../file/core";
import { type ProviderLog, inertFailure, noticeLine } from "../engine/notice";
import { requestOf, storedFileProvider, toldOnce, withProvider } from "./stored-file-provider";
import { StoredFolderCore, type StoredFolderRequest, stepDigest } from "../folder/core";
import { folderInputsOf, validatedInputs } from "../folder/inputs";
import { type Manifest, type StoredFolderState, folderStateOf } from "../folder/schema";
import { RESTING, restingFor, restingRecord } from "../folder/resting";

/**
 * The dynamic front door for a one-resource StoredFolder, running the same folder core as the
 * plugin's `tuskr:index:StoredFolder`. As for StoredFile, the URN and secret input names arrive as
 * inputs.
 */

type Props = Record<string, unknown>;

/** The recorded state, from the outputs (their texts read back into the maps the core keeps). */
const stateOf = (props: Props): StoredFolderState => {
  const state = folderStateOf(fromOutputTexts(props));
  // What reading the texts made (their joined, decoded and unzipped copies) goes before the core reads the maps.
  reclaimAfter(isPlainObject(state.blobIds) ? Object.keys(state.blobIds).length : 0);
  return state;
};
/** A request for the core: the folder's inputs as `check` returned them, typed (the URN and secret names split off); given olds, the step's digest. */
const folderRequestOf = (news: Props, olds?: Props): StoredFolderRequest => {
  const { inputs, urn, secretInputs } = requestOf(news);
  return { inputs: folderInputsOf(inputs), urn, secretInputs, ...(olds ? { sent: stepDigest(olds, news) } : {}) };
};
/**
 * The outputs this resource records: the core's state, its maps by path as texts (folder/entries.ts).
 * The state is used up: emptied once its texts are written, since its caller still holds it.
 */
const asRecorded = (state: Props): Props => {
  const recorded = withOutputTexts(state);
  const paths = isPlainObject(state.blobIds) ? Object.keys(state.blobIds).length : 0;
  for (const field of Object.keys(state)) delete state[field];
  // The texts are written: what made them goes before the SDK copies the outputs into its message.
  reclaimAfter(paths);
  return recorded;
};
/**
 * The inputs this resource records: the manifest as texts in parts (`pathParts`). As a map of
 * 100,000 paths it is 100,000 properties that the SDK and the engine each convert, log and store at
 * every step; the engine still shows a change of it path by path (it reads each text as JSON).
 */
const inputsAsRecorded = (inputs: Props): Props => {
  if (!isPlainObject(inputs.manifest)) return inputs;
  const recorded = { ...inputs, manifest: pathParts(inputs.manifest as Manifest) };
  // As for the outputs: what the walk and the judging made goes before the SDK copies the inputs.
  reclaimAfter(Object.keys(inputs.manifest).length);
  return recorded;
};

class StoredFolderProvider implements pulumi.dynamic.ResourceProvider {
  private readonly files: StoredFileCore;
  private readonly core: StoredFolderCore;

  /** @param files the StoredFile core it shares (the dynamic StoredFile's, in the same provider process). */
  constructor(files: StoredFileCore, log: ProviderLog = (notice) => console.log(noticeLine(notice))) {
    this.files = files;
    this.core = new StoredFolderCore(this.files, log);
  }

  async configure(req: { config: ConfigSource } | undefined): Promise<void> {
    this.files.configure(req?.config);
  }

  async check(olds: Props, news: Props): Promise<pulumi.dynamic.CheckResult> {
    const { inputs, secretInputs, carried, urn } = requestOf(news);
    const checked = await toldOnce("check", () => this.core.check(() => folderInputsOf(olds), validatedInputs(inputs, secretInputs), secretInputs, urn));
    return {
      inputs: { ...inputsAsRecorded(checked.inputs), ...carried },
      failures: checked.failures.map(({ property, reason }) => inertFailure({ property, reason })),
    };
  }

  async diff(id: string, olds: Props, news: Props): Promise<pulumi.dynamic.DiffResult> {
    const { changes, replaces, deleteBeforeReplace } = await toldOnce("diff", () => {
      // What the last write found still holds: its entries are not read (folder/resting.ts).
      const resting = restingFor(olds, news);
      if (resting && this.core.rests(resting, requestOf(news).urn)) return { changes: false, replaces: [], deleteBeforeReplace: false };
      return this.core.diff(id, stateOf(olds), folderRequestOf(news, olds));
    });
    return { changes, replaces, deleteBeforeReplace };
  }

  async create(news: Props): Promise<pulumi.dynamic.CreateResult> {
    const req = folderRequestOf(news);
    const { id, state } = await this.core.create(req).catch(withProvider(news, asRecorded));
    return { id, outs: this.written(state, req, news) };
  }

  async read(id: string, props: Props): Promise<pulumi.dynamic.ReadResult> {
    const { id: found, state, inputs } = await toldOnce("read", () => this.core.read(id, stateOf(props)));
    if (found === undefined || state === undefined) return {};
    // The verdict of the last write is kept: the next diff takes it only if the refresh changed nothing.
    const outs = typeof props[RESTING] === "string" ? { ...asRecorded(state), [RESTING]: props[RESTING] } : asRecorded(state);
    return { id: found, props: outs, inputs: inputs && inputsAsRecorded(inputs) };
  }

  async update(id: string, olds: Props, news: Props): Promise<pulumi.dynamic.UpdateResult> {
    const req = folderRequestOf(news, olds);
    return { outs: this.written(await this.core.update(id, () => stateOf(olds), req).catch(withProvider(news, asRecorded)), req, news) };
  }

  /** The outputs a write records, with the verdict the next diff would reach when that is nothing to do (folder/resting.ts). */
  private written(state: StoredFolderState, req: StoredFolderRequest, news: Props): Props {
    const resting = this.core.restingAfter(state, req);
    const outs = asRecorded(state);
    if (resting) outs[RESTING] = restingRecord(resting, outs, news);
    return outs;
  }

  /** Blobs cannot be deleted through the API: the files keep their periods, and no request is sent. */
  async delete(_id: string, _props: Props): Promise<void> {}
}

/** The provider the serialized stub loads (`pulumi-tuskr/folder-impl`): one per provider process. */
export const storedFolderProvider = new StoredFolderProvider(storedFileProvider.core);
