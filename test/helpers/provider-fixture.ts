import { EMULATOR_DEFAULT_API_KEY } from "../../emulator";
import type { TuskrClientOptions } from "../../provider/client/client";
import { StoredFileProvider } from "../../provider/dynamic/stored-file-provider";

/**
 * A StoredFileProvider as the engine leaves it after `configure`: pointed at `service` (an
 * emulator, a hostile server) with the emulator's key, plus any other stack config
 * (`{ "tuskr:epochSeconds": "1" }`). `clientOptions` go to the client (retry counters, fast backoff).
 */
export async function configuredProvider(
  service: { url: string },
  config: Record<string, string> = {},
  clientOptions: Partial<TuskrClientOptions> = {},
): Promise<StoredFileProvider> {
  const provider = new StoredFileProvider(clientOptions);
  await configureProvider(provider, service, config);
  return provider;
}

/** Configures an existing provider again (a new key, another service), as a new `configure` call does. */
export async function configureProvider(provider: StoredFileProvider, service: { url: string }, config: Record<string, string> = {}): Promise<void> {
  const all: Record<string, string> = { "tuskr:apiKey": EMULATOR_DEFAULT_API_KEY, "tuskr:baseUrl": service.url, ...config };
  await provider.configure({ config: { get: (k: string) => all[k] } });
}
