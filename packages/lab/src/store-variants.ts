/**
 * The event stores a lab server can give its sessions. Every variant is served by every lab server
 * under `/mcp/<variant>`; `/mcp` itself serves `LabServerOptions.store` (default `bounded`).
 * - `bounded`: the lab's correct store (one per session, replays only the cursor's stream, evicts a
 *   finished stream after `finishedStreamReplayLimit` replays).
 * - `never-evict`: the same, but a finished stream is never evicted by replays (the SDK's example
 *   store and the everything server never evict): the seed loop becomes endless. Capacity and TTL
 *   still bound memory.
 * - `replay-all-streams`: one per session; a resume replays every stream of the session after the
 *   cursor (the everything server's store). A server defect.
 * - `shared-by-request-id`: one for all sessions, streams keyed by JSON-RPC request id (the Python
 *   SDK's example store). A server defect: session A's cursor replays session B's events.
 * - `misnames-resumed-stream`: one per session; a resume replays the cursor's stream but names the
 *   resumed stream after its last replayed event (the everything server's store), so what the request
 *   sends afterwards, its result included, goes nowhere. A server defect: the result is lost.
 */
export const LAB_STORE_VARIANTS = [
  'bounded',
  'never-evict',
  'replay-all-streams',
  'shared-by-request-id',
  'misnames-resumed-stream',
] as const;

export type LabStoreVariant = (typeof LAB_STORE_VARIANTS)[number];

export function isLabStoreVariant(name: string): name is LabStoreVariant {
  return (LAB_STORE_VARIANTS as readonly string[]).includes(name);
}

/**
 * The MCP URL of a store variant on the lab server whose MCP endpoint is `serverUrl`
 * (`http://h:p/mcp` → `http://h:p/mcp/never-evict`). A URL that already names a variant has it replaced.
 */
export function storeVariantUrl(serverUrl: string, variant: LabStoreVariant): string {
  const url = new URL(serverUrl);
  const segments = url.pathname.replace(/\/+$/, '').split('/');
  if (isLabStoreVariant(segments.at(-1) ?? '')) segments.pop();
  url.pathname = `${segments.join('/')}/${variant}`;
  return url.toString();
}
