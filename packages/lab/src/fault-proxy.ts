import { createServer, request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { SseParser } from '@resumewatch/wire';
import { hostForUrl } from './loopback.js';

/** One armed cut: the next response matching it is cut mid-stream. */
export interface CutRule {
  /** Only responses to requests with this method (e.g. 'POST'). Default: any. */
  method?: string;
  /** Only responses whose content type contains this. Default 'text/event-stream'. */
  contentType?: string;
  /** Cut right after the K-th SSE event of the response body (comments are not events). */
  afterEvents?: number;
  /** Cut after N bytes of the response body. */
  afterBytes?: number;
  /** `destroy`: close the client socket (FIN); `reset`: send a TCP RST. Default `destroy`. */
  mode?: 'destroy' | 'reset';
}

export interface CutRecord {
  at: number;
  method: string;
  path: string;
  mode: 'destroy' | 'reset';
  eventsForwarded: number;
  bytesForwarded: number;
}

/** A response whose client went away (cut by the proxy, or gone by itself) before it ended. */
export interface AbandonedResponse {
  method: string;
  path: string;
  /** SSE events of the response that had reached the client when it went away. */
  eventsForwarded: number;
  /** SSE events the upstream has sent on it so far, those before the client went away included. */
  readonly upstreamEvents: number;
  /** Settles once the upstream's response is over: true if it ended whole. */
  upstreamEnded: Promise<boolean>;
}

export interface FaultProxyOptions {
  /** The upstream URL; the proxy serves the same path, e.g. http://127.0.0.1:P/mcp. */
  target: string;
  /**
   * When a response's client goes away before its end, go on reading the upstream's response to its
   * end (and drop it) instead of aborting the upstream request: the server writes it whole to a live
   * stream, as if nothing happened, and `abandoned` shows how far it got. For tests whose server gives
   * no other sign of the work a cut stream goes on doing. Default false.
   */
  keepUpstream?: boolean;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0. */
  port?: number;
}

export interface FaultProxy {
  /** The target URL with the proxy's origin. */
  url: string;
  /** Arms a one-shot cut for the next matching response. */
  armCut(rule: CutRule): void;
  readonly cuts: readonly CutRecord[];
  /** With `keepUpstream`: the responses whose client went away before their end, in order. */
  readonly abandoned: readonly AbandonedResponse[];
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'proxy-connection',
  'upgrade',
  'te',
  'trailer',
]);

function forwardHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers))
    if (!HOP_BY_HOP.has(name) && value !== undefined) out[name] = value;
  return out;
}

function matches(rule: CutRule, req: IncomingMessage, upstream: IncomingMessage): boolean {
  if (rule.method !== undefined && rule.method.toUpperCase() !== req.method) return false;
  return (upstream.headers['content-type'] ?? '').includes(rule.contentType ?? 'text/event-stream');
}

