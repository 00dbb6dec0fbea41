import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import type { FetchLike } from '@resumewatch/wire';
import { connectSdkClient, fastReconnection } from './sdk-client.js';

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

/** Reconnects of the peer tests: more in a row than connectSdkClient's default, as a cut stream may be refused a few times. */
const MAX_RETRIES = 5;

const textOf = (result: unknown): string =>
  ((result as { content?: { text?: string }[] }).content ?? []).map((c) => c.text ?? '').join('');

/** A call's options: every update counted, the signal passed on, a deadline well past the test's. */
type CallOptions = { onprogress: (p: { progress: number }) => void; signal?: AbortSignal; timeout: number };

/** Connects one of the two clients over Streamable HTTP through `fetch`. */
export async function connectClient(kind: ClientKind, url: string, fetch: FetchLike | undefined): Promise<AnyClient> {
  const progress: number[] = [];
  const options = (signal?: AbortSignal): CallOptions => ({
    onprogress: (p) => void progress.push(p.progress),
    signal,
    timeout: 30_000,
  });
  // Either generation's connected client and transport; only callTool's arguments differ.
  const anyClient = (
    transport: { readonly sessionId?: string; terminateSession(): Promise<void> },
    client: { close(): Promise<void> },
    errors: unknown[],
    callTool: (name: string, args: Record<string, unknown>, options: CallOptions) => Promise<unknown>,
  ): AnyClient => ({
    kind,
    sessionId: transport.sessionId!,
    errors,
    progress,
    call: async (name, args, signal) => textOf(await callTool(name, args, options(signal))),
    terminate: async () => {
      await transport.terminateSession();
      await client.close();
    },
    close: () => client.close(),
  });
  if (kind === 'sdk-v1') {
    const { client, transport, errors } = await connectSdkClient(url, fetch, MAX_RETRIES);
    return anyClient(transport, client, errors, (name, args, call) =>
      client.callTool({ name, arguments: args }, undefined, call),
    );
  }
  const transport = new TransportV2(new URL(url), {
    ...(fetch ? { fetch } : {}),
    reconnectionOptions: fastReconnection(MAX_RETRIES),
  });
  const client = new ClientV2({ name: 'peer-test', version: '2.0.0' });
  const errors: unknown[] = [];
  client.onerror = (e) => void errors.push(e);
  await client.connect(transport);
  return anyClient(transport, client, errors, (name, args, call) => client.callTool({ name, arguments: args }, call));
}
