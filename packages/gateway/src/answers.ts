import type { ServerResponse } from 'node:http';
import { GatewayErrorCode, GatewayRefusal, GuardAction } from '@resumewatch/semconv';

/** Why the gateway answers itself: a refusal, or (with --enforce) a resume of a delivered request. */
type Refusal = GatewayRefusal | typeof GuardAction.RESUME_REFUSED;

/** Status and JSON-RPC error code of each answer the gateway gives itself. */
const ANSWERS: Record<Refusal, { status: number; code: number }> = {
  [GatewayRefusal.BODY_TOO_LARGE]: { status: 413, code: GatewayErrorCode.UNAVAILABLE },
  [GatewayRefusal.HEADERS_TOO_LARGE]: { status: 431, code: GatewayErrorCode.UNAVAILABLE },
  [GatewayRefusal.TOO_MANY_STREAMS]: { status: 503, code: GatewayErrorCode.UNAVAILABLE },
  [GatewayRefusal.NOT_PROXIED]: { status: 400, code: GatewayErrorCode.UNAVAILABLE },
  [GatewayRefusal.UPSTREAM_UNREACHABLE]: { status: 502, code: GatewayErrorCode.UNAVAILABLE },
  [GatewayRefusal.UPSTREAM_TIMEOUT]: { status: 504, code: GatewayErrorCode.TIMEOUT },
  [GuardAction.RESUME_REFUSED]: { status: 405, code: GatewayErrorCode.UNAVAILABLE },
  [GatewayRefusal.STREAM_IDLE]: { status: 504, code: GatewayErrorCode.TIMEOUT },
  // The code the MCP SDK's own Host and Origin validation answers with.
  [GatewayRefusal.HOST_NOT_ALLOWED]: { status: 403, code: GatewayErrorCode.UNAVAILABLE },
  [GatewayRefusal.ORIGIN_NOT_ALLOWED]: { status: 403, code: GatewayErrorCode.UNAVAILABLE },
  [GatewayRefusal.INTERNAL_ERROR]: { status: 502, code: GatewayErrorCode.UNAVAILABLE },
  [GatewayRefusal.HEADERS_TIMEOUT]: { status: 408, code: GatewayErrorCode.TIMEOUT },
  [GatewayRefusal.BODY_TIMEOUT]: { status: 408, code: GatewayErrorCode.TIMEOUT },
  // Never answered: a connection over --max-connections is closed as it is accepted.
  [GatewayRefusal.TOO_MANY_CONNECTIONS]: { status: 503, code: GatewayErrorCode.UNAVAILABLE },
};

/**
 * Answers a request the gateway does not forward: the status, and a JSON-RPC error body naming the
 * request when it was one (`id`), null otherwise. A HEAD gets no body; a refused resume gets none
 * either: 405 is the answer a server gives a GET it has no stream for, and clients read no body in it.
 * `end` writes the body and ends the response (`endAfterRefusal` for a request whose body is unread).
 */
export function answer(
  res: ServerResponse,
  refusal: Refusal,
  message: string,
  options: {
    id?: string | number | null;
    method?: string;
    headers?: Record<string, string>;
    end?: (body: string) => void;
  } = {},
): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  const { status, code } = ANSWERS[refusal];
  const withBody = options.method !== 'HEAD' && refusal !== GuardAction.RESUME_REFUSED;
  const body = withBody
    ? JSON.stringify({
        jsonrpc: '2.0',
        id: options.id ?? null,
        error: { code, message: `resumewatch gateway: ${message}` },
      })
    : '';
  res.writeHead(status, {
    ...(withBody ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
    ...options.headers,
  });
  if (options.end) options.end(body);
  else res.end(body);
}
