// --trusted-proxies: behind a load balancer every peer is the balancer, so the gateway would take all
// its clients for one. A peer it trusts is believed for the client address it put last in
// X-Forwarded-For; any other peer's X-Forwarded-For is the client's own word and is ignored. The
// address goes upstream (X-Forwarded-For, Forwarded `for`) and scopes the matching of 2026-07-28
// re-issues. Every client here connects from 127.0.0.1: it plays the balancer when 127.0.0.1 is trusted.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID,
  ErrorType,
  FindingKind,
  SPAN_LISTENING_REFUSED,
  STATELESS_PROTOCOL_VERSION,
} from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { resolveGatewayConfig } from '../src/config.js';
import { startGateway } from '../src/index.js';
import { headerLines } from './helpers/raw-client.js';
import { rigPerTest, type SeenRequest } from './helpers/scripted-upstream.js';
import { waitFor } from './helpers/e2e-rig.js';

const rig = rigPerTest();

/** A test's own header: the upstream cuts the call's stream after one progress event. */
const CUT = 'x-test-cut';

/** The upstream answers JSON-RPC over SSE; a request with the CUT header gets one progress event, then a cut. */
function sseUpstream(req: IncomingMessage, res: ServerResponse, seen: SeenRequest): void {
  const message = JSON.parse(seen.body.toString('utf8') || '{}') as { id?: number };
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  if (req.headers[CUT] !== undefined) {
    res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress' })}\n\n`);
    setTimeout(() => res.destroy(), 20);
    return;
  }
  const result = { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'ok' }] } };
  res.end(`event: message\ndata: ${JSON.stringify(result)}\n\n`);
}

/** A 2026-07-28 `tools/call` of `charge`, sent as the client (or balancer) `forwardedFor` says. */
async function call(endpoint: string, id: number, forwardedFor: string | undefined, cut = false): Promise<void> {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': STATELESS_PROTOCOL_VERSION,
      'mcp-name': 'charge',
      ...(forwardedFor !== undefined ? { 'x-forwarded-for': forwardedFor } : {}),
      ...(cut ? { [CUT]: '1' } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'charge', arguments: { key: 'k' } },
    }),
  });
  await res.arrayBuffer().catch(() => undefined);
}

