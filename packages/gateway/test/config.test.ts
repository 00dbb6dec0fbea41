import { DEFAULT_DETECTOR_OPTIONS } from '@resumewatch/detector';
import { describe, expect, it } from 'vitest';
import { SHARED_OPTION_SPECS, resolveGatewayConfig } from '../src/config.js';
import { GATEWAY_DEFAULTS } from '../src/gateway.js';

const UPSTREAM = { upstream: 'http://127.0.0.1:1/mcp' };

describe("the gateway's configuration", () => {
  it("takes every option of the detector core that serve takes: the built-in detector is tuned as serve's", () => {
    const shared = new Set<string>(SHARED_OPTION_SPECS.map((s) => s.key));
    for (const key of Object.keys(DEFAULT_DETECTOR_OPTIONS)) expect(shared, key).toContain(key);
  });

  it('--reissue-settle, then RESUMEWATCH_REISSUE_SETTLE, set how long a re-issue waits for its first attempt', () => {
    expect(resolveGatewayConfig(UPSTREAM, {}).detector.reissueSettleMs).toBe(DEFAULT_DETECTOR_OPTIONS.reissueSettleMs);
    expect(resolveGatewayConfig(UPSTREAM, { RESUMEWATCH_REISSUE_SETTLE: '90s' }).detector.reissueSettleMs).toBe(90_000);
    const flagged = resolveGatewayConfig(
      { ...UPSTREAM, 'reissue-settle': '5m' },
      { RESUMEWATCH_REISSUE_SETTLE: '90s' },
    );
    expect(flagged.detector.reissueSettleMs).toBe(300_000);
    expect(() => resolveGatewayConfig({ ...UPSTREAM, 'reissue-settle': 'soon' }, {})).toThrow(/--reissue-settle/);
  });

  it('--allowed-hosts and --allowed-origins (or their variables) apply to the proxy and the metrics port alike', () => {
    const none = resolveGatewayConfig(UPSTREAM, {});
    expect(none.gateway.allowedHosts).toBeUndefined();
    expect(none.detector.allowedHosts).toBeUndefined();
    const given = resolveGatewayConfig(
      { ...UPSTREAM, 'allowed-hosts': 'mcp.example.com,gateway:9466' },
      { RESUMEWATCH_ALLOWED_ORIGINS: 'https://app.example.com' },
    );
    expect(given.gateway.allowedHosts).toEqual(['mcp.example.com', 'gateway:9466']);
    expect(given.detector.allowedHosts).toEqual(['mcp.example.com', 'gateway:9466']);
    expect(given.gateway.allowedOrigins).toEqual(['https://app.example.com']);
    expect(given.detector.allowedOrigins).toEqual(['https://app.example.com']);
    expect(() => resolveGatewayConfig({ ...UPSTREAM, 'allowed-hosts': 'a b' }, {})).toThrow(
      '--allowed-hosts: not a host name: "a b"',
    );
  });

  it('--trust-connection-reuse is off unless set; --cursor-proof-only, its earlier opposite, still works alone, never with it', () => {
    const proof = (flags: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) =>
      resolveGatewayConfig({ ...UPSTREAM, ...flags }, env).gateway.connectionProof;
    expect(proof({})).toBe(false);
    expect(proof({ 'trust-connection-reuse': true })).toBe(true);
    expect(proof({}, { RESUMEWATCH_GATEWAY_TRUST_CONNECTION_REUSE: 'true' })).toBe(true);
    expect(proof({}, { RESUMEWATCH_GATEWAY_TRUST_CONNECTION_REUSE: 'false' })).toBe(false);
    expect(proof({ 'cursor-proof-only': true })).toBe(false);
    expect(proof({}, { RESUMEWATCH_GATEWAY_CURSOR_PROOF_ONLY: 'false' })).toBe(true);
    const both = /^--trust-connection-reuse and --cursor-proof-only \(its earlier, opposite spelling\) are both set/;
    expect(() => proof({ 'trust-connection-reuse': true, 'cursor-proof-only': true })).toThrow(both);
    expect(() => proof({ 'trust-connection-reuse': true }, { RESUMEWATCH_GATEWAY_CURSOR_PROOF_ONLY: 'true' })).toThrow(
      both,
    );
  });

  it('--sse-heartbeat is off unless set; the flag over RESUMEWATCH_GATEWAY_SSE_HEARTBEAT; 0 is off', () => {
    expect(resolveGatewayConfig(UPSTREAM, {}).gateway.sseHeartbeatMs).toBe(0);
    expect(GATEWAY_DEFAULTS.sseHeartbeatMs).toBe(0);
    expect(resolveGatewayConfig(UPSTREAM, { RESUMEWATCH_GATEWAY_SSE_HEARTBEAT: '20s' }).gateway.sseHeartbeatMs).toBe(
      20_000,
    );
    expect(
      resolveGatewayConfig({ ...UPSTREAM, 'sse-heartbeat': '250ms' }, { RESUMEWATCH_GATEWAY_SSE_HEARTBEAT: '20s' })
        .gateway.sseHeartbeatMs,
    ).toBe(250);
    expect(resolveGatewayConfig({ ...UPSTREAM, 'sse-heartbeat': '0' }, {}).gateway.sseHeartbeatMs).toBe(0);
    expect(() => resolveGatewayConfig({ ...UPSTREAM, 'sse-heartbeat': 'often' }, {})).toThrow(/--sse-heartbeat/);
  });

  it('--max-connections, --header-timeout and --body-timeout: flags over environment over defaults', () => {
    expect(resolveGatewayConfig(UPSTREAM, {}).gateway).toMatchObject({
      maxConnections: GATEWAY_DEFAULTS.maxConnections,
      headerTimeoutMs: GATEWAY_DEFAULTS.headerTimeoutMs,
      bodyTimeoutMs: GATEWAY_DEFAULTS.bodyTimeoutMs,
    });
    const env = {
      RESUMEWATCH_GATEWAY_MAX_CONNECTIONS: '500',
      RESUMEWATCH_GATEWAY_HEADER_TIMEOUT: '2s',
      RESUMEWATCH_GATEWAY_BODY_TIMEOUT: '30s',
    };
    expect(resolveGatewayConfig(UPSTREAM, env).gateway).toMatchObject({
      maxConnections: 500,
      headerTimeoutMs: 2_000,
      bodyTimeoutMs: 30_000,
    });
    const flags = { ...UPSTREAM, 'max-connections': '64', 'header-timeout': '500ms', 'body-timeout': '0' };
    expect(resolveGatewayConfig(flags, env).gateway).toMatchObject({
      maxConnections: 64,
      headerTimeoutMs: 500,
      bodyTimeoutMs: 0,
    });
    expect(() => resolveGatewayConfig({ ...UPSTREAM, 'max-connections': '0' }, {})).toThrow(/--max-connections/);
  });
});
