// The module the folder's serialized stub loads by package name (`pulumi-tuskr/folder-impl`):
// its exports are the provider's methods themselves.
import { storedFolderProvider } from "./dynamic/stored-folder-provider";

export = storedFolderProvider;
