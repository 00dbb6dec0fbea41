import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { pushForwardingHeaders } from '../src/forwarded.js';

const fields = (host: string | undefined, peer: string | undefined): [string, string][] => {
  const headers: [string, string][] = [];
  pushForwardingHeaders(headers, { headers: host === undefined ? {} : { host } } as IncomingMessage, peer);
  return headers;
};

describe('the forwarding fields', () => {
  it('name each request its own Host and address, however the requests before it differ or repeat', () => {
    const cases: [string | undefined, string | undefined, string][] = [
      ['gw.example:8080', '10.0.0.5', 'host="gw.example:8080";proto=http;for=10.0.0.5'],
      ['gw.example:8080', '10.0.0.5', 'host="gw.example:8080";proto=http;for=10.0.0.5'],
      ['gw.example:8080', '::1', 'host="gw.example:8080";proto=http;for="[::1]"'],
      ['a b"c', '::1', 'host="a b\\"c";proto=http;for="[::1]"'],
      [undefined, '::1', 'proto=http;for="[::1]"'],
      [undefined, undefined, 'proto=http;for=unknown'],
      ['gw.example:8080', undefined, 'host="gw.example:8080";proto=http;for=unknown'],
      ['gw.example:8080', '10.0.0.5', 'host="gw.example:8080";proto=http;for=10.0.0.5'],
    ];
    for (const [host, peer, forwarded] of cases) {
      const headers = fields(host, peer);
      expect(headers[0], `${host} ${peer}`).toEqual(['forwarded', forwarded]);
      expect(Object.fromEntries(headers)).toEqual({
        forwarded,
        ...(host !== undefined ? { 'x-forwarded-host': host } : {}),
        'x-forwarded-proto': 'http',
        ...(peer !== undefined ? { 'x-forwarded-for': peer } : {}),
      });
    }
  });
});
