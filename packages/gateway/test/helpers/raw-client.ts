import { request } from 'node:http';
import type { Agent, ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { connect } from 'node:net';

/**
 * HTTP clients that leave the bytes alone: node:http with its own connection per request (no agent),
 * no content decoding, every header line kept; and a bare TCP socket for what node:http cannot send.
 */
interface SendOptions {
  method?: string;
  /** Header fields in order; an array value is sent as repeated lines. */
  headers?: Record<string, string | string[]>;
  body?: Buffer | string;
  /** Leave the request open after `body` (the caller writes the rest and ends it). */
  keepOpen?: boolean;
  /** Leave the response paused once its headers are in: nothing of the body is read until `res.resume()`. */
  paused?: boolean;
  /** A keep-alive agent whose connection the request reuses; default none: a connection of its own. */
  agent?: Agent;
}

export interface RawResponse {
  status: number;
  statusMessage: string;
  rawHeaders: string[];
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Whether the body ended cleanly (false: the connection broke before its end). */
  complete: boolean;
}

/** An exchange whose response is read as it arrives. */
interface OpenExchange {
  req: ClientRequest;
  res: IncomingMessage;
  /** The body bytes received so far. */
  received(): Buffer;
  text(): string;
  /** Settles when the response closes; `complete` false when it broke. */
  ended: Promise<{ complete: boolean }>;
}

/** Sends a request and returns at once, before any answer (a client that may give up before the headers). */
export function begin(url: string, options: SendOptions = {}): ClientRequest {
  const req = request(url, { method: options.method ?? 'GET', agent: options.agent ?? false });
  for (const [name, value] of Object.entries(options.headers ?? {})) req.setHeader(name, value);
  if (options.keepOpen) {
    if (options.body !== undefined) req.write(options.body);
  } else req.end(options.body);
  return req;
}

/** Sends one request and reads the whole response. */
export async function send(url: string, options: SendOptions = {}): Promise<RawResponse> {
  const exchange = await open(url, options);
  const { complete } = await exchange.ended;
  const { res } = exchange;
  return {
    status: res.statusCode!,
    statusMessage: res.statusMessage ?? '',
    rawHeaders: res.rawHeaders,
    headers: res.headers,
    body: exchange.received(),
    complete,
  };
}

/** Sends one request; resolves with the response once its headers are in, its body read as it arrives. */
export function open(url: string, options: SendOptions = {}): Promise<OpenExchange> {
  return new Promise((resolve, reject) => {
    const req = begin(url, options);
    req.once('error', reject);
    req.once('response', (res) => {
      req.off('error', reject);
      req.on('error', () => undefined);
      res.on('error', () => undefined);
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      if (options.paused) res.pause();
      const ended = new Promise<{ complete: boolean }>((settle) => {
        res.once('close', () => settle({ complete: res.complete }));
      });
      resolve({
        req,
        res,
        received: () => Buffer.concat(chunks),
        text: () => Buffer.concat(chunks).toString('utf8'),
        ended,
      });
    });
  });
}

/** Writes `text` on a fresh TCP connection to `url`'s host and port; what came back once the server closed or after `waitMs`. */
export function rawExchange(url: string, text: string, waitMs = 2_000): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(Buffer.concat(chunks).toString('latin1'));
    };
    const timer = setTimeout(done, waitMs);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.once('close', done);
    socket.once('error', done);
    socket.write(text);
  });
}

/** The value of each line of header `name` in a raw header list, in order. */
export function headerLines(rawHeaders: readonly string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2)
    if (rawHeaders[i]!.toLowerCase() === name.toLowerCase()) out.push(rawHeaders[i + 1]!);
  return out;
}
