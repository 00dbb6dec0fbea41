import { HEADER_LAST_EVENT_ID } from '@resumewatch/wire';
import type { FetchLike } from '../mcp-http-client.js';
import { recordingFetch } from './recording-fetch.js';
import type { RecordedRequest } from './recording-fetch.js';
import { sleep } from './wire-helpers.js';

/** The MCP clients a scenario can run with where its steps allow. */
import type { ScenarioSummary } from './summary.js';

export const SCENARIO_CLIENTS = ['raw', 'sdk', 'sdk-v2'] as const;
/**
 * - `raw`: the lab's hand-written client (`McpHttpSession`), every step explicit.
 * - `sdk`: the unmodified SDK 1.x `Client` + `StreamableHTTPClientTransport` (`@modelcontextprotocol/sdk` 1.32.2).
 * - `sdk-v2`: the unmodified v2 `Client` + `StreamableHTTPClientTransport` (`@modelcontextprotocol/client` 2.4.0).
 */
export type ScenarioClient = (typeof SCENARIO_CLIENTS)[number];
export type SdkClientKind = Exclude<ScenarioClient, 'raw'>;

export function isScenarioClient(name: string): name is ScenarioClient {
  return (SCENARIO_CLIENTS as readonly string[]).includes(name);
}

interface SdkCallOptions {
  signal?: AbortSignal;
  onprogress?: (progress: { progress: number }) => void;
  /**
   * The call's own timeout (ms; the SDKs' default is 60 s): when it passes, the SDK gives up the call
   * (1.x sends `notifications/cancelled`; a 2026-07-28 v2 client closes its stream) and rejects it.
   */
  timeout?: number;
}

/** What a tool call resolves to, as far as the scenarios read it. */
type SdkToolResult = { content?: Array<{ type: string; text?: string }> };

/** One SDK client session, the same surface for both SDK generations. */
export interface SdkSession {
  readonly kind: SdkClientKind;
  /** Every request the client sent and what came back, recorded without changing it. */
  readonly log: RecordedRequest[];
  /** Errors the client reported through `onerror` (bounded). */
  readonly errors: string[];
  sessionId(): string | undefined;
  /** The protocol version the client negotiated (2026-07-28 for a v2 client in the new era). */
  protocolVersion(): string | undefined;
  callTool(name: string, args: Record<string, unknown>, options?: SdkCallOptions): Promise<SdkToolResult>;
  /** DELETE the session. */
  terminate(): Promise<void>;
  /** Close the client and its transport (aborts every open request, sends nothing). */
  close(): Promise<void>;
}

export interface SdkSessionOptions {
  /** Awaited before every GET that carries Last-Event-ID leaves the client (e.g. until the server saw the drop). */
  beforeResume?: () => Promise<void>;
  /**
   * v2 only: `legacy` (the SDK's default: the session era's initialize, as a 1.x client) or `auto`
   * (probe with `server/discover`, 2026-07-28 when the server offers it, else the session era).
   */
  negotiation?: 'legacy' | 'auto';
  /** v2 only: declare form elicitation and accept every elicitation with this content (a user who says yes). */
  acceptElicitation?: Record<string, string | number | boolean | string[]>;
}

/** A fetch that holds resumes until `beforeResume` settles; everything else passes straight through. */
function gatedFetch(inner: FetchLike, beforeResume: (() => Promise<void>) | undefined): FetchLike {
  if (!beforeResume) return inner;
  return async (input, init) => {
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    if ((init?.method ?? 'GET') === 'GET' && headers.has(HEADER_LAST_EVENT_ID)) await beforeResume();
    return inner(input, init);
  };
}

/**
 * Connects an unmodified SDK client (1.x or v2) to `url`; all its traffic goes through `fetch`,
 * recorded. The SDKs are imported on demand so that importing the lab does not load them.
 */
