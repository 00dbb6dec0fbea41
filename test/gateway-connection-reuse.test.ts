// The "next request on the same connection" proof of receipt (packages/gateway/src/receipt-proof.ts)
// behind a real connection-pooling hop: haproxy with `http-reuse always` and no X-Forwarded-For (as an
// nginx `keepalive` upstream, Envoy, an ingress or a sidecar may be) sends two clients' requests on one
// connection to the gateway. Client A reads its call's progress event and is cut before it reads the
// result; client B's request arrives next on the pooled connection. Trusting connection reuse, the
// gateway takes B's request for A's proof of receipt and refuses A's resume: A's result is lost. By
// default it trusts only the client's cursor, and A's resume gets its result.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, type GatewayOptions, type RunningGateway } from '@resumewatch/gateway';
import { LAB_PROTOCOL_VERSION, McpHttpSession, startLabServer, type LabServer } from '@resumewatch/lab';
import { GuardAction, GuardProof } from '@resumewatch/semconv';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runHaproxy, serverConnections, type HaproxyProcess } from './helpers/haproxy.js';
import { freePort, waitFor } from './helpers/wait.js';

/**
 * A pooling hop in front of one gateway: every backend connection is shared by any client's request
 * (`http-reuse always`; haproxy's default, `safe`, shares them from a client's second request on), kept
 * idle for a minute, and no request is marked (no `option forwardfor`, no Via). One thread, so one
 * pool. Each exchange is logged with the backend connection's source port and the client's X-Client.
 */
const poolingHop = (port: number, gatewayPort: number, statsSocket: string): string => `
global
    log stdout format raw local0
    nbthread 1
    stats socket ${statsSocket} level admin

defaults
    mode http
    log global
    timeout connect 5s
    timeout client 1m
    timeout server 1m
    timeout http-keep-alive 1m
    option http-no-delay

frontend clients
    bind 127.0.0.1:${port}
    capture request header X-Client len 32
    log-format "exchange %HM %ST backend-port=%bp client=%[capture.req.hdr(0)]"
    default_backend gateway

backend gateway
    http-reuse always
    server gateway 127.0.0.1:${gatewayPort} pool-purge-delay 1m
`;

interface LoggedExchange {
  method: string;
  status: number;
  backendPort: string;
  client: string | undefined;
}

function exchanges(hop: HaproxyProcess): LoggedExchange[] {
  return hop
    .output()
    .split('\n')
    .flatMap((line) => {
      const m = /^exchange (\S+) (-?\d+) backend-port=(\S+) client=(\S*)$/.exec(line.trim());
      if (!m) return [];
      return [{ method: m[1]!, status: Number(m[2]), backendPort: m[3]!, client: m[4] || undefined }];
    });
}

/** `fetch` with the client's name on every request (haproxy logs it; the gateway ignores it). */
const named =
  (client: string): typeof fetch =>
  (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('x-client', client);
    return fetch(input, { ...init, headers });
  };

let lab: LabServer;
let gateway: RunningGateway | undefined;
let hop: HaproxyProcess | undefined;
let dir: string;
const statsSocket = (): string => join(dir, 'admin.sock');
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'resumewatch-pooling-hop-'));
  lab = await startLabServer();
});
afterEach(async () => {
  await hop?.close();
  await gateway?.close();
  hop = gateway = undefined;
});
afterAll(async () => {
  await lab.close();
  rmSync(dir, { recursive: true, force: true });
});

async function startHop(options: Partial<GatewayOptions>): Promise<string> {
  gateway = await startGateway({
    upstream: lab.url,
    host: '127.0.0.1',
    port: 0,
    enforce: true,
    detector: false,
    ...options,
  });
  const port = await freePort();
  hop = await runHaproxy(poolingHop(port, gateway.port, statsSocket()), port, 'pooling hop');
  return new URL(new URL(lab.url).pathname, hop.url).href;
}

