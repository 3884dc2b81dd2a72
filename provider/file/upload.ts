import type { TuskrClient } from "../client/client";
import { isTuskrApiError } from "../client/errors";
import { type Notice, warning } from "../engine/notice";
import { uploadFormEpochs } from "./plan";
import { type EpochLearner, type Start, upload } from "./purchases";
import type { DeclaredInputs } from "./schema";
import { type ContentSnapshot, type WireAsset, snapshotContent, sourceFilename, uploadContentType } from "./source";

/**
 * A `source`'s upload as create sends it: the content read as it is now, its form (name, tag,
 * type, epochs) from the declared inputs, and what to do when the bytes are not those the engine
 * hashed at preview.
 */

/**
 * Uploads the content as it is now; one the engine did not hash is refused when only what was
 * previewed may be sent (a folder's entries, where it could turn into another entry's bytes).
 */
export async function uploadSource(
  client: TuskrClient,
  asset: WireAsset,
  inputs: DeclaredInputs,
  { onlyPreviewedContent, owner }: { onlyPreviewedContent?: boolean; owner?: string },
  learner: EpochLearner,
  log: (n: Notice) => void,
): Promise<Start> {
  let start: Start;
  const changedAfterPreview = (now: string) =>
    new Error(
      `${asset.path ?? "the content"} changed after the preview (sha256 ${asset.hash?.slice(0, 12)}… → ${now}): not uploaded; run \`pulumi up\` again to keep what it holds now`,
    );
  const send = (content: ContentSnapshot) => {
    if (asset.hash && asset.hash !== content.hash && onlyPreviewedContent) throw changedAfterPreview(`${content.hash.slice(0, 12)}…`);
    if (asset.hash && asset.hash !== content.hash) {
      log(
        warning(
          `StoredFile (upload of ${asset.path ?? "text"}): the content changed after the engine read it (sha256 ${asset.hash.slice(0, 12)}… → ${content.hash.slice(0, 12)}…): the bytes read now are uploaded and recorded; the next preview compares against them`,
        ),
      );
    }
    const filename = sourceFilename(asset, inputs.name ?? undefined);
    const declaredEpochs = uploadFormEpochs(inputs, learner.clock());
    const tag = typeof inputs.tag === "string" ? inputs.tag : undefined;
    const contentType = uploadContentType(asset, inputs.name, inputs.contentType);
    return upload(client, content, { filename, tag, contentType, declaredEpochs, source: inputs.source, owner }, learner, log);
  };
  let content = await snapshotContent(asset);
  try {
    try {
      start = await send(content);
    } catch (e) {
      // Sent from the file itself, which turned out not to be the content the engine hashed:
      // the upload stopped before its end (nothing stored). The file as it is now is copied and sent.
      if (!(content.unverified && isTuskrApiError(e) && e.code === "CONTENT_CHANGED")) throw e;
      if (onlyPreviewedContent) throw changedAfterPreview("other bytes");
      await content.release();
      content = await snapshotContent(asset, { copy: true });
      start = await send(content);
    }
  } finally {
    await content.release();
  }
  return start;
}