describe('--trusted-proxies', () => {
  it("takes the address a trusted peer put last in X-Forwarded-For; any other peer's is ignored", async () => {
    const cases: [string[], string | undefined, string][] = [
      // Not trusted: the client's own X-Forwarded-For is ignored, the peer is the client.
      [[], '203.0.113.5', '127.0.0.1'],
      [['10.0.0.0/8'], '203.0.113.5', '127.0.0.1'],
      // Trusted: the last entry, what the balancer appended after anything the client sent.
      [['127.0.0.1'], '203.0.113.5, 198.51.100.7', '198.51.100.7'],
      [['127.0.0.0/8', '::1'], '198.51.100.7', '198.51.100.7'],
      // Past other trusted proxies, right to left.
      [['127.0.0.1', '192.0.2.0/24'], '198.51.100.7, 192.0.2.10', '198.51.100.7'],
      // Nothing said, or nonsense: the balancer itself is the client.
      [['127.0.0.1'], undefined, '127.0.0.1'],
      [['127.0.0.1'], '198.51.100.7, not-an-address', '127.0.0.1'],
    ];
    for (const [trustedProxies, sent, client] of cases) {
      const { upstream, endpoint } = await rig(sseUpstream, { trustedProxies });
      await call(endpoint, 1, sent);
      const raw = upstream.seen.at(-1)!.rawHeaders;
      const what = `${trustedProxies.join(',')} given ${sent}`;
      expect(headerLines(raw, 'x-forwarded-for'), what).toEqual([client]);
      expect(headerLines(raw, 'forwarded')[0], what).toMatch(new RegExp(`;for=${client.replace(/\./g, '\\.')}$`));
    }
  });

  it("scopes re-issues by that address: behind one balancer, another client's same call is no re-issue", async () => {
    const linkOf = async (trustedProxies: string[]) => {
      const exporter = new InMemorySpanExporter();
      const { endpoint } = await rig(sseUpstream, {
        trustedProxies,
        spanProcessors: [new SimpleSpanProcessor(exporter)],
      });
      // Alice's call breaks; Bob, behind the same balancer, makes the same call; Alice re-issues hers.
      await call(endpoint, 1, '198.51.100.1', true);
      await call(endpoint, 2, '198.51.100.2');
      await call(endpoint, 3, '198.51.100.1');
      const spans = await waitFor(() => {
        const calls = exporter
          .getFinishedSpans()
          .filter((s) => s.name.startsWith('tools/call') && s.attributes[ATTR_GEN_AI_TOOL_NAME] === 'charge');
        return calls.length === 3 && calls;
      }, 'three charge spans');
      const byId = (id: string) => spans.find((s) => s.attributes[ATTR_JSONRPC_REQUEST_ID] === id)!;
      expect(byId('1').attributes[ATTR_ERROR_TYPE]).toBe(ErrorType.STREAM_BROKEN);
      return {
        bob: byId('2').attributes[ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID],
        alice: byId('3').attributes[ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID],
        first: byId('1').spanContext().spanId,
      };
    };
    const trusted = await linkOf(['127.0.0.1']);
    expect(trusted.bob).toBeUndefined();
    expect(trusted.alice).toBe(trusted.first);
    // Without it, both are the balancer's address: Bob's call is taken for Alice's re-issue.
    const untrusted = await linkOf([]);
    expect(untrusted.bob).toBe(untrusted.first);
  });

  it("keys a stateless server's listening re-opens by that address: one looping client behind the balancer, one loop", async () => {
    // A server without sessions and without a listening stream: every GET answered 405.
    const refuse = (_req: IncomingMessage, res: ServerResponse): void => {
      res.writeHead(405, { allow: 'POST', 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Method not allowed.' } }));
    };
    const listen = async (endpoint: string, forwardedFor: string): Promise<void> => {
      const res = await fetch(endpoint, {
        headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', 'x-forwarded-for': forwardedFor },
      });
      await res.arrayBuffer().catch(() => undefined);
    };
    const exporter = new InMemorySpanExporter();
    const { gateway, endpoint } = await rig(refuse, {
      trustedProxies: ['127.0.0.1'],
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    // Alice re-opens hers again and again; Bob and Carol, behind the same balancer, stop after one 405 each.
    for (let i = 0; i < 8; i++) await listen(endpoint, '198.51.100.1');
    await listen(endpoint, '198.51.100.2');
    await listen(endpoint, '198.51.100.3');
    const refused = await waitFor(() => {
      const spans = exporter.getFinishedSpans().filter((s) => s.name === SPAN_LISTENING_REFUSED);
      return spans.length === 10 && spans;
    }, 'ten refused GETs');
    const by = (address: string) => refused.filter((s) => s.attributes[ATTR_CLIENT_ADDRESS] === address).length;
    expect([by('198.51.100.1'), by('198.51.100.2'), by('198.51.100.3')]).toEqual([8, 1, 1]);
    const loops = await waitFor(() => {
      const found = gateway.detector!.findings().filter((f) => f.kind === FindingKind.LISTENING_STREAM_LOOP);
      return found.length > 0 && found;
    }, 'the listening_stream_loop');
    expect(loops).toMatchObject([{ session_id: '', client: '198.51.100.1', status_code: 405 }]);
  });

  it('refuses an entry that is not an address or address/prefix, in one line', async () => {
    const upstream = { upstream: 'http://127.0.0.1:1/mcp' };
    expect(resolveGatewayConfig({ ...upstream, 'trusted-proxies': '10.0.0.5, 10.1.0.0/16' }, {}).gateway).toMatchObject(
      { trustedProxies: ['10.0.0.5', '10.1.0.0/16'] },
    );
    expect(
      resolveGatewayConfig(upstream, { RESUMEWATCH_GATEWAY_TRUSTED_PROXIES: 'fd00::/8' }).gateway.trustedProxies,
    ).toEqual(['fd00::/8']);
    for (const bad of ['haproxy', '10.0.0.0/33', '10.0.0.1/8/1', '::1/129'])
      expect(() => resolveGatewayConfig({ ...upstream, 'trusted-proxies': bad }, {})).toThrow(
        new RegExp(`^--trusted-proxies: trusted proxy "${bad.replace(/[./]/g, '\\$&')}" is not an IP address`),
      );
    await expect(startGateway({ upstream: upstream.upstream, port: 0, trustedProxies: ['nope'] })).rejects.toThrow(
      /trusted proxy "nope"/,
    );
  });
});
