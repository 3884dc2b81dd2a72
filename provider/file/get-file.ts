import { z } from "zod";
import { blobIdProblem } from "../../api";
import type { TuskrClient } from "../client/client";
import { isTuskrApiError } from "../client/errors";
import { remainingEpochs } from "./plan";

/**
 * `getFile`: one GET, writing nothing, to use a file another stack keeps without adopting it.
 * Shared by the plugin's `tuskr:index:getFile` and dynamic/get-file.ts, so it loads nothing of the
 * SDK.
 */

/** What getFile returns, once: the plugin's schema and the TypeScript type derive from it. */
export const GetFileResultSchema = z.object({
  blobId: z.string().meta({ description: "The file's blobId, as asked." }),
  name: z.string().nullish().meta({ description: "Its display name." }),
  tag: z.string().nullish().meta({ description: "Its tag." }),
  metadata: z.record(z.string(), z.unknown()).nullish().meta({ description: "Its metadata." }),
  url: z.string().nullish().meta({ description: "Where it is served." }),
  size: z.number().int().nullish().meta({ description: "Size in bytes." }),
  mimeType: z.string().nullish().meta({ description: "Its content type, as the service reports it." }),
  createdAt: z.string().nullish().meta({ description: "When it was uploaded." }),
  expiresAt: z.string().nullish().meta({ description: "End of its paid storage period." }),
  remainingEpochs: z.number().int().nullish().meta({ description: "Whole epochs left, the current one included, as of this read." }),
});
export type GetFileResult = z.infer<typeof GetFileResultSchema>;

/** The read itself, for both front doors: a clear error for a bad, unknown or expired blobId. */
export async function readFile(client: TuskrClient, blobId: unknown, clock: { nowMs: number; epochMs: number }): Promise<GetFileResult> {
  const problem = blobIdProblem(blobId);
  if (problem) throw new Error(`getFile: blobId ${problem}`);
  const id = blobId as string;
  try {
    const file = await client.getFile(id);
    const result = GetFileResultSchema.parse({ ...file, blobId: id, remainingEpochs: remainingEpochs(file.expiresAt, clock) });
    // The metadata as the client took it: the parse rebuilds it by assignment, which drops a key named __proto__.
    return { ...result, metadata: file.metadata };
  } catch (e) {
    if (isTuskrApiError(e) && e.isGone) {
      throw new Error(
        e.status === 410
          ? `getFile: the file with blobId ${JSON.stringify(id)} has expired (its storage period ended)`
          : `getFile: no file with blobId ${JSON.stringify(id)} exists on the service`,
      );
    }
    throw isTuskrApiError(e) ? new Error(`getFile: reading ${JSON.stringify(id)} failed: ${e.message}`) : e;
  }
}
