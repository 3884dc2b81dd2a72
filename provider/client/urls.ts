import { blobIdProblem, filePath as contractPath } from "../../api";
import { TuskrApiError } from "./errors";

/** Path of a file's route, after the contract's blobId rule (refused as BAD_REQUEST, before any request). */
export function filePath(blobId: string, route: "file" | "renew" = "file"): string {
  assertSafeBlobId(blobId);
  return contractPath(blobId, route);
}

export function assertSafeBlobId(blobId: string): void {
  const problem = blobIdProblem(blobId);
  if (problem) throw new TuskrApiError({ code: "BAD_REQUEST", message: `blobId ${problem}`, retryable: false });
}

/** Why a base URL may not carry the key, or undefined. Plain http is for loopback only, unless allowed. */
export function insecureBaseUrlProblem(baseUrl: string, allowInsecureHttp = false): string | undefined {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return `${JSON.stringify(baseUrl)} is not a URL`;
  }
  if (url.protocol === "https:") return undefined;
  if (url.protocol !== "http:") return `${url.protocol} is not http(s)`;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const loopback = host === "localhost" || host === "::1" || /^127(\.\d{1,3}){3}$/.test(host);
  if (loopback || allowInsecureHttp) return undefined;
  return (
    `${url.origin} is plain http to a host other than this machine: the API key would be sent in clear. ` +
    "Use https, or set tuskr:allowInsecureHttp to true if this network is trusted"
  );
}

/** The key as a header carries it: spaces or a line break around it (a key read from a file) are not part of it. */
export const headerKey = (apiKey: string): string => apiKey.trim();

/** Why the key cannot be sent in a header, or undefined; never says the key. */
export function apiKeyProblem(apiKey: string): string | undefined {
  const key = headerKey(apiKey);
  if (key === "") return "is blank: set the Tuskr API key as it was issued";
  return /^[\t\x20-\x7e]*$/.test(key)
    ? undefined
    : "holds a control character or one past ASCII, which no HTTP header carries: set the key again as it was issued";
}
