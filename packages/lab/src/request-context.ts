import { AsyncLocalStorage } from 'node:async_hooks';

/** What the lab server knows about the HTTP request whose handling is running. */
export interface LabRequestContext {
  /** The session the request belongs to (known before the transport runs, except for initialize). */
  sessionId: string | undefined;
  /** The JSON-RPC id of the (first) request in a POST body, as a string; undefined for GET, DELETE, notifications. */
  jsonRpcRequestId: string | undefined;
}

/**
 * The lab runs every `/mcp` request inside this context. The SDK transport stores a POST's events
 * (its priming event, then the tool's notifications and result) from code that descends from the
 * request's handling, so a store can tell which JSON-RPC request a new stream belongs to: the SDK
 * names POST streams with random ids and does not say.
 */
export const labRequestContext = new AsyncLocalStorage<LabRequestContext>();
