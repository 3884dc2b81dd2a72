import * as pulumi from "@pulumi/pulumi";
import { TuskrClient } from "../client/client";
import { type GetFileResult, readFile } from "../file/get-file";
import { clientOptionsFrom, settingsFrom, settingsProblem } from "../config/settings";
import { inertError } from "../engine/notice";

/** `getFile` for TypeScript programs (the plugin's `tuskr:index:getFile` is its other front door). */

export interface GetFileArgs {
  /** The file's blobId (what its upload returned). */
  blobId: string;
}

/**
 * A file's record, read once with the stack's settings (`tuskr:apiKey`, `tuskr:baseUrl`, … or
 * their environment variables). Runs in the program, at preview and at update alike; writes
 * nothing, and nothing of it is a resource.
 */
export async function getFile(args: GetFileArgs): Promise<GetFileResult> {
  const settings = settingsFrom({ get: (key) => pulumi.runtime.getConfig(key) });
  const problem = settingsProblem(settings);
  if (problem) throw new Error(`getFile: ${problem.message}`);
  const client = new TuskrClient(clientOptionsFrom(settings));
  // Its error quotes the blobId asked for: inert, as the plugin's getFile's is.
  return readFile(client, args?.blobId, { nowMs: Date.now(), epochMs: settings.epochSeconds * 1000 }).catch((e: unknown) => {
    throw inertError(e);
  });
}

/** `getFile` for an input that may not be known yet (another resource's output). */
export function getFileOutput(args: { blobId: pulumi.Input<string> }): pulumi.Output<GetFileResult> {
  return pulumi.output(args.blobId).apply((blobId) => getFile({ blobId }));
}
