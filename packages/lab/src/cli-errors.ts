/** A usage or input error: printed as one line, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Error codes of a connection that never got an HTTP answer. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** The code of an error or of one of its causes (fetch wraps the socket's error in `cause`). */
function errorCode(error: unknown): string | undefined {
  for (
    let e = error, depth = 0;
    e !== null && typeof e === 'object' && depth < 5;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_SOCKET') return code;
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.length > 0) {
      const inner = errorCode(errors[0]);
      if (inner) return inner;
    }
  }
  return undefined;
}

/** fetch rejected before any HTTP answer: refused, unknown host, a port fetch does not allow, ... */
export function isUnreachable(error: unknown): boolean {
  const code = errorCode(error);
  if (code !== undefined && UNREACHABLE.has(code)) return true;
  return error instanceof TypeError && error.message === 'fetch failed' && code === undefined;
}

/** Why a fetch got no answer, in a few words. */
export function unreachableReason(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  return (
    errorCode(error) ??
    (cause instanceof Error ? cause.message : error instanceof Error ? error.message : String(error))
  );
}

/** One line for a listen error: what was wrong with the port or host. */
export function listenErrorMessage(error: unknown, host: string, port: number): string | undefined {
  switch (errorCode(error)) {
    case 'EADDRINUSE':
      return `port ${port} on ${host} is in use (--port)`;
    case 'EACCES':
      return `not allowed to listen on port ${port} on ${host} (--port; ports below 1024 need privileges)`;
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot listen on host ${host}: no such local address (--host)`;
    default:
      return undefined;
  }
}
