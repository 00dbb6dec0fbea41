import type { ValuesOf } from './types.js';
import { ErrorType, ProtocolEra } from './values.js';

/**
 * What a server's answer to an MCP request says of the era the request asked for (its
 * `mcp.protocol.version`). An era's traffic is what the server accepted in it: a client that probes for
 * 2026-07-28 with `server/discover`, is refused, and falls back to `initialize` runs in the session era,
 * and its refused probe is a negotiation refused, not a 2026-07-28 exchange.
 */
export const EraAnswer = {
  /** Answered in that era: a 2xx, or a JSON-RPC answer that does not refuse the version. */
  ACCEPTED: 'accepted',
  /** The server refused the version: see `eraAnswer`. Counted apart, by the version asked. */
  REFUSED: 'refused',
  /**
   * Neither: no answer seen (a client span that failed before any), or an answer about something else
   * than the version (401, 403, a rate limit, a 5xx, a session-era request whose session is gone).
   */
  NONE: 'none',
} as const;
export type EraAnswer = ValuesOf<typeof EraAnswer>;

/** The session era's handshake. */
/** The MCP method that starts a session (the detector counts the sessions started by it). */
export const METHOD_INITIALIZE = 'initialize';
/** The 2026-07-28 era's probe: a client asks which versions the server speaks (SDK v2 `versionNegotiation: auto`). */
const METHOD_SERVER_DISCOVER = 'server/discover';
/** JSON-RPC error `UnsupportedProtocolVersion` (2026-07-28), as `rpc.response.status_code` records it. */
const UNSUPPORTED_PROTOCOL_VERSION = '-32022';

/**
 * A 4xx that refuses the request as it was asked (400 bad request or unsupported version, 404, 405 no
 * such method on the endpoint, 406, 415, ...), as the SDK v2 client reads a refused probe before it falls
 * back. Not one that speaks of the client's credentials (401, 403, 407), its timing (408) or its rate (429).
 */
function refusesVersion(status: number): boolean {
  return (
    status >= 400 &&
    status < 500 &&
    status !== 401 &&
    status !== 403 &&
    status !== 407 &&
    status !== 408 &&
    status !== 429
  );
}

/**
 * The era answer of one request span, from what the span records (so every door decides alike):
 * - `method`: `mcp.method.name`; `era`: the era of its `mcp.protocol.version`;
 * - `httpStatus`: `http.response.status_code`, 0 when absent (the instrumentation records it on every
 *   request span whose response head arrived);
 * - `rpcCode`: `rpc.response.status_code` (the JSON-RPC error code), `errorType`: `error.type`;
 * - `clientSide`: a client's span (it may have got no answer); a server's span was accepted by its
 *   transport, or it would not exist.
 *
 * Refused: a negotiation answered with a refusing 4xx, or with a JSON-RPC error. The negotiations are
 * the session era's `initialize`, the 2026-07-28 probe `server/discover`, and every 2026-07-28 request
 * (each carries its own version claim; nothing binds it to an earlier handshake). A JSON-RPC
 * `UnsupportedProtocolVersion` refuses any request. A session-era request after the handshake answered
 * 4xx (its session is gone: 404) refuses no version: NONE.
 */
export function eraAnswer(
  method: unknown,
  era: ProtocolEra,
  httpStatus: number,
  rpcCode: unknown,
  errorType: unknown,
  clientSide: boolean,
): EraAnswer {
  const handshake = method === METHOD_SERVER_DISCOVER || method === METHOD_INITIALIZE;
  if (httpStatus !== 0 && (httpStatus < 200 || httpStatus > 299))
    return (handshake || era === ProtocolEra.STATELESS) && refusesVersion(httpStatus)
      ? EraAnswer.REFUSED
      : EraAnswer.NONE;
  if (typeof rpcCode === 'string' && rpcCode.length > 0)
    return handshake || rpcCode === UNSUPPORTED_PROTOCOL_VERSION ? EraAnswer.REFUSED : EraAnswer.ACCEPTED;
  if (httpStatus !== 0 || !clientSide) return EraAnswer.ACCEPTED;
  // A client span without a status (an instrumentation that does not record it on a 2xx): a result came
  // unless it ended with an error that no answer explains (a timeout before the headers, a network error).
  return errorType === undefined || errorType === ErrorType.TOOL_ERROR || errorType === ErrorType.STREAM_BROKEN
    ? EraAnswer.ACCEPTED
    : EraAnswer.NONE;
}
