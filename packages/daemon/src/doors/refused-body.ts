import type { IncomingMessage, ServerResponse } from 'node:http';

/** How long the rest of a refused body is waited for by default. */
const LINGER_MS = 10_000;

/** How much of a refused request's body is still read, and for how long, before its connection is cut. */
export interface RefusedBodyBounds {
  /** Body bytes read in all, before the refusal and after it; past them the connection is cut. */
  maxBytes: number;
  /** Time the rest of the body is waited for once the answer is written. Default 10 s. */
  maxMs?: number;
}

/**
 * Ends the answer to a request refused before its body was read (too large, too slow, not allowed),
 * without cutting off a client that is still sending it.
 *
 * Closing the connection at once leaves the client's bytes unread in the kernel, which then resets
 * the connection: a client still writing its body gets EPIPE or ECONNRESET, often before it has read
 * the answer. An OTLP exporter retries a network error (and drops a 413), so the same batch comes back
 * again and again. Instead the answer is written whole (`last`, its last bytes; the caller set its
 * headers, `Connection: close` among them), the rest of the body is read and thrown away, and the
 * response ends when the body does: the connection then closes with nothing unread and the client reads
 * its answer. Bounded: past `maxBytes` of body in all (`read` were read before the refusal), or
 * `maxMs` after the answer, the connection is cut; nothing read is kept. A body declared longer than
 * `maxBytes` is not waited for.
 */
export function endAfterRefusedBody(
  req: IncomingMessage,
  res: ServerResponse,
  last: Uint8Array | string,
  read: number,
  bounds: RefusedBodyBounds,
): void {
  const declared = Number(req.headers['content-length']);
  if (req.complete || declared > bounds.maxBytes) {
    res.end(last);
    return;
  }
  if (last.length > 0) res.write(last);
  else res.flushHeaders();
  let total = read;
  const stop = (): void => {
    clearTimeout(timer);
    req.off('data', onData);
    req.off('end', onEnd);
  };
  const cut = (): void => {
    stop();
    res.destroy();
  };
  const onData = (chunk: Buffer): void => {
    total += chunk.length;
    if (total > bounds.maxBytes) cut();
  };
  const onEnd = (): void => {
    stop();
    res.end();
  };
  const timer = setTimeout(cut, bounds.maxMs ?? LINGER_MS);
  timer.unref();
  req.on('data', onData);
  req.once('end', onEnd);
  req.once('close', stop);
  req.resume();
}
