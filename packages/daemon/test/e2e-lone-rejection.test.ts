// The detector and the guard agree on a lone 400/409. A real server that answers a resume with 409 (as
// the MCP SDK server does while it holds a dropped connection), over loopback; a client that resumes
// once, is rejected and gives the request up (it cancels it, as many do after one rejection). The guard
// on the instrumented fetch confirms the failed resumption at the request's end; the detector, fed the
// same fetch's real spans in process, reports cursor_lost for the same request.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { instrumentFetch } from '@resumewatch/instrumentation';
import type { GuardOptions } from '@resumewatch/instrumentation';
import { ATTR_SERVICE_NAME, FindingKind, ResumeEvidence, ResumeOutcome } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ResumewatchSpanProcessor, type Finding } from '@resumewatch/detector';

type FailedResumption = Parameters<NonNullable<GuardOptions['onFailedResumption']>>[0];

const SESSION = 'lone-409-session';
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.method === 'GET') {
      // The stream's connection is still held: the cursor is refused for now.
      res.writeHead(409, { 'content-type': 'text/plain' }).end('Conflict: stream already has an active connection');
      return;
    }
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const message = JSON.parse(body) as { id?: number; method: string };
      if (message.id === undefined) {
        res.writeHead(202, { 'mcp-session-id': SESSION }).end();
        return;
      }
      // The tool's stream: a priming event and one progress event, then the connection breaks.
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': SESSION });
      res.write('id: ev-1\ndata: \n\n');
      res.write(
        `id: ev-2\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } })}\n\n`,
      );
      setTimeout(() => res.socket?.destroy(), 20);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const headers = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-session-id': SESSION,
  'mcp-protocol-version': '2025-11-25',
};

describe('a lone 409, then the request given up', () => {
  it('is a failed resumption for the guard and cursor_lost for the detector, for the same request', async () => {
    const findings: Finding[] = [];
    const processor = new ResumewatchSpanProcessor({ onFinding: (f) => findings.push(f), tickMs: 0 });
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'lone-409' }),
      spanProcessors: [processor],
    });
    const failed: FailedResumption[] = [];
    const fetch = instrumentFetch({ tracerProvider: provider, guard: { onFailedResumption: (r) => failed.push(r) } });

    const call = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'slow', arguments: {} } }),
    });
    await call.text().catch(() => undefined); // the stream breaks mid-call
    const resumed = await fetch(url, { method: 'GET', headers: { ...headers, 'last-event-id': 'ev-2' } });
    expect(resumed.status).toBe(409);
    await resumed.text();
    // One rejection: not yet a failure (the SDK server's 409 is often transient).
    expect(failed).toEqual([]);
    expect(findings).toEqual([]);
    // The client gives the request up.
    const cancel = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } }),
    });
    expect(cancel.status).toBe(202);

    await vi.waitFor(() => expect(failed).toHaveLength(1), { timeout: 5_000, interval: 20 });
    expect(failed[0]).toMatchObject({
      requestId: '7',
      outcome: ResumeOutcome.CURSOR_REJECTED,
      evidence: ResumeEvidence.REQUEST_END,
    });
    await vi.waitFor(() => expect(findings.map((f) => f.kind)).toEqual([FindingKind.CURSOR_LOST]), {
      timeout: 5_000,
      interval: 20,
    });
    expect(findings[0]).toMatchObject({
      service: 'lone-409',
      session_id: SESSION,
      request_id: '7',
      outcome: ResumeOutcome.CURSOR_REJECTED,
    });
    await provider.shutdown();
  });
});
