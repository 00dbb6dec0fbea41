import { describe, expect, it } from 'vitest';
import { headerLines, rawExchange } from './helpers/raw-client.js';
import { rigPerTest } from './helpers/scripted-upstream.js';

// The request's header lines as the upstream gets them: a repeated field joined into one line, in the
// order sent, spelled as first sent; past 32 lines the repeats are found by a map, and a request without
// a Content-Length (a GET) goes as an object of fields. The lines are made straight into Node's list.

const rig = rigPerTest();

describe('request header lines to the upstream', () => {
  it('joins repeats among 120 lines, far apart and in any case, as among a few', async () => {
    const { upstream, endpoint } = await rig((_req, res) => res.writeHead(200).end());
    const lines = ['Cookie: a=1', 'X-Multi: one'];
    for (let i = 0; i < 110; i++) lines.push(`X-Filler-${i}: ${i}`);
    lines.push('x-multi: two', 'COOKIE: b=2', 'X-MULTI: three', 'X-Last: z');
    const exchange = await rawExchange(
      endpoint,
      ['POST /mcp HTTP/1.1', 'Host: 127.0.0.1', ...lines, 'Content-Length: 2', 'Connection: close', '', '{}'].join(
        '\r\n',
      ),
    );
    expect(exchange).toMatch(/^HTTP\/1\.1 200/);
    const raw = upstream.seen[0]!.rawHeaders;
    const names = raw.filter((_, i) => i % 2 === 0).filter((name) => /^(cookie|x-multi|x-last|x-filler-)/i.test(name));
    expect(names).toEqual(['Cookie', 'X-Multi', ...Array.from({ length: 110 }, (_, i) => `X-Filler-${i}`), 'X-Last']);
    expect(headerLines(raw, 'cookie')).toEqual(['a=1; b=2']);
    expect(headerLines(raw, 'x-multi')).toEqual(['one, two, three']);
    expect(headerLines(raw, 'x-filler-109')).toEqual(['109']);
    expect(headerLines(raw, 'x-last')).toEqual(['z']);
  });

  it('joins repeats of a GET, sent without a length as an object of fields', async () => {
    const { upstream, endpoint } = await rig((_req, res) => res.writeHead(200).end());
    const exchange = await rawExchange(
      endpoint,
      [
        'GET /mcp HTTP/1.1',
        'Host: 127.0.0.1',
        'Accept: text/event-stream',
        'X-Multi: one',
        'cookie: a=1',
        'x-multi: two',
        'Cookie: b=2',
        'Connection: close',
        '',
        '',
      ].join('\r\n'),
    );
    expect(exchange).toMatch(/^HTTP\/1\.1 200/);
    const seen = upstream.seen[0]!;
    expect(seen.method).toBe('GET');
    expect(headerLines(seen.rawHeaders, 'x-multi')).toEqual(['one, two']);
    expect(headerLines(seen.rawHeaders, 'cookie')).toEqual(['a=1; b=2']);
    expect(headerLines(seen.rawHeaders, 'content-length')).toEqual([]);
  });
});
