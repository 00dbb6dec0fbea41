import type { IncomingMessage, ServerResponse } from 'node:http';
import { endAfterRefusedBody } from '@resumewatch/daemon';
import { GatewayRefusal } from '@resumewatch/semconv';

export interface BodyLimits {
  /** Largest request body forwarded (413 above). */
  maxBodyBytes: number;
  /** Time a client has to send its whole request body, from its headers on (408 after); 0: no limit. */
  bodyTimeoutMs: number;
}

/** Why a body was not read whole, and how many of its bytes were read. */
export interface RefusedBody {
  refused: typeof GatewayRefusal.BODY_TOO_LARGE | typeof GatewayRefusal.BODY_TIMEOUT;
  read: number;
}

/**
 * The whole request body; or refused: past --max-body, or not in whole within --body-timeout (the rest
 * is left unread, and nothing read is kept); or gone, when the client left first. `active` is called for
 * each chunk: an upload that keeps sending is not idle.
 */
export function readBody(
  req: IncomingMessage,
  limits: BodyLimits,
  active: () => void,
): Promise<{ body: Uint8Array } | RefusedBody | { gone: true }> {
  const declared = Number(req.headers['content-length']);
  if (declared > limits.maxBodyBytes) return Promise.resolve({ refused: GatewayRefusal.BODY_TOO_LARGE, read: 0 });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    const settle = (result: { body: Uint8Array } | RefusedBody | { gone: true }): void => {
      if (over) return;
      over = true;
      clearTimeout(deadline);
      // Every listener goes: the request lives as long as its exchange (a stream, for hours maybe), and a
      // listener left on it would keep `resolve`, the settled promise and so the body.
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      chunks.length = 0;
      resolve(result);
    };
    const refuse = (refused: RefusedBody['refused']): void => {
      req.pause();
      chunks.length = 0;
      settle({ refused, read: size });
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.byteLength;
      if (size > limits.maxBodyBytes) return refuse(GatewayRefusal.BODY_TOO_LARGE);
      chunks.push(chunk);
      active();
    };
    const deadline =
      limits.bodyTimeoutMs > 0
        ? setTimeout(() => refuse(GatewayRefusal.BODY_TIMEOUT), limits.bodyTimeoutMs)
        : undefined;
    deadline?.unref();
    const onEnd = (): void => settle({ body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
    const onError = (): void => settle({ gone: true });
    const onClose = (): void => {
      if (!req.complete) settle({ gone: true });
    };
    // `on`, not `once`: `settle` runs once and takes every listener off; a `once` would make a wrapper,
    // its state and a bound function for each, on every request.
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** The error message of a refused body's answer. */
export function refusedBodyMessage(refused: RefusedBody['refused'], limits: BodyLimits): string {
  return refused === GatewayRefusal.BODY_TOO_LARGE
    ? `request body over ${limits.maxBodyBytes} bytes (--max-body)`
    : `request body not in whole within ${limits.bodyTimeoutMs} ms (--body-timeout)`;
}

/**
 * Ends the answer to a refused body so that a client still sending it reads the answer: the rest of the
 * body is read and thrown away, up to twice --max-body in all, before the connection closes
 * (`endAfterRefusedBody`, which `serve` answers its refused bodies with too).
 */
export function endAfterRefusal(
  req: IncomingMessage,
  res: ServerResponse,
  refused: Pick<RefusedBody, 'read'>,
  limits: BodyLimits,
): (last: string) => void {
  return (last) => endAfterRefusedBody(req, res, last, refused.read, { maxBytes: 2 * limits.maxBodyBytes });
}
