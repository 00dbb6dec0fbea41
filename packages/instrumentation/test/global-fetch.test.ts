import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { runScenario, startLabServer } from '@resumewatch/lab';
import type { LabServer } from '@resumewatch/lab';
import {
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_TERMINAL_DUPLICATE,
  SPAN_REQUEST_TERMINAL,
  SPAN_STREAM_RESUME,
  TRACER_SCOPE,
} from '@resumewatch/semconv';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { patchGlobalFetch } from '../src/global-fetch.js';
import type { GlobalFetchPatch } from '../src/global-fetch.js';
import { instrumentFetch } from '../src/index.js';
import { recogniseMcpExchange } from '../src/mcp-exchange.js';
import { startOtlpReceiver } from './helpers/otlp-receiver.js';
import { connectSdkClient } from './helpers/sdk-client.js';
import { startSdkServer } from './helpers/sdk-server.js';
import type { SdkServer } from './helpers/sdk-server.js';
import { attr, captureSpans, IDLE, WAIT } from './helpers/spans.js';
import type { SpanCapture } from './helpers/spans.js';

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

let server: SdkServer;
let lab: LabServer;
beforeAll(async () => {
  server = await startSdkServer();
  lab = await startLabServer({ retryIntervalMs: 50 });
});
afterAll(async () => {
  await Promise.all([server.close(), lab.close()]);
});

let patch: GlobalFetchPatch | undefined;
afterEach(() => {
  patch?.restore();
  patch = undefined;
});

function patchWith(capture: SpanCapture): GlobalFetchPatch {
  const tracer = capture.provider.getTracer(TRACER_SCOPE);
  patch = patchGlobalFetch({}, () => tracer);
  return patch;
}

const sessionsOf = (capture: SpanCapture, name: string) => capture.spans(name).map((s) => attr(s, ATTR_MCP_SESSION_ID));

