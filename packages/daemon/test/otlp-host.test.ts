import { request } from 'node:http';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as HttpExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Client, Metadata, credentials, status } from '@grpc/grpc-js';
import { ROUTE_FINDINGS } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/index.js';
import { emit, otlpJson, providerWith } from '../../detector/test/helpers/otlp.js';
import { seedScenario } from '../../detector/test/helpers/spans.js';
import { waitFor } from '../../detector/test/helpers/wait.js';

/*
 * serve's OTLP receivers against DNS rebinding: a page on attacker.example whose name is re-pointed at
 * 127.0.0.1 posts spans to the OTLP/HTTP port as its own origin, and would feed the detector made-up
 * findings (and its alerts). The receivers take the metrics port's check (host-policy.ts: the same
 * --allowed-hosts and --allowed-origins, loopback names by default on a loopback --host) and give its
 * answer: 403, and the same line, here as an OTLP Status. Every request goes to 127.0.0.1; only its
 * Host (or Origin, or gRPC :authority) says otherwise.
 */

const EXPORT = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';

interface Answer {
  status: number;
  contentType: string | undefined;
  body: string;
}

function send(port: number, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: body === undefined ? 'GET' : 'POST', headers, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, contentType: res.headers['content-type'], body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The seed spans of `session`, as an OTLP/HTTP JSON body. */
const seedBody = (session: string): string => JSON.stringify(otlpJson(seedScenario({ session, request: 1 }, 3)));
const JSON_HEADERS = { 'content-type': 'application/json' };

/** A raw gRPC Export call with `authority` as its :authority; resolves with its status (`{}`: OK). */
async function grpcExport(port: number, authority: string): Promise<{ code?: number; details?: string }> {
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure(), {
    'grpc.default_authority': authority,
  });
  try {
    return await new Promise((resolve) =>
      client.makeUnaryRequest(
        EXPORT,
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.alloc(0),
        new Metadata(),
        (err) => resolve(err ?? {}),
      ),
    );
  } finally {
    client.close();
  }
}

describe('serve on 127.0.0.1: its OTLP receivers check Host (and Origin, and gRPC :authority)', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ port: 0, grpcPort: 0, metricsPort: 0, output: null });
  });
  afterAll(() => server.close());

  it('spans posted under a rebound Host are refused before they are read: 403, the metrics port’s line, as an OTLP Status', async () => {
    for (const host of ['attacker.example', `attacker.example:${server.httpPort}`]) {
      const refused = await send(server.httpPort, '/v1/traces', { ...JSON_HEADERS, host }, seedBody('rebound'));
      expect(refused.status, host).toBe(403);
      expect(refused.contentType).toBe('application/json');
      // The metrics port's answer to the same Host, word for word (and the gateway's message).
      const metrics = await send(server.metricsPort, ROUTE_FINDINGS, { host });
      expect(metrics.status).toBe(403);
      expect(JSON.parse(refused.body)).toEqual({ code: 7, message: metrics.body.trimEnd() });
      expect(metrics.body).toBe(`Host ${JSON.stringify(host)} is not allowed (--allowed-hosts)\n`);
    }
    const protobuf = await send(
      server.httpPort,
      '/v1/traces',
      { 'content-type': 'application/x-protobuf', host: 'attacker.example' },
      '',
    );
    expect([protobuf.status, protobuf.contentType]).toEqual([403, 'application/x-protobuf']);
    // Nothing reached the detector.
    expect(server.detector.stats().spans.accepted).toBe(0);
  });

  it('a foreign Origin is refused even under a loopback Host', async () => {
    const refused = await send(
      server.httpPort,
      '/v1/traces',
      { ...JSON_HEADERS, host: `127.0.0.1:${server.httpPort}`, origin: 'http://attacker.example' },
      seedBody('cross-site'),
    );
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toEqual({
      code: 7,
      message: 'Origin "http://attacker.example" is not allowed (--allowed-origins)',
    });
    expect(server.detector.stats().spans.accepted).toBe(0);
  });

  it('the loopback names pass, with or without a port', async () => {
    const port = server.httpPort;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'localhost', `[::1]:${port}`]) {
      const res = await send(port, '/v1/traces', { ...JSON_HEADERS, host }, seedBody(`loopback-${host}`));
      expect(res.status, host).toBe(200);
    }
  });

  it('the OpenTelemetry SDK’s exporters get through, OTLP/HTTP and OTLP/gRPC', async () => {
    for (const [exporter, session] of [
      [new HttpExporter({ url: `http://127.0.0.1:${server.httpPort}/v1/traces` }), 'sdk-http'],
      [new GrpcExporter({ url: `http://127.0.0.1:${server.grpcPort}` }), 'sdk-grpc'],
    ] as const) {
      const provider = providerWith(exporter, 'svc-host');
      emit(provider, seedScenario({ session, request: 1 }, 3));
      await provider.forceFlush();
      await provider.shutdown();
      await waitFor(
        () => server.findings().some((f) => f.session_id === session),
        `the findings of ${session}`,
        10_000,
      );
    }
  });

  it('gRPC: a call whose :authority is a foreign name is refused (PERMISSION_DENIED, the same line); a loopback one passes', async () => {
    expect(await grpcExport(server.grpcPort!, 'attacker.example')).toMatchObject({
      code: status.PERMISSION_DENIED,
      details: 'Host "attacker.example" is not allowed (--allowed-hosts)',
    });
    expect(await grpcExport(server.grpcPort!, `localhost:${server.grpcPort}`)).toEqual({});
  });
});

describe('serve with --allowed-hosts: the receivers take the list, as the metrics port does', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({
      port: 0,
      grpcPort: 0,
      metricsPort: 0,
      output: null,
      allowedHosts: ['collector.internal'],
    });
  });
  afterAll(() => server.close());

  it('the listed name passes; the loopback names, no longer the default, do not', async () => {
    const listed = await send(server.httpPort, '/v1/traces', { ...JSON_HEADERS, host: 'collector.internal' }, '{}');
    expect(listed.status).toBe(200);
    const loopback = await send(
      server.httpPort,
      '/v1/traces',
      { ...JSON_HEADERS, host: `127.0.0.1:${server.httpPort}` },
      '{}',
    );
    expect(loopback.status).toBe(403);
    expect(await grpcExport(server.grpcPort!, 'collector.internal:4317')).toEqual({});
    expect(await grpcExport(server.grpcPort!, `127.0.0.1:${server.grpcPort}`)).toMatchObject({
      code: status.PERMISSION_DENIED,
    });
  });
});
