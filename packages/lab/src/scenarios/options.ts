import type { FetchLike } from '../mcp-http-client.js';

export interface ScenarioOptions {
  /** The lab server's MCP endpoint, e.g. http://127.0.0.1:P/mcp */
  serverUrl: string;
  /** The lab's control endpoint. Default: /control on the server's origin. */
  controlUrl?: string;
  /** Every MCP request of the scenario goes through this fetch. Default globalThis.fetch. */
  fetch?: FetchLike;
  /** Safety cap on reconnects in looping scenarios. Default 20. */
  maxReconnects?: number;
}

export interface ResolvedScenarioOptions {
  serverUrl: string;
  controlUrl: string;
  fetch: FetchLike;
  maxReconnects: number;
}

export function resolveOptions(options: ScenarioOptions): ResolvedScenarioOptions {
  return {
    serverUrl: options.serverUrl,
    controlUrl: options.controlUrl ?? new URL('/control', options.serverUrl).toString(),
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    maxReconnects: options.maxReconnects ?? 20,
  };
}
