// The module the serialized stub loads by package name (`pulumi-tuskr/impl`): its exports are
// the provider's methods themselves, which keeps every line of the stub in state short.
import { storedFileProvider } from "./dynamic/stored-file-provider";

export = storedFileProvider;
