import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach } from 'vitest';
import { startGateway } from '../../src/index.js';
import type { GatewayOptions, RunningGateway } from '../../src/index.js';

/** One request as the upstream received it: every header line in order, the body's exact bytes. */
export interface SeenRequest {
  method: string;
  url: string;
  rawHeaders: string[];
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Settles when the upstream's response closes: `finished` false when the exchange was cut before its end. */
  closed: Promise<{ finished: boolean }>;
}

/** What the upstream does with one request, once its body has arrived. */
type UpstreamScript = (req: IncomingMessage, res: ServerResponse, seen: SeenRequest) => unknown;

/**
 * A loopback node:http server standing in for an MCP server: each request is recorded (`seen`) and
 * answered by `script`, which a test replaces to control every status, header and byte of the answer.
 */
interface ScriptedUpstream {
  /** The MCP endpoint, `http://127.0.0.1:<port>/mcp`. */
  readonly url: string;
  readonly seen: SeenRequest[];
  script: UpstreamScript;
  close(): Promise<void>;
}

export async function startScriptedUpstream(script?: UpstreamScript): Promise<ScriptedUpstream> {
  const seen: SeenRequest[] = [];
  const sockets = new Set<Socket>();
  const upstream = {
    url: '',
    seen,
    script:
      script ??
      ((_req: IncomingMessage, res: ServerResponse) => {
        res.writeHead(500).end('no script');
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
  const server = createServer((req, res) => {
    const closed = new Promise<{ finished: boolean }>((resolve) =>
      res.once('close', () => resolve({ finished: res.writableFinished })),
    );
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      const entry: SeenRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        rawHeaders: req.rawHeaders,
        headers: req.headers,
        body: Buffer.concat(chunks),
        closed,
      };
      seen.push(entry);
      void upstream.script(req, res, entry);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  return upstream;
}

/** The options every test gateway has: port 0 on loopback, its detector without a /metrics port or output. */
export function gatewayOptions(upstream: string, options: Partial<GatewayOptions> = {}): GatewayOptions {
  return {
    upstream,
    host: '127.0.0.1',
    port: 0,
    detector: { config: { metricsPort: 0 }, output: null },
    ...options,
  };
}

/** A scripted upstream and a gateway in front of it; `endpoint` is the gateway's MCP endpoint. */
export interface Rig {
  upstream: ScriptedUpstream;
  gateway: RunningGateway;
  endpoint: string;
}

/**
 * For a test file, called at its top level: `rig(script, options)` starts a scripted upstream and a
 * gateway in front of it; both are closed after each test.
 */
export function rigPerTest(): (script?: UpstreamScript, options?: Partial<GatewayOptions>) => Promise<Rig> {
  const open: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const part of open.splice(0).reverse()) await part.close();
  });
  return async (script, options) => {
    const upstream = await startScriptedUpstream(script);
    open.push(upstream);
    const gateway = await startGateway(gatewayOptions(upstream.url, options));
    open.push(gateway);
    return { upstream, gateway, endpoint: new URL('/mcp', gateway.url).href };
  };
}
