import type { EvictReport, LabServerState, RequestLogEntry, RestartReport } from './lab-server/types.js';

/**
 * Calls the lab's control endpoint. Always through the global fetch, never an injected one: the
 * fetch wrappers under test see MCP traffic only.
 */
export class LabControlClient {
  constructor(readonly controlUrl: string) {}

  /** The control URL of a lab server, derived from its MCP endpoint URL. */
  static forServer(serverUrl: string): LabControlClient {
    return new LabControlClient(new URL('/control', serverUrl).toString());
  }

  restart(): Promise<RestartReport> {
    return this.call('POST', '/restart');
  }

  evict(sessionId: string, eventId: string): Promise<EvictReport> {
    return this.call('POST', '/evict', { sessionId, eventId });
  }

  state(): Promise<LabServerState> {
    return this.call('GET', '/state');
  }

  requests(sessionId?: string): Promise<RequestLogEntry[]> {
    return this.call(
      'GET',
      sessionId === undefined ? '/requests' : `/requests?sessionId=${encodeURIComponent(sessionId)}`,
    );
  }

  async sideEffectCount(key: string): Promise<number> {
    const { count } = await this.call<{ count: number }>('GET', `/side-effects?key=${encodeURIComponent(key)}`);
    return count;
  }

  private async call<T>(method: string, route: string, body?: unknown): Promise<T> {
    const response = await fetch(`${this.controlUrl}${route}`, {
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`control ${method} ${route} answered ${response.status}: ${text}`);
    return JSON.parse(text) as T;
  }
}
