import type { FetchLike } from '../mcp-http-client.js';
import type { ScenarioClient } from './sdk-clients.js';

export interface ScenarioOptions {
  /** The lab server's MCP endpoint, e.g. http://127.0.0.1:P/mcp */
  serverUrl: string;
  /** The lab's control endpoint. Default: /control on the server's origin. */
  controlUrl?: string;
  /** Every MCP request of the scenario goes through this fetch. Default globalThis.fetch. */
  fetch?: FetchLike;
  /** Safety cap on reconnects in looping scenarios. Default 20. */
  maxReconnects?: number;
  /**
   * The MCP client: `raw` (default), `sdk` (SDK 1.x) or `sdk-v2`. Scenarios whose steps an SDK client
   * cannot take (the seed loop, the lab's raw protocol checks) only run with `raw` and reject others.
   */
  client?: ScenarioClient;
}

export interface ResolvedScenarioOptions {
  serverUrl: string;
  controlUrl: string;
  fetch: FetchLike;
  maxReconnects: number;
  client: ScenarioClient;
}

export function resolveOptions(options: ScenarioOptions): ResolvedScenarioOptions {
  return {
    serverUrl: options.serverUrl,
    controlUrl: options.controlUrl ?? new URL('/control', options.serverUrl).toString(),
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    maxReconnects: options.maxReconnects ?? 20,
    client: options.client ?? 'raw',
  };
}
