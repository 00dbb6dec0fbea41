import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@resumewatch/wire';

export interface SdkClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  errors: unknown[];
  close(): Promise<void>;
}

/** The v1 SDK client over Streamable HTTP, with fast reconnects. */
export async function connectSdkClient(url: string, fetch?: FetchLike): Promise<SdkClient> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    ...(fetch ? { fetch } : {}),
    reconnectionOptions: { initialReconnectionDelay: 20, maxReconnectionDelay: 100, reconnectionDelayGrowFactor: 1.5, maxRetries: 3 },
  });
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  const errors: unknown[] = [];
  client.onerror = (error) => void errors.push(error);
  await client.connect(transport);
  return { client, transport, errors, close: () => client.close() };
}
