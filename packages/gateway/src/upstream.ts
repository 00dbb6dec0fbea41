import { request as httpRequest, Agent as HttpAgent, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';

export interface UpstreamOptions {
  /** PEM certificates trusted for an https upstream, in addition to Node's. */
  ca?: string | undefined;
}

export interface UpstreamRequest {
  method: string;
  /** End-to-end header lines, in the client's order. */
  headers: readonly [string, string][];
  body: Uint8Array;
  signal: AbortSignal;
}

/**
 * Sends a client's request to the upstream with Node's own HTTP client and hands back the response as
 * it arrives: no decoding (the client gets the upstream's bytes and Content-Encoding), no redirects
 * followed, every header line kept. The caller reads the body as a Node stream, pausing it while its
 * client is slow, so a slow client holds the upstream back (TCP flow control) instead of growing the
 * gateway's memory. Aborting the signal destroys the exchange.
 */
export class UpstreamClient {
  private readonly httpAgent = new HttpAgent({ keepAlive: true });
  private readonly httpsAgent: HttpsAgent;

  constructor(options: UpstreamOptions = {}) {
    this.httpsAgent = new HttpsAgent({ keepAlive: true, ...(options.ca ? { ca: options.ca } : {}) });
  }

  send(url: URL, request: UpstreamRequest): Promise<IncomingMessage> {
    const https = url.protocol === 'https:';
    const headers: OutgoingHttpHeaders = {};
    for (const [name, value] of request.headers) {
      const existing = headers[name];
      headers[name] = existing === undefined ? value : `${String(existing)}, ${value}`;
    }
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = (https ? httpsRequest : httpRequest)(url, {
        method: request.method,
        headers,
        agent: https ? this.httpsAgent : this.httpAgent,
        signal: request.signal,
      });
      req.once('error', reject);
      req.once('response', (res) => {
        req.off('error', reject);
        // Later errors of the exchange reach the response (its 'error' or an incomplete 'close').
        req.on('error', () => undefined);
        resolve(res);
      });
      req.end(request.body.byteLength > 0 ? request.body : undefined);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
