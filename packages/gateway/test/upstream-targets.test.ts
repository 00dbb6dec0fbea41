// A plain request target goes upstream without a URL object (UpstreamTargets): what Node's client is
// given must be exactly what `new URL(origin + target)` would give it, for any target a client sends.
import { urlToHttpOptions } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { UpstreamTargets } from '../src/upstream.js';

/** Every byte class the URL parser treats differently: plain, sub-delimiters, encoded, rewritten, non-ASCII. */
const CHARS = [...'aZ09-._~!$&\'()*+,;=:@/?%#\\ "<>{}|^`[]\t', 'é', '%2e', '%2F', '..', '.'];
const target = fc.array(fc.constantFrom(...CHARS), { maxLength: 24 }).map((parts) => `/${parts.join('')}`);

function expectSameAsUrl(upstream: string, t: string): void {
  const got = new UpstreamTargets(new URL(upstream)).of(t);
  const url = new URL(new URL(upstream).origin + t);
  const want = urlToHttpOptions(url);
  expect(got.href, t).toBe(url.href);
  expect(got.https, t).toBe(url.protocol === 'https:');
  for (const key of ['protocol', 'hostname', 'port', 'path', 'auth'] as const)
    expect(got.options[key], `${t}: ${key}`).toEqual(want[key]);
}

describe('UpstreamTargets', () => {
  it('gives Node the URL text and request options `new URL` gives, for any target', () => {
    for (const upstream of ['http://127.0.0.1:3000/mcp', 'https://upstream.test/', 'http://user:pw@127.0.0.1:81/'])
      fc.assert(
        fc.property(target, (t) => expectSameAsUrl(upstream, t)),
        { seed: 29, numRuns: 500 },
      );
  });

  it('keeps a target that reads as another host on the upstream', () => {
    for (const t of ['//evil.test/x', '/\\evil.test/x', '/./../x', '/%2e%2e/x', '/a/b/../../..//evil.test'])
      expectSameAsUrl('http://127.0.0.1:3000/mcp', t);
    expect(new UpstreamTargets(new URL('http://127.0.0.1:3000/')).of('//evil.test/x').options.hostname).toBe(
      '127.0.0.1',
    );
  });
});