describe('the global fetch patch (register)', () => {
  it('instruments SDK v1, SDK v2 and concurrent clients given no fetch option, each session apart', async () => {
    const capture = captureSpans();
    const p = patchWith(capture);
    // Two v1 clients initialize at once: the same JSON-RPC id 0 on the same origin, before any session exists.
    const [a, b] = await Promise.all([connectSdkClient(server.url), connectSdkClient(server.url)]);
    const v2 = new ClientV2({ name: 'v2', version: '1.0.0' });
    await v2.connect(new TransportV2(new URL(server.url)));
    await Promise.all([
      a.client.callTool({ name: 'stream_progress', arguments: { count: 2 } }),
      b.client.callTool({ name: 'stream_progress', arguments: { count: 3 } }),
      v2.callTool({ name: 'tool_error' }),
    ]);
    const ids = [a.transport.sessionId, b.transport.sessionId, v2.transport?.sessionId];
    await Promise.all([a.close(), b.close(), v2.close()]);

    expect(new Set(ids).size).toBe(3);
    expect(sessionsOf(capture, 'initialize').sort()).toEqual([...ids].sort());
    expect(sessionsOf(capture, 'tools/call stream_progress').sort()).toEqual([ids[0], ids[1]].sort());
    expect(sessionsOf(capture, 'tools/call tool_error')).toEqual([ids[2]]);
    // One terminal per request (3 initialize, 3 calls), none a duplicate: no state crossed sessions.
    const terminals = capture.spans(SPAN_REQUEST_TERMINAL);
    expect(terminals).toHaveLength(6);
    expect(terminals.every((t) => attr(t, ATTR_MCP_TERMINAL_DUPLICATE) === false)).toBe(true);
    expect(p.stats()).toMatchObject({ sessions: 3, evictedSessions: 0, ...IDLE });
  });

  it("instruments the lab's own fetch client: the seed loop's duplicates and resumes", async () => {
    const capture = captureSpans();
    patchWith(capture);
    const summary = await runScenario('seed-loop', {
      serverUrl: lab.url,
      controlUrl: lab.controlUrl,
      maxReconnects: 10,
    });
    await vi.waitFor(
      () => expect(capture.spans(SPAN_STREAM_RESUME).length, 'every resume span').toBe(summary.resumeStatuses.length),
      WAIT,
    );
    const terminals = capture
      .spans(SPAN_REQUEST_TERMINAL)
      .filter((t) => attr(t, ATTR_MCP_SESSION_ID) === summary.sessionId);
    const duplicates = terminals.filter((t) => attr(t, ATTR_MCP_TERMINAL_DUPLICATE) === true);
    expect(duplicates).toHaveLength(summary.terminalDeliveries - 1);
    expect(capture.spans(SPAN_STREAM_RESUME).at(-1)?.attributes[ATTR_MCP_RESUME_OUTCOME]).toBe('session_not_found');
  });

  it('passes every other fetch to the original fetch with its arguments as given, and returns its response as is', async () => {
    const calls: [unknown, unknown][] = [];
    const answer = new Response('x');
    const spy = (async (input: unknown, init: unknown) => {
      calls.push([input, init]);
      return answer;
    }) as typeof fetch;
    const before = globalThis.fetch;
    globalThis.fetch = spy;
    try {
      patchWith(captureSpans());
      const plain: [string, RequestInit | undefined][] = [
        ['http://127.0.0.1:1/a', undefined],
        [
          'http://127.0.0.1:1/b',
          {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: '{"jsonrpc":"2.0","id":1,"method":"x"}',
          },
        ],
        ['http://127.0.0.1:1/c', { headers: { accept: 'text/event-stream' } }],
        [
          'http://127.0.0.1:1/d',
          { method: 'POST', headers: { Accept: 'text/event-stream' }, body: '{"not":"json-rpc"}' },
        ],
        [
          'http://127.0.0.1:1/e',
          { method: 'POST', headers: { accept: 'text/event-stream' }, body: new ReadableStream() },
        ],
      ];
      for (const [input, init] of plain) {
        calls.length = 0;
        expect(await globalThis.fetch(input, init)).toBe(answer);
        expect(calls).toHaveLength(1);
        expect(calls[0]![0]).toBe(input);
        expect(calls[0]![1]).toBe(init);
      }
    } finally {
      patch?.restore();
      patch = undefined;
      globalThis.fetch = before;
    }
  });

  it('recognises MCP exchanges by their headers or an SSE-accepting JSON-RPC body, in every header form', () => {
    const url = 'http://127.0.0.1:9/mcp';
    expect(recogniseMcpExchange(url, { headers: { 'Mcp-Session-Id': 's1' } })).toEqual({
      origin: 'http://127.0.0.1:9',
      sessionId: 's1',
    });
    expect(
      recogniseMcpExchange(new URL(url), { headers: new Headers({ 'mcp-protocol-version': '2025-11-25' }) }),
    ).toEqual({
      origin: 'http://127.0.0.1:9',
      sessionId: undefined,
    });
    expect(recogniseMcpExchange(new Request(url, { headers: [['mcp-session-id', 's2']] }), undefined)?.sessionId).toBe(
      's2',
    );
    const initialize = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}';
    expect(
      recogniseMcpExchange(url, {
        method: 'POST',
        headers: [['accept', 'application/json, text/event-stream']],
        body: initialize,
      }),
    ).toBeDefined();
    expect(
      recogniseMcpExchange(url, {
        method: 'POST',
        headers: { accept: 'text/event-stream' },
        body: new TextEncoder().encode(initialize),
      }),
    ).toBeDefined();
    expect(
      recogniseMcpExchange(url, { method: 'POST', headers: { accept: 'application/json' }, body: initialize }),
    ).toBeUndefined();
    expect(recogniseMcpExchange(url, undefined)).toBeUndefined();
  });

  it('records nothing twice: a manual instrumentFetch under the patch, and the patch under it, give one set of spans', async () => {
    const global = captureSpans();
    patchWith(global);
    const manual = captureSpans();
    const c = await connectSdkClient(server.url, instrumentFetch({ tracerProvider: manual.provider }));
    await c.client.callTool({ name: 'stream_progress', arguments: { count: 1 } });
    await c.close();
    expect(manual.spans('tools/call stream_progress')).toHaveLength(1);
    expect(manual.spans(SPAN_REQUEST_TERMINAL)).toHaveLength(2);
    expect(global.exporter.getFinishedSpans()).toEqual([]);
    expect(patch!.stats().sessions).toBe(0);
  });
});