export async function connectSdkSession(
  kind: SdkClientKind,
  url: string,
  fetch: FetchLike,
  name: string,
  options: SdkSessionOptions = {},
): Promise<SdkSession> {
  const log: RecordedRequest[] = [];
  const errors: string[] = [];
  const clientFetch = gatedFetch(recordingFetch(fetch, log), options.beforeResume);
  const info = { name: `resumewatch-lab-${name}`, version: '0.1.0' };
  const onerror = (error: Error): void => {
    // Bounded: a replayed `data: {}` makes the SDKs report a long schema error per event.
    if (errors.length < 50) errors.push(error.message.length > 200 ? `${error.message.slice(0, 200)}…` : error.message);
  };
  // Either generation's client and transport, connected, behind the one session surface; only callTool's arguments differ.
  const connected = async <T extends { readonly sessionId: string | undefined; terminateSession(): Promise<void> }>(
    transport: T,
    client: { onerror?: (error: Error) => void; connect(transport: NoInfer<T>): Promise<void>; close(): Promise<void> },
    callTool: SdkSession['callTool'],
    protocolVersion: () => string | undefined,
  ): Promise<SdkSession> => {
    client.onerror = onerror;
    await client.connect(transport);
    return {
      kind,
      log,
      errors,
      sessionId: () => transport.sessionId,
      protocolVersion,
      callTool,
      terminate: () => transport.terminateSession(),
      close: () => client.close(),
    };
  };
  if (kind === 'sdk') {
    const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    ]);
    const client = new Client(info);
    const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: clientFetch });
    return connected(
      transport,
      client,
      (tool, args, call = {}) =>
        client.callTool({ name: tool, arguments: args }, undefined, call) as Promise<SdkToolResult>,
      () => transport.protocolVersion,
    );
  }
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const accept = options.acceptElicitation;
  const client = new Client(info, {
    ...(options.negotiation ? { versionNegotiation: { mode: options.negotiation } } : {}),
    ...(accept ? { capabilities: { elicitation: { form: {} } } } : {}),
  });
  if (accept) client.setRequestHandler('elicitation/create', () => ({ action: 'accept', content: accept }));
  return connected(
    new StreamableHTTPClientTransport(new URL(url), { fetch: clientFetch }),
    client,
    (tool, args, call = {}) => client.callTool({ name: tool, arguments: args }, call) as Promise<SdkToolResult>,
    () => client.getNegotiatedProtocolVersion(),
  );
}

/** The recorded POST of a tool call, by tool name. */
export function toolCallPost(log: RecordedRequest[], tool: string): RecordedRequest | undefined {
  return log.find((entry) => entry.method === 'POST' && entry.rpc === `tools/call ${tool}`);
}

/** GETs that carried Last-Event-ID, in order. */
export function resumesIn(log: RecordedRequest[]): RecordedRequest[] {
  return log.filter((entry) => entry.method === 'GET' && entry.lastEventId !== undefined);
}

/** Responses to JSON-RPC request `rpcId` in the log, with the index of the HTTP response that carried each. */
export function responsesTo(
  log: RecordedRequest[],
  rpcId: unknown,
): Array<{ seq: number; eventId: string | undefined; text: string | undefined }> {
  return log.flatMap((entry) =>
    entry.responses
      .filter((response) => response.rpcId === rpcId)
      .map((response) => ({ seq: entry.seq, eventId: response.eventId, text: response.text })),
  );
}

/**
 * Responses per JSON-RPC request id, over every HTTP response in the log; the handshake's excluded
 * (initialize, or the 2026-07-28 server/discover probe).
 */
/**
 * Ends an SDK session whose scenario made one `tools/call` of `tool` across a cut, and reads its log: the
 * call's POST and the resumes, and the summary's counts (`ScenarioSummary`'s delivery fields).
 */
export async function endCutCall(
  session: SdkSession,
  tool: string,
): Promise<{
  post: RecordedRequest | undefined;
  resumes: RecordedRequest[];
  counts: Pick<
    ScenarioSummary,
    | 'sessionId'
    | 'terminalDeliveries'
    | 'distinctTerminalStreams'
    | 'reconnects'
    | 'resumeStatuses'
    | 'resultsPerRequest'
  >;
}> {
  const post = toolCallPost(session.log, tool);
  const resumes = resumesIn(session.log);
  const terminals = responsesTo(session.log, post?.rpcId);
  const sessionId = session.sessionId();
  await session.terminate().catch(() => undefined);
  await session.close();
  return {
    post,
    resumes,
    counts: {
      sessionId,
      terminalDeliveries: terminals.length,
      distinctTerminalStreams: new Set(terminals.map((terminal) => terminal.seq)).size,
      reconnects: resumes.length,
      resumeStatuses: resumes.map((entry) => entry.status ?? 0),
      resultsPerRequest: responsesPerRequest(session.log),
    },
  };
}

export function responsesPerRequest(log: RecordedRequest[]): Record<string, number> {
  const handshake = new Set(
    log.filter((entry) => entry.rpc === 'initialize' || entry.rpc === 'server/discover').map((entry) => entry.rpcId),
  );
  const counts: Record<string, number> = {};
  for (const entry of log)
    for (const response of entry.responses)
      if (!handshake.has(response.rpcId as string | number | undefined))
        counts[String(response.rpcId)] = (counts[String(response.rpcId)] ?? 0) + 1;
  return counts;
}

/** Waits (bounded) until `done()` holds; the SDK clients reconnect on their own timers. */
export async function waitUntil(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() >= deadline) return false;
    await sleep(20);
  }
  return true;
}
