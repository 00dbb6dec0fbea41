import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { FetchLike } from '@resumewatch/wire';

/** The newest revision of the SDK under test (the version matrix runs these tests on older SDKs too). */
export const PROTOCOL_VERSION = LATEST_PROTOCOL_VERSION;

/** A bare Streamable HTTP client on fetch, for the wire patterns the SDK client does not produce itself. */
export class RawClient {
  sessionId: string | undefined;
  private nextId = 1;

  constructor(
    private readonly url: string,
    private readonly fetch: FetchLike,
  ) {}

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      'mcp-protocol-version': PROTOCOL_VERSION,
      ...(this.sessionId ? { 'mcp-session-id': this.sessionId } : {}),
      ...extra,
    };
  }

  async initialize(): Promise<void> {
    const params = {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: 'raw', version: '1.0.0' },
    };
    const response = await this.post({ jsonrpc: '2.0', id: 0, method: 'initialize', params });
    this.sessionId = response.headers.get('mcp-session-id') ?? undefined;
    await response.text();
    const initialized = await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await initialized.text();
  }

  post(message: object): Promise<Response> {
    return this.fetch(this.url, { method: 'POST', headers: this.headers(), body: JSON.stringify(message) });
  }

  /** Calls a tool and reads its whole stream; returns the body and the SSE ids in it. */
  async callTool(name: string, args: object = {}): Promise<{ id: number; text: string; eventIds: string[] }> {
    const id = this.nextId++;
    const response = await this.post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
    const text = await response.text();
    return { id, text, eventIds: eventIds(text) };
  }

  /** GET with Last-Event-ID; reads the body to its end unless `readMs` bounds it (for streams left open). */
  async resume(lastEventId: string, readMs?: number): Promise<{ status: number; text: string }> {
    const controller = new AbortController();
    const timer = readMs === undefined ? undefined : setTimeout(() => controller.abort(), readMs);
    const response = await this.fetch(this.url, {
      method: 'GET',
      headers: { ...this.headers({ 'last-event-id': lastEventId }), accept: 'text/event-stream' },
      signal: controller.signal,
    });
    let text = '';
    try {
      text = await response.text();
    } catch {
      // aborted after readMs: the server left the stream open
    }
    clearTimeout(timer);
    return { status: response.status, text };
  }
}

function eventIds(text: string): string[] {
  return [...text.matchAll(/^id: ?(.*)$/gm)].map((m) => m[1]!);
}
