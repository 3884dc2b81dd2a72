import { describe, expect, it } from "vitest";
import { PATCH_FIELDS, type PatchField } from "../../../api";
import { getFile, patchFile, uploadFile, useEmulator } from "../../helpers/emulator";

/**
 * Every field Update File can change round-trips through the emulator: a field added to
 * PATCH_FIELDS that the emulator does not apply would be accepted and dropped, and every later
 * preview would plan the same PATCH again. The sample table makes the compiler ask for each one.
 */

const SAMPLE: Record<PatchField, unknown> = { name: "renamed.txt", tag: "patched", metadata: { k: "v", n: [1, 2] } };

const emulator = useEmulator();

describe("Update File: every PATCH field", () => {
  it.each(PATCH_FIELDS)("%s is applied and read back", async (field) => {
    const file = (await uploadFile(emulator(), { content: `patch ${field}`, filename: "f.txt" })).body;
    expect((await patchFile(emulator(), file.blob_id, { [field]: SAMPLE[field] })).status).toBe(200);
    expect((await getFile(emulator(), file.blob_id)).body[field]).toEqual(SAMPLE[field]);
  });
});
