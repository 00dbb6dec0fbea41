import { GatewayRefusal } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_CONFIG, resolveConfig } from '../src/index.js';
import { hostCheck, isLoopbackAddress } from '../src/host-policy.js';

const HOST = GatewayRefusal.HOST_NOT_ALLOWED;
const ORIGIN = GatewayRefusal.ORIGIN_NOT_ALLOWED;

describe('the Host and Origin check', () => {
  it('knows the loopback addresses a listener binds to', () => {
    for (const address of [
      '127.0.0.1',
      '127.0.0.2',
      '127.255.0.9',
      '::1',
      'localhost',
      'LOCALHOST',
      '::ffff:127.0.0.1',
    ])
      expect(isLoopbackAddress(address), address).toBe(true);
    for (const address of ['0.0.0.0', '::', '10.0.0.5', '128.0.0.1', 'gateway', '::ffff:10.0.0.1', 'localhost.example'])
      expect(isLoopbackAddress(address), address).toBe(false);
  });

  it('checks each Host on its own when they alternate (the last one parsed is kept)', () => {
    const check = hostCheck({ bindHost: '127.0.0.1' });
    for (let i = 0; i < 3; i++) {
      expect(check('127.0.0.1:8080', undefined)).toBeUndefined();
      expect(check('127.0.0.1:8080', undefined)).toBeUndefined();
      expect(check('attacker.example', undefined)?.reason).toBe(GatewayRefusal.HOST_NOT_ALLOWED);
      expect(check('attacker.example', 'http://attacker.example')?.reason).toBe(GatewayRefusal.HOST_NOT_ALLOWED);
      expect(check(undefined, undefined)?.reason).toBe(GatewayRefusal.HOST_NOT_ALLOWED);
      expect(check('localhost:1', 'http://localhost:1')).toBeUndefined();
    }
  });

  it('on loopback, takes only loopback names (any port) and the bound address, and requires a Host', () => {
    const check = hostCheck({ bindHost: '127.0.0.2' });
    for (const host of [
      'localhost',
      'localhost:8080',
      '127.0.0.1',
      '127.0.0.1:1',
      '[::1]',
      '[::1]:9464',
      '127.0.0.2:80',
    ])
      expect(check(host, undefined), host).toBeUndefined();
    for (const host of [
      'attacker.example',
      'attacker.example:8080',
      '127.0.0.3',
      'localhost.',
      '127.0.0.1@attacker.example',
      'a/b',
      '',
    ])
      expect(check(host, undefined)?.reason, host).toBe(HOST);
    expect(check(undefined, undefined)).toEqual({ reason: HOST, message: 'no Host header (--allowed-hosts)' });
    // The answer quotes a bounded part of what was sent.
    expect(check('x'.repeat(5000), undefined)!.message.length).toBeLessThan(200);
  });

  it('on loopback, takes an Origin on a loopback name or its own, refuses any other (and the opaque null)', () => {
    const check = hostCheck({ bindHost: '::1' });
    for (const origin of ['http://localhost:6274', 'https://127.0.0.1', 'http://[::1]:8080'])
      expect(check('[::1]:8080', origin), origin).toBeUndefined();
    for (const origin of [
      'http://attacker.example',
      'null',
      'file://',
      'chrome-extension://abc',
      'http://localhost/path',
      'x',
    ])
      expect(check('[::1]:8080', origin)?.reason, origin).toBe(ORIGIN);
  });

  it('off loopback with no list, takes any Host (a load balancer names it) and only a same-origin Origin', () => {
    const check = hostCheck({ bindHost: '0.0.0.0' });
    for (const host of ['mcp.example.com', 'gateway:8081', '10.0.0.5:9464', undefined])
      expect(check(host, undefined), String(host)).toBeUndefined();
    expect(check('mcp.example.com', 'https://mcp.example.com')).toBeUndefined();
    expect(check('mcp.example.com:443', 'https://mcp.example.com')).toBeUndefined();
    expect(check('mcp.example.com:8443', 'https://mcp.example.com:8443')).toBeUndefined();
    for (const [host, origin] of [
      ['mcp.example.com', 'https://app.example.com'],
      ['mcp.example.com', 'https://mcp.example.com:8443'],
      ['mcp.example.com:8080', 'http://mcp.example.com'],
      ['mcp.example.com', 'http://localhost:6274'],
      [undefined, 'https://mcp.example.com'],
    ] as const)
      expect(check(host, origin)?.reason, `${host} ${origin}`).toBe(ORIGIN);
  });

  it('with lists: names (name:port for one port only) and origins; * accepts any', () => {
    const check = hostCheck({
      bindHost: '127.0.0.1',
      allowedHosts: ['mcp.example.com', 'internal:9000'],
      allowedOrigins: ['https://app.example.com'],
    });
    expect(check('mcp.example.com:1234', undefined)).toBeUndefined();
    expect(check('internal:9000', undefined)).toBeUndefined();
    expect(check('internal', undefined)?.reason).toBe(HOST);
    expect(check('localhost', undefined)?.reason).toBe(HOST);
    expect(check('mcp.example.com', 'https://app.example.com')).toBeUndefined();
    expect(check('mcp.example.com', 'https://APP.example.com:443')).toBeUndefined();
    expect(check('mcp.example.com', 'https://app.example.com:444')?.reason).toBe(ORIGIN);
    expect(hostCheck({ bindHost: '127.0.0.1', allowedHosts: ['*'] })('attacker.example', undefined)).toBeUndefined();
    expect(hostCheck({ bindHost: '127.0.0.1', allowedOrigins: ['*'] })('localhost', 'null')).toBeUndefined();
    expect(() => hostCheck({ bindHost: '127.0.0.1', allowedHosts: ['a/b'] })).toThrow(TypeError);
  });

  it('--allowed-hosts and --allowed-origins: comma-separated, from flags or the environment, bad entries refused on one line', () => {
    expect(DEFAULT_CONFIG.allowedHosts).toBeUndefined();
    expect(resolveConfig({ 'allowed-hosts': ' mcp.example.com, [::1]:9464 ,' }, {}).allowedHosts).toEqual([
      'mcp.example.com',
      '[::1]:9464',
    ]);
    expect(
      resolveConfig({}, { RESUMEWATCH_ALLOWED_ORIGINS: 'https://a.example,http://b.example:8080' }).allowedOrigins,
    ).toEqual(['https://a.example', 'http://b.example:8080']);
    const bad: [Record<string, string>, Record<string, string>, string][] = [
      [{ 'allowed-hosts': 'a.example,http://b.example' }, {}, '--allowed-hosts: not a host name: "http://b.example"'],
      [{ 'allowed-hosts': ',' }, {}, '--allowed-hosts: no host name given (use * to accept any)'],
      [
        {},
        { RESUMEWATCH_ALLOWED_ORIGINS: 'app.example.com' },
        'RESUMEWATCH_ALLOWED_ORIGINS: not an origin: "app.example.com"',
      ],
      [{ 'allowed-origins': 'https://a.example/path' }, {}, '--allowed-origins: not an origin'],
    ];
    for (const [flags, env, message] of bad) {
      expect(() => resolveConfig(flags, env)).toThrow(ConfigError);
      expect(() => resolveConfig(flags, env)).toThrow(message);
    }
  });
});
