import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

interface Stored {
  id: string;
  streamId: string;
  key: string;
  message: JSONRPCMessage;
}

type Send = { send: (id: string, message: JSONRPCMessage) => Promise<void> };

/**
 * Like `@modelcontextprotocol/server-everything`'s store: a resume replays every event the session
 * stored after the cursor, of every stream (other requests' results, the listening stream's
 * notifications, `{}` priming events), which the transport forbids. One instance per session.
 */
export class ReplayEverythingStore implements EventStore {
  private readonly events: Stored[] = [];
  private seq = 0;

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = `${streamId}_${++this.seq}`;
    this.events.push({ id, streamId, key: streamId, message });
    return id;
  }

  async replayEventsAfter(lastEventId: string, { send }: Send): Promise<string> {
    const at = this.events.findIndex((e) => e.id === lastEventId);
    if (at < 0) return lastEventId.slice(0, lastEventId.lastIndexOf('_'));
    for (const event of this.events.slice(at + 1)) await send(event.id, event.message);
    return this.events[at]!.streamId;
  }
}

/**
 * Like the Python SDK's example store: one store for every session, streams keyed by JSON-RPC request
 * id only, so session A's cursor replays session B's events when both used the same request id. The
 * key of an event is its response id or its progress token (the SDK client's is the request id).
 */
export class RequestKeyedStore implements EventStore {
  private readonly events: Stored[] = [];
  private seq = 0;

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = `${++this.seq}`;
    this.events.push({ id, streamId, key: keyOf(streamId, message), message });
    return id;
  }

  async replayEventsAfter(lastEventId: string, { send }: Send): Promise<string> {
    const at = this.events.findIndex((e) => e.id === lastEventId);
    if (at < 0) return '';
    const cursor = this.events[at]!;
    for (const event of this.events.slice(at + 1)) if (event.key === cursor.key) await send(event.id, event.message);
    return cursor.streamId;
  }
}

function keyOf(streamId: string, message: JSONRPCMessage): string {
  if ('id' in message && message.id !== undefined && !('method' in message)) return `request ${String(message.id)}`;
  const token =
    'params' in message ? (message.params as { progressToken?: unknown } | undefined)?.progressToken : undefined;
  return token !== undefined ? `request ${String(token)}` : streamId;
}
