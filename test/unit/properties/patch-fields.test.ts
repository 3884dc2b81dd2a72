import { describe, expect, it } from "vitest";
import { PATCH_FIELDS } from "../../../api";
import { GetFileResultSchema } from "../../../provider/file/get-file";
import { StoredFileInputsSchema, StoredFileStateSchema } from "../../../provider/file/schema";
import { FILE_FIELDS } from "../../../provider/folder/schema";
import { ReceivedFileSchema } from "../../../provider/client/wire";

/**
 * A field Update File can change is one StoredFile declares, records, reads back and getFile
 * returns, and one a folder's file may declare: a field added to PATCH_FIELDS and missed by any
 * of them would be dropped without a word.
 */
describe("every PATCH field reaches every place that carries a file's fields", () => {
  it.each(PATCH_FIELDS)("%s", (field) => {
    expect(Object.keys(StoredFileInputsSchema.shape)).toContain(field);
    expect(Object.keys(StoredFileStateSchema.shape)).toContain(field);
    expect(Object.keys(ReceivedFileSchema.out.shape)).toContain(field);
    expect(Object.keys(GetFileResultSchema.shape)).toContain(field);
    expect(FILE_FIELDS as readonly string[]).toContain(field);
  });
});