/**
 * Client A calls a tool whose progress event comes first and result a moment later, reads the progress
 * event and reads no further: the rest of the response (the result) is left in its buffers, unread,
 * until the connection is cut (`cut`). Resolves once haproxy has written the whole response to A's
 * connection and logged the exchange: its backend connection is back in the pool.
 */
async function callAndStopReading(mcpUrl: string) {
  const a = await McpHttpSession.open(mcpUrl, named('a'));
  const call = a.toolCall('quiet_progress', { quietMs: 100, text: 'the result A needs' });
  const cut = new AbortController();
  const response = await fetch(mcpUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': a.sessionId,
      'mcp-protocol-version': LAB_PROTOCOL_VERSION,
      'x-client': 'a-call',
    },
    body: JSON.stringify(call.message),
    signal: cut.signal,
  });
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let cursor: string | undefined;
  // Events up to and including the progress notification; A's application takes nothing after it.
  while (cursor === undefined) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the call's stream ended before its progress event: ${text}`);
    text += decoder.decode(value, { stream: true });
    for (const event of text.split('\n\n').slice(0, -1))
      if (event.includes('"notifications/progress"')) cursor = /^id: ?(.*)$/m.exec(event)?.[1];
  }
  await waitFor(
    () => exchanges(hop!).find((e) => e.client === 'a-call' && e.method === 'POST'),
    "haproxy's log of A's call (its whole response written to A's connection)",
  );
  await waitFor(async () => {
    const { used, idle } = await serverConnections(statsSocket(), 'gateway', 'gateway');
    return used === 0 && idle === 1;
  }, "A's backend connection back in haproxy's pool, and no other");
  return { a, call, cursor, cut: () => cut.abort() };
}

describe('the gateway behind a connection-pooling hop (haproxy, http-reuse always, no X-Forwarded-For), --enforce', () => {
  it('trusting connection reuse (connectionProof: true), client B’s request proves a result client A never read, and A’s resume is refused: the result is lost', async () => {
    const mcpUrl = await startHop({ connectionProof: true });
    const { a, call, cursor, cut } = await callAndStopReading(mcpUrl);

    // Another client, its own session: its first request goes on the pooled connection.
    const b = await McpHttpSession.open(mcpUrl, named('b'));
    expect(b.sessionId).not.toBe(a.sessionId);
    const logged = exchanges(hop!);
    const aCall = logged.find((e) => e.client === 'a-call')!;
    const bFirst = logged.find((e) => e.client === 'b')!;
    // One backend connection carried A's call and then B's initialize.
    expect(bFirst.backendPort).toBe(aCall.backendPort);

    // A's connection is cut with the result unread; A resumes from the last event it read.
    cut();
    const resumed = await a.get(cursor);
    expect(resumed.status).toBe(405);
    expect(resumed.events.some((e) => e.message !== undefined && 'id' in e.message && e.message.id === call.id)).toBe(
      false,
    );
    // Withheld on B's request, taken for A's proof of receipt.
    expect(gateway!.counts().proofs).toEqual({ [GuardAction.RESUME_REFUSED]: { [GuardProof.NEXT_REQUEST]: 1 } });
    expect(lab.requestLog(a.sessionId).filter((r) => r.method === 'GET')).toHaveLength(0);
  });

  it('by default (only the client’s cursor proves receipt), A’s resume reaches the server and A gets its result', async () => {
    const mcpUrl = await startHop({});
    const { a, call, cursor, cut } = await callAndStopReading(mcpUrl);

    const b = await McpHttpSession.open(mcpUrl, named('b'));
    expect(b.sessionId).not.toBe(a.sessionId);
    const logged = exchanges(hop!);
    expect(logged.find((e) => e.client === 'b')!.backendPort).toBe(
      logged.find((e) => e.client === 'a-call')!.backendPort,
    );

    cut();
    const resumed = await a.get(cursor);
    expect(resumed.status).toBe(200);
    const result = resumed.events.find((e) => e.message !== undefined && 'id' in e.message && e.message.id === call.id);
    expect(result?.data).toContain('the result A needs');
    expect(gateway!.counts().actions).toEqual({});
  });
});
