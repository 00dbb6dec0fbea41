import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@resumewatch/wire';

export interface SdkClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  errors: unknown[];
  close(): Promise<void>;
}

/** Reconnects within milliseconds, so that a test of a dropped stream takes no longer than it must. */
export function fastReconnection(maxRetries: number) {
  return { initialReconnectionDelay: 20, maxReconnectionDelay: 100, reconnectionDelayGrowFactor: 1.5, maxRetries };
}

/**
 * The v1 SDK client over Streamable HTTP, with fast reconnects (`maxRetries` of them in a row), its
 * `onerror` reports collected; the client itself, for tests that call the SDK's own methods.
 */
export async function connectSdkClient(url: string, fetch?: FetchLike, maxRetries = 3): Promise<SdkClient> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    ...(fetch ? { fetch } : {}),
    reconnectionOptions: fastReconnection(maxRetries),
  });
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  const errors: unknown[] = [];
  client.onerror = (error) => void errors.push(error);
  await client.connect(transport);
  return { client, transport, errors, close: () => client.close() };
}
