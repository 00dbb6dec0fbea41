import { diag } from '@opentelemetry/api';
import { handlerSettled, instrumentServerTransport, isInstrumentedServerTransport } from './server-transport.js';
import type { ServerTransportInstrumentationOptions, ServerTransportLike } from './types.js';

type Handler = (request: { id?: unknown }, ctx: unknown) => unknown;

/** The SDK's protocol layer (`Server`, or `McpServer.server`), structurally: 1.x and v2 alike. */
interface ProtocolLike {
  readonly transport?: object | undefined;
  connect(transport: ServerTransportLike): Promise<void>;
  _requestHandlers?: Map<string, Handler>;
}

const instrumentedServers = new WeakSet<object>();

/**
 * Server request spans for an MCP SDK server (1.x or v2; an `McpServer` or its `Server`), whatever
 * transport it is connected to: every transport it connects gets `instrumentServerTransport`, and its
 * request handlers are watched to the end. A 2026-07-28 request whose stream the client closed is
 * cancelled, and the SDK drops whatever its handler returns afterwards, unsent: only the handler shows
 * whether the work ran on (ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION). With the v2 SDK's
 * `createMcpHandler`, which builds a server per request, instrument it in the factory:
 * `createMcpHandler(() => instrumentMcpServer(buildServer()))`. Returns the server.
 */
export function instrumentMcpServer<S extends object>(
  server: S,
  options: ServerTransportInstrumentationOptions = {},
): S {
  const protocol = ((server as { server?: unknown }).server ?? server) as ProtocolLike;
  if (instrumentedServers.has(protocol)) return server;
  instrumentedServers.add(protocol);
  const connect = protocol.connect.bind(protocol);
  protocol.connect = (transport) => {
    if (!isInstrumentedServerTransport(transport)) instrumentServerTransport(transport, options);
    return connect(transport);
  };
  const handlers = protocol._requestHandlers;
  if (!(handlers instanceof Map)) {
    diag.debug('resumewatch: the server has no request handler map; handler completion is not observed');
    return server;
  }
  const watched = new WeakMap<Handler, Handler>();
  const get = handlers.get.bind(handlers);
  // Read at each request (handlers registered later, e.g. the first tool's, are watched too).
  handlers.get = (method: string) => {
    const handler = get(method);
    if (handler === undefined) return undefined;
    let wrapper = watched.get(handler);
    if (!wrapper) {
      wrapper = watch(protocol, handler);
      watched.set(handler, wrapper);
    }
    return wrapper;
  };
  return server;
}

/** The handler, telling the transport that carried its request how it settled. */
function watch(protocol: ProtocolLike, handler: Handler): Handler {
  return function (this: unknown, request, ctx) {
    // The protocol forgets its transport when it closes: taken now, while the request is served.
    const transport = protocol.transport;
    const result = handler.call(this, request, ctx);
    Promise.resolve(result).then(
      (value) => handlerSettled(transport, request.id, !isToolError(value)),
      () => handlerSettled(transport, request.id, false),
    );
    return result;
  };
}

/**
 * A tool's failure, which McpServer turns into a result with `isError` (a tool that stopped on the
 * cancellation throws): not the work completed.
 */
function isToolError(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (value as { isError?: unknown }).isError === true;
}