/**
 * A loopback HTTP proxy that cuts a response mid-stream with a real TCP cut: once the armed point is
 * reached it writes the bytes up to it, waits for them to reach the socket, then destroys (or resets)
 * the client's socket and aborts the upstream request, so both sides see the connection drop.
 * Events are counted with the wire package's SSE parser; the cut lands exactly after the K-th event.
 */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const target = new URL(options.target);
  const armed: CutRule[] = [];
  const cuts: CutRecord[] = [];
  const abandoned: AbandonedResponse[] = [];
  const sockets = new Set<Socket>();
  const keepUpstream = options.keepUpstream ?? false;

  /**
   * With `keepUpstream`: counts the response's events, and once its client is gone (`res` closed before
   * its end) reads the upstream on to its end and records it. `forwardedAtCut` gives the events that
   * reached the client when the proxy cut it itself (the pipe's count is the events read so far).
   */
  function keepReading(
    req: IncomingMessage,
    res: ServerResponse,
    upstream: IncomingMessage,
    forwardedAtCut: () => number | undefined,
  ): void {
    let upstreamEvents = 0;
    const counter = new SseParser(() => void upstreamEvents++);
    upstream.on('data', (chunk: Buffer) => counter.push(chunk));
    const gone = (): void => {
      if (res.writableFinished) return;
      upstream.unpipe(res);
      const ended = new Promise<boolean>((resolve) => {
        if (upstream.complete || upstream.destroyed) resolve(upstream.complete);
        else upstream.once('close', () => resolve(upstream.complete));
      });
      abandoned.push({
        method: req.method ?? '',
        path: req.url ?? '',
        eventsForwarded: forwardedAtCut() ?? upstreamEvents,
        get upstreamEvents() {
          return upstreamEvents;
        },
        upstreamEnded: ended,
      });
      upstream.resume();
    };
    if (res.closed) gone();
    else res.once('close', gone);
  }

  function relay(
    req: IncomingMessage,
    res: ServerResponse,
    upstream: IncomingMessage,
    upstreamRequest: ReturnType<typeof httpRequest>,
  ): void {
    res.writeHead(upstream.statusCode ?? 502, upstream.statusMessage, forwardHeaders(upstream.headers));
    res.flushHeaders();
    // The upstream connection dropped (the server restarted, or was cut) before its response ended:
    // drop the client's too, or it would wait on a response that never ends (pipe does not end it).
    upstream.once('close', () => {
      if (!upstream.complete) res.destroy();
    });
    const ruleIndex = armed.findIndex((rule) => matches(rule, req, upstream));
    let eventsAtCut: number | undefined;
    if (keepUpstream) keepReading(req, res, upstream, () => eventsAtCut);
    if (ruleIndex < 0) {
      upstream.pipe(res);
      return;
    }
    const [rule] = armed.splice(ruleIndex, 1) as [CutRule];
    let forwarded = 0;
    let events = 0;
    let eventBytes = 0;
    let cutAt: number | undefined = rule.afterBytes;
    const parser = new SseParser((event) => {
      events++;
      eventBytes += event.raw.length;
      if (rule.afterEvents !== undefined && events === rule.afterEvents && cutAt === undefined) cutAt = eventBytes;
    });
    let cutting = false;
    upstream.on('data', (chunk: Buffer) => {
      if (cutting) return;
      parser.push(chunk);
      if (cutAt === undefined || forwarded + chunk.length < cutAt) {
        res.write(chunk);
        forwarded += chunk.length;
        return;
      }
      cutting = true;
      const keep = chunk.subarray(0, cutAt - forwarded);
      forwarded += keep.length;
      const mode = rule.mode ?? 'destroy';
      eventsAtCut = Math.min(events, rule.afterEvents ?? events);
      cuts.push({
        at: Date.now(),
        method: req.method ?? '',
        path: req.url ?? '',
        mode,
        eventsForwarded: eventsAtCut,
        bytesForwarded: forwarded,
      });
      // With keepUpstream the upstream's response flows on (to `keepReading`); the client alone is cut.
      if (!keepUpstream) upstream.pause();
      res.write(keep, () => {
        const socket = req.socket;
        if (mode === 'reset') socket.resetAndDestroy();
        else socket.destroy();
        if (!keepUpstream) upstreamRequest.destroy();
      });
    });
    upstream.on('end', () => {
      if (!cutting) res.end();
    });
    upstream.on('error', () => res.destroy());
  }

  const server = createServer((req, res) => {
    const upstreamRequest = httpRequest(
      {
        host: target.hostname.replace(/^\[|\]$/g, ''),
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...forwardHeaders(req.headers), host: target.host },
      },
      (upstream) => relay(req, res, upstream, upstreamRequest),
    );
    upstreamRequest.on('error', () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    req.pipe(upstreamRequest);
    res.once('close', () => {
      if (!res.writableFinished && !keepUpstream) upstreamRequest.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${hostForUrl(host)}:${port}${target.pathname}${target.search}`,
    armCut: (rule) => void armed.push(rule),
    cuts,
    abandoned,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