describe('register and a CLI that ends with process.exit()', () => {
  it(
    '`resumewatch-lab run seed-loop` under --import register exports the loop before it exits',
    { timeout: 60_000 },
    async () => {
      const receiver = await startOtlpReceiver();
      try {
        const register = fileURLToPath(new URL('../dist/register.js', import.meta.url));
        const labCli = fileURLToPath(new URL('../../lab/dist/cli.js', import.meta.url));
        const child = spawn(
          process.execPath,
          ['--import', register, labCli, 'run', 'seed-loop', '--server', lab.url, '--json'],
          {
            env: {
              ...process.env,
              OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
              OTEL_SERVICE_NAME: 'lab-cli',
              OTEL_TRACES_EXPORTER: '',
              OTEL_BSP_SCHEDULE_DELAY: '60000',
            },
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
        expect(code, stderr).toBe(0);
        const summary = JSON.parse(stdout) as { sessionId: string; terminalDeliveries: number };
        // The batch delay (60 s) never passed: every span here was flushed by the held exit.
        const terminals = receiver.spans.filter(
          (s) => s.name === SPAN_REQUEST_TERMINAL && s.attributes[ATTR_MCP_SESSION_ID] === summary.sessionId,
        );
        expect(terminals.filter((t) => t.attributes[ATTR_MCP_TERMINAL_DUPLICATE] === true)).toHaveLength(
          summary.terminalDeliveries - 1,
        );
        expect(new Set(receiver.spans.map((s) => s.service))).toEqual(new Set(['lab-cli']));
      } finally {
        await receiver.close();
      }
    },
  );
});

describe('register and a CLI that exits before recording anything', () => {
  it(
    '`resumewatch-lab run` with a bad scenario still exits at once with its usage error and code',
    { timeout: 30_000 },
    async () => {
      const register = fileURLToPath(new URL('../dist/register.js', import.meta.url));
      const labCli = fileURLToPath(new URL('../../lab/dist/cli.js', import.meta.url));
      const child = spawn(
        process.execPath,
        ['--import', register, labCli, 'run', 'no-such-scenario', '--server', lab.url],
        {
          env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_TRACES_EXPORTER: '' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      // Held, the exit would let the CLI run on past its process.exit(2) into the unknown scenario.
      expect(code, stderr).toBe(2);
      expect(stderr).toContain('no-such-scenario');
      expect(stderr).not.toMatch(/\n\s+at /);
    },
  );
});

describe('register on an MCP SDK server', () => {
  it(
    'the lab server under --import register reports its replays (instrumentEventStore) and requests (instrumentServerTransport)',
    { timeout: 60_000 },
    async () => {
      const receiver = await startOtlpReceiver();
      const register = fileURLToPath(new URL('../dist/register.js', import.meta.url));
      const labCli = fileURLToPath(new URL('../../lab/dist/cli.js', import.meta.url));
      const port = await freePort();
      const child = spawn(
        process.execPath,
        ['--import', register, labCli, 'server', '--port', String(port), '--retry-ms', '50'],
        {
          env: {
            ...process.env,
            OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
            OTEL_SERVICE_NAME: 'lab-server',
            OTEL_TRACES_EXPORTER: '',
            OTEL_BSP_SCHEDULE_DELAY: '60000',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      try {
        const url = `http://127.0.0.1:${port}/mcp`;
        await vi.waitFor(
          () =>
            fetch(url).catch((error: unknown) =>
              Promise.reject(new Error(`the lab server to listen: ${stdout}`, { cause: error })),
            ),
          WAIT,
        );
        const summary = await runScenario('seed-loop', {
          serverUrl: url,
          controlUrl: url.replace(/\/mcp$/, '/control'),
          maxReconnects: 10,
        });
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
        const ofSession = receiver.spans.filter((s) => s.attributes[ATTR_MCP_SESSION_ID] === summary.sessionId);
        expect(ofSession.filter((s) => s.name === 'tools/call stream_progress')).toHaveLength(1);
        const replays = ofSession.filter((s) => s.name === SPAN_STREAM_RESUME);
        // Each replay of the stored result is a server resume span after the terminal (the 404 is answered before the store).
        expect(replays).toHaveLength(summary.resumeStatuses.filter((status) => status === 200).length);
        for (const r of replays) {
          expect(r.attributes[ATTR_MCP_REQUEST_TERMINAL_OBSERVED]).toBe(true);
          expect(r.attributes[ATTR_MCP_RESUME_REPLAYED_TERMINAL]).toBe(true);
        }
      } finally {
        child.kill('SIGKILL');
        await receiver.close();
      }
    },
  );
});
