import type { IncomingHttpHeaders } from 'node:http';
import { HEADER_TASK_ID } from '@resumewatch/semconv';
import { FORWARDING_FIELDS } from './forwarded.js';

/**
 * Header fields that belong to one connection, not to the message (RFC 9110, 7.6.1), plus those a
 * proxy sets itself: `host` (the upstream's), `expect` (the gateway has read the whole body before
 * it forwards it, so the 100-continue handshake is over), the forwarding fields (forwarded.ts) and the
 * task a JSON answer created (HEADER_TASK_ID: only the gateway names it, for the balancer in front).
 */
const HOP_BY_HOP = new Set([
  'connection',
  'proxy-connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'expect',
  ...FORWARDING_FIELDS,
  HEADER_TASK_ID,
]);

/** The field names the Connection header lists: hop-by-hop for this message too. */
function connectionListed(connection: string | string[] | undefined): Set<string> | undefined {
  // `keep-alive`, what Node's clients and servers send, lists a field that is hop-by-hop anyway.
  if (connection === undefined || connection === 'keep-alive') return undefined;
  const text = Array.isArray(connection) ? connection.join(',') : connection;
  const names = new Set<string>();
  for (const name of text.split(',')) {
    const trimmed = name.trim().toLowerCase();
    if (trimmed) names.add(trimmed);
  }
  return names;
}

/**
 * The end-to-end fields of a request from Node's raw header list, in order, repeated fields kept, less
 * `content-length`: the forwarder sets it for the body it read whole (a chunked upload included).
 */
export function endToEndRequestHeaders(
  rawHeaders: readonly string[],
  headers: IncomingHttpHeaders,
): [string, string][] {
  const listed = connectionListed(headers.connection);
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || lower === 'content-length' || listed?.has(lower)) continue;
    out.push([name, rawHeaders[i + 1]!]);
  }
  return out;
}

/**
 * The end-to-end fields of an upstream response from Node's raw header list, for `writeHead`: names as
 * the upstream spelled them, in order, repeated fields (Set-Cookie) kept as separate lines; less
 * `content-length` when the body may be filtered (`filtered`): the length is then no longer the upstream's.
 */
export function endToEndResponseHeaders(rawHeaders: readonly string[], filtered = false): string[] {
  // One pass, each name lower-cased once (a builtin call per name, on every response); the fields a
  // Connection header lists (other than keep-alive: rare) are taken out of what it kept afterwards.
  let connection: string[] | undefined;
  const out: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const lower = rawHeaders[i]!.toLowerCase();
    if (lower === 'connection') (connection ??= []).push(rawHeaders[i + 1]!);
    if (HOP_BY_HOP.has(lower) || (filtered && lower === 'content-length')) continue;
    out.push(rawHeaders[i]!, rawHeaders[i + 1]!);
  }
  const listed = connectionListed(connection?.length === 1 ? connection[0] : connection);
  if (listed === undefined) return out;
  const left: string[] = [];
  for (let i = 0; i + 1 < out.length; i += 2) if (!listed.has(out[i]!.toLowerCase())) left.push(out[i]!, out[i + 1]!);
  return left;
}
