/**
 * Whether a stream an SDK server transport stores an event for has a live connection at that moment.
 *
 * SEP-1699: the SDK 1.x server may close a stream on purpose (`closeSSEStream`,
 * `closeStandaloneSSEStream`) or find its connection gone, and then still stores the stream's events
 * for the client's next poll. A response stored then reached no client: its first replay is its first
 * delivery, not a duplicate. The event store cannot see connections; the transport that calls it can.
 *
 * The instrumented transport's `send` names itself for the synchronous part of the call (the SDK calls
 * `storeEvent` before its first await); the instrumented store takes that name at `storeEvent`'s entry
 * and asks the transport, once the event is stored (when the transport decides whether to write it),
 * whether the stream is in its `_streamMapping` with a connection. Nothing is kept between calls.
 */

/** The SDK web-standard server transport's internals read here (1.x): stream id → its live connection. */
interface TransportInternals {
  _streamMapping?: unknown;
  /** The Node transport delegates to a web-standard one, which owns the streams. */
  _webStandardTransport?: TransportInternals;
}

/** A transport that can say whether one of its streams has a live connection. */
export interface StreamLiveness {
  /** true: connected; false: detached (closed, not resumed yet); undefined: cannot tell. */
  isLive(streamId: string): boolean | undefined;
}

let storing: StreamLiveness | undefined;

/** Runs a transport's `send`, the transport named to the event store the SDK calls synchronously inside it. */
export function sendingFrom<R>(liveness: StreamLiveness | undefined, send: () => R): R {
  const previous = storing;
  storing = liveness;
  try {
    return send();
  } finally {
    storing = previous;
  }
}

/** In `storeEvent`, synchronously at its entry: the transport storing the event, when known. */
export function storingTransport(): StreamLiveness | undefined {
  return storing;
}

/** How a server transport's streams are read, or undefined when its internals are not the SDK 1.x ones. */
export function streamLivenessOf(transport: object): StreamLiveness | undefined {
  const outer = transport as TransportInternals;
  const owner = outer._webStandardTransport ?? outer;
  if (!(owner._streamMapping instanceof Map)) return undefined;
  const mapping = owner._streamMapping as Map<string, object | undefined>;
  return { isLive: (streamId) => isConnection(mapping.get(streamId)) };
}

/**
 * An entry of `_streamMapping` that still holds a connection. The web-standard transport (SDK 1.25 and
 * later) keeps `{ controller, ... }` and drops the controller when the stream closes; the older Node
 * transport (1.24) keeps the `ServerResponse` itself and deletes the entry when it closes.
 */
function isConnection(entry: object | undefined): boolean {
  if (entry === undefined) return false;
  return 'controller' in entry ? (entry as { controller?: unknown }).controller !== undefined : true;
}
