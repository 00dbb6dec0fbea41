// completed_after_cancellation end to end, seen from both sides of the gateway. The unmodified SDK 1.x
// client calls a tool with a short timeout through instrumentFetch and the gateway; when the timeout
// passes the SDK sends notifications/cancelled and rejects the call, and a real HTTP server that does
// not stop the work answers the call on its still-open stream afterwards. The SDK servers never answer
// a cancelled request, so the server is a small node:http MCP responder that holds each tools/call
// stream until the client cancels it, then sends the result. Both the instrumentation (it goes on
// reading the stream after the SDK gave the call up) and the gateway (it relays the upstream's answer)
// record the cancelled request span and the late terminal: each one's detector reports the finding
// for that request. No timing decides the outcome: the server answers only once the cancellation has
// arrived, and the cancellation leaves the client only once the server holds the call (the SDK's
// timeout starts with the call's POST, which a loaded machine can deliver after it).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { startEmbeddedDetector } from '@resumewatch/daemon';
import type { Finding } from '@resumewatch/detector';
import { instrumentFetch } from '@resumewatch/instrumentation';
import { connectSdkSession, type FetchLike } from '@resumewatch/lab';
import { FindingKind } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayMcpUrl, settleGateway, startTestGateway, waitFor } from './helpers/e2e-rig.js';

const SESSION = 'cancel-ignored-session';

interface JsonRpc {
  jsonrpc: '2.0';
  id?: number | string;
  method?: string;
  params?: { protocolVersion?: string; requestId?: number | string };
}

let server: Server;
let url: string;
/** The tools/call streams held open, by JSON-RPC id, until the client cancels them. */
const held = new Map<string, ServerResponse>();
/** The cancellations the server received, in order (the request ids they named). */
const cancelled: string[] = [];
/** Cancellations that arrived before the call they cancel (ids are a session's, so each is taken once). */
const cancelledEarly = new Set<string>();

/** The work ran to completion all the same: its result, on the call's own stream. */
function completeAnyway(stream: ServerResponse, id: number | string | undefined): void {
  sse(stream, { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'done anyway' }] } });
  stream.end();
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

function sse(res: ServerResponse, message: object): void {
  res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
}

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.method === 'GET') {
      // No standalone stream: the SDK client accepts 405.
      res.writeHead(405).end();
      return;
    }
    if (req.method === 'DELETE') {
      res.writeHead(200).end();
      return;
    }
    void readBody(req).then((body) => {
      const message = JSON.parse(body) as JsonRpc;
      if (message.method === 'initialize') {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': SESSION }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: message.id,
            result: {
              protocolVersion: message.params?.protocolVersion,
              capabilities: { tools: {} },
              serverInfo: { name: 'cancel-ignored', version: '0.0.0' },
            },
          }),
        );
        return;
      }
      if (message.method === 'tools/call' && message.id !== undefined) {
        // The work starts and is not stopped by a cancellation: its stream is held until then.
        res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': SESSION });
        res.flushHeaders();
        // A cancellation that came first (another connection) completes the work at once. The client's
        // fetch sends none before the call is held (`cancelAfterHeld`); kept so that such an order would
        // show as a missing finding rather than a test that hangs.
        if (cancelledEarly.delete(String(message.id))) return completeAnyway(res, message.id);
        held.set(String(message.id), res);
        return;
      }
      res.writeHead(202, { 'mcp-session-id': SESSION }).end();
      if (message.method !== 'notifications/cancelled') return;
      const id = String(message.params?.requestId);
      cancelled.push(id);
      const stream = held.get(id);
      if (!stream) return void cancelledEarly.add(id);
      held.delete(id);
      completeAnyway(stream, message.params?.requestId);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});

/**
 * Holds the client's notifications/cancelled until the server holds the call it names. The SDK's
 * timeout (200 ms) starts as the call is sent, and on a loaded machine the call's POST can reach the
 * gateway and the server after the cancellation, on its own connection: the gateway would then see a
 * cancellation of a request it has not yet seen. The hold makes the order the one this case is about,
 * whatever the machine's speed: call, cancellation, late result.
 */
function cancelAfterHeld(inner: FetchLike): FetchLike {
  return async (input, init) => {
    const body = typeof init?.body === 'string' ? init.body : undefined;
    if (body?.includes('notifications/cancelled')) {
      const message = JSON.parse(body) as JsonRpc;
      const id = String(message.params?.requestId);
      await waitFor(() => held.has(id), `the server to hold call ${id} before its cancellation`);
    }
    return inner(input, init);
  };
}

afterAll(async () => {
  for (const res of held.values()) res.end();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('a call the SDK client cancels at its timeout, answered by the server all the same', () => {
  it.each([
    ['without the guard', false],
    ['with the guard', true],
  ])('is completed_after_cancellation for the client and for the gateway (%s)', async (_, guard) => {
    const gateway = await startTestGateway(url);
    const client = await startEmbeddedDetector({ config: { metricsPort: 0 }, output: null });
    const provider = new BasicTracerProvider({ spanProcessors: [client.processor] });
    try {
      const fetch = cancelAfterHeld(instrumentFetch({ tracerProvider: provider, guard }) as FetchLike);
      const session = await connectSdkSession(
        'sdk',
        gatewayMcpUrl(gateway, url),
        fetch,
        'completed-after-cancellation',
      );
      const before = cancelled.length;

      // The SDK's own timeout: it sends notifications/cancelled and rejects the call.
      const outcome = await session.callTool('side_effect', {}, { timeout: 200 }).then(
        () => 'resolved',
        (error: unknown) => (error instanceof Error ? error.message : String(error)),
      );
      expect(outcome).toMatch(/timed out/i);
      const requestId = await waitFor(() => cancelled[before], 'the cancellation at the server');
      // The result reached the SDK client only after it had given the call up: it dropped it, as it must.
      await waitFor(
        () => /unknown message id/i.test(session.errors.join('\n')),
        'the SDK client to drop the late result',
      );

      const expected = (findings: readonly Finding[]) =>
        findings.filter((f) => f.kind === FindingKind.COMPLETED_AFTER_CANCELLATION && f.request_id === requestId);
      await provider.forceFlush();
      await waitFor(() => expected(client.findings()).length > 0, 'the client-side finding');
      await session.terminate().catch(() => undefined);
      await session.close();
      await settleGateway(gateway);
      await waitFor(() => expected(gateway.detector!.findings()).length > 0, 'the gateway-side finding');

      for (const [side, findings] of [
        ['client', client.findings()],
        ['gateway', gateway.detector!.findings()],
      ] as const) {
        // That request's finding, once, and nothing else.
        expect(
          findings.map((f) => f.kind),
          side,
        ).toEqual([FindingKind.COMPLETED_AFTER_CANCELLATION]);
        const [finding] = findings;
        expect(finding, side).toMatchObject({ session_id: SESSION, request_id: requestId });
        expect(finding!.span_ids, side).toHaveLength(2);
        expect(finding!.last_time_unix_ms, side).toBeGreaterThanOrEqual(finding!.first_time_unix_ms);
      }
    } finally {
      await provider.shutdown();
      await client.close();
      await gateway.close();
    }
  });
});
