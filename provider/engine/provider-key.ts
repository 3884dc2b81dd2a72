/**
 * The key under which the SDK's dynamic-provider host carries a dynamic resource's serialized
 * provider, among its inputs and the outputs it returns: never the resource's own value.
 */
export const PROVIDER_KEY = "__provider";
