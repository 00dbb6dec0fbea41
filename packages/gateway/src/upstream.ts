import { request as httpRequest, Agent as HttpAgent, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import type { FetchLike } from '@resumewatch/wire';

export interface UpstreamOptions {
  /** PEM certificates trusted for an https upstream, in addition to Node's. */
  ca?: string | undefined;
  /** Most sockets kept open to the upstream; further exchanges wait. Default: no limit. */
  maxSockets?: number;
}

/**
 * A fetch to the upstream over Node's own HTTP client that leaves the body as the upstream sent it:
 * no content decoding (the client gets the upstream's bytes and Content-Encoding), no redirects
 * followed, every response header kept. The body is pull-driven: the upstream socket is read only as
 * fast as the gateway's client reads, so a slow client holds the upstream back (TCP flow control)
 * instead of growing the gateway's memory.
 */
export function upstreamFetch(options: UpstreamOptions = {}): FetchLike & { close(): void } {
  const httpAgent = new HttpAgent({ keepAlive: true, maxSockets: options.maxSockets ?? Infinity });
  const httpsAgent = new HttpsAgent({
    keepAlive: true,
    maxSockets: options.maxSockets ?? Infinity,
    ...(options.ca ? { ca: options.ca } : {}),
  });
  const fetch = ((input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const https = url.protocol === 'https:';
    const headers: OutgoingHttpHeaders = {};
    for (const [name, value] of init?.headers as [string, string][]) {
      const existing = headers[name];
      headers[name] = existing === undefined ? value : `${String(existing)}, ${value}`;
    }
    const body = init?.body as Uint8Array | undefined;
    return new Promise<Response>((resolve, reject) => {
      const req = (https ? httpsRequest : httpRequest)(url, {
        method: init?.method ?? 'GET',
        headers,
        agent: https ? httpsAgent : httpAgent,
        ...(init?.signal ? { signal: init.signal } : {}),
      });
      req.once('error', reject);
      req.once('response', (res) => {
        req.off('error', reject);
        try {
          resolve(toResponse(res, req.destroy.bind(req), init?.signal ?? undefined));
        } catch (e) {
          res.destroy();
          reject(e);
        }
      });
      req.end(body && body.byteLength > 0 ? body : undefined);
    });
  }) as FetchLike & { close(): void };
  fetch.close = () => {
    httpAgent.destroy();
    httpsAgent.destroy();
  };
  return fetch;
}

/** Statuses whose response has no body (RFC 9110): a Response with one cannot be built. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

function toResponse(res: IncomingMessage, destroy: () => void, signal: AbortSignal | undefined): Response {
  const headers = new Headers();
  const raw = res.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  const status = res.statusCode ?? 502;
  if (NULL_BODY.has(status)) {
    res.resume();
    return new Response(null, { status, statusText: res.statusMessage ?? '', headers });
  }
  return new Response(bodyOf(res, destroy, signal), { status, statusText: res.statusMessage ?? '', headers });
}

/**
 * The response body as a web stream that reads the socket only when pulled. An upstream that closes
 * the connection before the body is complete errors the stream (never a clean end: a clean end tells
 * an MCP client its stream is over). A body cut because the exchange was aborted (the client left)
 * errors with the abort's reason, so the observer records the stream as aborted, not broken: an aborted
 * standalone stream is how a client closes its transport.
 */
function bodyOf(
  res: IncomingMessage,
  destroy: () => void,
  signal: AbortSignal | undefined,
): ReadableStream<Uint8Array> {
  const failure = (e: unknown): unknown => (signal?.aborted ? signal.reason : e);
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        res.pause();
        res.on('data', (chunk: Buffer) => {
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) res.pause();
        });
        res.once('end', () => {
          try {
            controller.close();
          } catch {
            // Already errored or cancelled.
          }
        });
        res.once('error', (e) => controller.error(failure(e)));
        res.once('close', () => {
          if (!res.complete)
            controller.error(
              failure(Object.assign(new Error('upstream closed the response early'), { code: 'ECONNRESET' })),
            );
        });
      },
      pull() {
        res.resume();
      },
      cancel() {
        res.destroy();
        destroy();
      },
    },
    { highWaterMark: 1 },
  );
}
