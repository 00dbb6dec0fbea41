import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { HEADER_LAST_EVENT_ID, HEADER_PROTOCOL_VERSION, HEADER_SESSION_ID, readSse } from '@resumewatch/wire';
import type { FetchLike } from '@resumewatch/wire';

export type { FetchLike };

/** The protocol version the lab's raw clients negotiate; from this version on the SDK server sends priming events. */
export const LAB_PROTOCOL_VERSION = '2025-11-25';

export interface StreamEvent {
  /** The event's `id:` (its resume cursor), if it had one. */
  id: string | undefined;
  data: string;
  /** The JSON-RPC message in `data`, when there was one. */
  message: JSONRPCMessage | undefined;
  /** The event's `retry:` field (ms), if it had one (SEP-1699 priming events carry it). */
  retry: number | undefined;
  /** When the client read it (ms since the epoch). */
  at: number;
}

/** One HTTP response of the MCP endpoint as a client saw it. */
export interface StreamRead {
  status: number;
  contentType: string | null;
  events: StreamEvent[];
  /** `clean`: the body ended normally; `error`: the body broke off (cut, reset, abort). */
  end: 'clean' | 'error';
  error: string | undefined;
  /** The body of a response that was not an event stream. */
  body: string | undefined;
}

export interface ReadOptions {
  /** Called with the status once the response headers arrived, before the body is read. */
  onOpen?: (status: number) => void;
  onEvent?: (event: StreamEvent) => void;
  signal?: AbortSignal;
}

export interface ToolCall {
  id: number;
  message: JSONRPCMessage;
}

/** Whether `message` is the response (result or error) to request `id`. */
export function isResponseTo(message: JSONRPCMessage | undefined, id: number | string): boolean {
  return message !== undefined && 'id' in message && message.id === id && ('result' in message || 'error' in message);
}

async function readResponse(response: Response, options: ReadOptions): Promise<StreamRead> {
  const contentType = response.headers.get('content-type');
  const read: StreamRead = {
    status: response.status,
    contentType,
    events: [],
    end: 'clean',
    error: undefined,
    body: undefined,
  };
  options.onOpen?.(response.status);
  try {
    if (response.body && contentType?.includes('text/event-stream')) {
      await readSse(response.body, (sse) => {
        if (!sse.hasData && sse.id === undefined) return;
        let message: JSONRPCMessage | undefined;
        if (sse.data.trim() !== '') {
          try {
            message = JSON.parse(sse.data) as JSONRPCMessage;
          } catch {
            message = undefined;
          }
        }
        const event: StreamEvent = { id: sse.id, data: sse.data, message, retry: sse.retry, at: Date.now() };
        read.events.push(event);
        options.onEvent?.(event);
      });
    } else {
      read.body = await response.text();
    }
  } catch (error) {
    read.end = 'error';
    read.error = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  }
  return read;
}

/**
 * A hand-written MCP Streamable HTTP client: every request goes through the injected `fetch`, so the
 * same scenario runs unchanged through a guard or an instrumentation fetch wrapper.
 */
export class McpHttpSession {
  private nextRequestId = 1;

  private constructor(
    readonly url: string,
    private readonly fetchImpl: FetchLike,
    readonly sessionId: string,
    readonly protocolVersion: string,
  ) {}

  /** POST initialize, then POST notifications/initialized. */
  static async open(
    url: string,
    fetchImpl: FetchLike = globalThis.fetch,
    clientName = 'resumewatch-lab',
  ): Promise<McpHttpSession> {
    const response = await fetchImpl(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: LAB_PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: clientName, version: '0.1.0' },
        },
      }),
    });
    const sessionId = response.headers.get(HEADER_SESSION_ID);
    const read = await readResponse(response, {});
    if (response.status !== 200 || !sessionId) {
      throw new Error(
        `initialize answered ${response.status}${sessionId ? '' : ' without Mcp-Session-Id'}: ${read.body ?? ''}`,
      );
    }
    const result = read.events.find((event) => isResponseTo(event.message, 0))?.message;
    const negotiated =
      result && 'result' in result
        ? String((result.result as { protocolVersion?: unknown }).protocolVersion)
        : LAB_PROTOCOL_VERSION;
    const session = new McpHttpSession(url, fetchImpl, sessionId, negotiated);
    const initialized = await session.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    if (initialized.status !== 202) throw new Error(`notifications/initialized answered ${initialized.status}`);
    return session;
  }

  /** A tools/call request with a progress token, and its id. */
  toolCall(name: string, args: Record<string, unknown> = {}): ToolCall {
    const id = this.nextRequestId++;
    return {
      id,
      message: {
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name, arguments: args, _meta: { progressToken: `progress-${id}` } },
      },
    };
  }

  async post(message: JSONRPCMessage, options: ReadOptions = {}): Promise<StreamRead> {
    const response = await this.fetchImpl(this.url, {
      method: 'POST',
      headers: { ...this.headers(), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(message),
      signal: options.signal,
    });
    return readResponse(response, options);
  }

  /** GET the endpoint with `Last-Event-ID` (a resume), or without it (the standalone stream). */
  async get(lastEventId: string | undefined, options: ReadOptions = {}): Promise<StreamRead> {
    const headers: Record<string, string> = { ...this.headers(), accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers[HEADER_LAST_EVENT_ID] = lastEventId;
    const response = await this.fetchImpl(this.url, { method: 'GET', headers, signal: options.signal });
    return readResponse(response, options);
  }

  /** Calls a tool and reads its whole response stream. */
  async callTool(
    name: string,
    args: Record<string, unknown> = {},
    options: ReadOptions = {},
  ): Promise<{ call: ToolCall; read: StreamRead }> {
    const call = this.toolCall(name, args);
    return { call, read: await this.post(call.message, options) };
  }

  /** DELETE the session. */
  async close(): Promise<void> {
    const response = await this.fetchImpl(this.url, { method: 'DELETE', headers: this.headers() });
    await response.body?.cancel();
  }

  private headers(): Record<string, string> {
    return { [HEADER_SESSION_ID]: this.sessionId, [HEADER_PROTOCOL_VERSION]: this.protocolVersion };
  }
}
