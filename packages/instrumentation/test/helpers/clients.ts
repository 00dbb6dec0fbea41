import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@resumewatch/wire';

/** The SDK 1.x client (`@modelcontextprotocol/sdk` 1.32.2) or the v2 client (`@modelcontextprotocol/client` 2.4.0). */
export type ClientKind = 'sdk-v1' | 'client-v2';
export const CLIENT_KINDS: readonly ClientKind[] = ['sdk-v1', 'client-v2'];

export interface AnyClient {
  readonly kind: ClientKind;
  readonly sessionId: string;
  /** Errors the client reported through `onerror`. */
  readonly errors: unknown[];
  /** Calls a tool with a progress handler; resolves with the text of its result. */
  call(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<string>;
  /** Progress updates received, by order. */
  readonly progress: number[];
  /** DELETE the session, then close. */
  terminate(): Promise<void>;
  close(): Promise<void>;
}

const reconnection = { initialReconnectionDelay: 20, maxReconnectionDelay: 100, reconnectionDelayGrowFactor: 1.5, maxRetries: 5 };

const textOf = (result: unknown): string =>
  ((result as { content?: { text?: string }[] }).content ?? []).map((c) => c.text ?? '').join('');

/** Connects one of the two clients over Streamable HTTP through `fetch`. */
export async function connectClient(kind: ClientKind, url: string, fetch: FetchLike | undefined): Promise<AnyClient> {
  const errors: unknown[] = [];
  const progress: number[] = [];
  const onprogress = (p: { progress: number }) => void progress.push(p.progress);
  if (kind === 'sdk-v1') {
    const transport = new StreamableHTTPClientTransport(new URL(url), { ...(fetch ? { fetch } : {}), reconnectionOptions: reconnection });
    const client = new Client({ name: 'peer-test', version: '1.0.0' });
    client.onerror = (e) => void errors.push(e);
    await client.connect(transport);
    return {
      kind,
      sessionId: transport.sessionId!,
      errors,
      progress,
      call: async (name, args, signal) => textOf(await client.callTool({ name, arguments: args }, undefined, { onprogress, signal, timeout: 30_000 })),
      terminate: async () => {
        await transport.terminateSession();
        await client.close();
      },
      close: () => client.close(),
    };
  }
  const transport = new TransportV2(new URL(url), { ...(fetch ? { fetch } : {}), reconnectionOptions: reconnection });
  const client = new ClientV2({ name: 'peer-test', version: '2.0.0' });
  client.onerror = (e) => void errors.push(e);
  await client.connect(transport);
  return {
    kind,
    sessionId: transport.sessionId!,
    errors,
    progress,
    call: async (name, args, signal) => textOf(await client.callTool({ name, arguments: args }, { onprogress, signal, timeout: 30_000 })),
    terminate: async () => {
      await transport.terminateSession();
      await client.close();
    },
    close: () => client.close(),
  };
}
