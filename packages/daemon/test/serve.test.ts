import { gzipSync } from 'node:zlib';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as HttpExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Client, Metadata, credentials, status } from '@grpc/grpc-js';
import {
  ATTR_MCP_METHOD_NAME,
  FindingKind,
  FindingRecord,
  METRIC_FINDINGS_TOTAL,
  METRIC_SPANS_RECEIVED_TOTAL,
  StormEnd,
  exportedSeriesNames,
} from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/index.js';
import { emit, otlpJson, providerWith } from '../../detector/test/helpers/otlp.js';
import { seedScenario, span, terminal } from '../../detector/test/helpers/spans.js';
import { waitFor } from '../../detector/test/helpers/wait.js';

const EXPORT = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
const SEED_KINDS = [
  FindingKind.DUPLICATE_TERMINAL,
  FindingKind.RECONNECT_STORM,
  FindingKind.RESUME_AFTER_TERMINAL,
  FindingKind.SIGNATURE,
].sort();

function kindsFor(server: RunningServer, session: string): string[] {
  return server
    .findings()
    .filter((f) => f.session_id === session && f.record === undefined)
    .map((f) => f.kind)
    .sort();
}

describe('serve: real OpenTelemetry exporters', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ port: 0, grpcPort: 0, metricsPort: 0, output: null });
  });
  afterAll(() => server.close());

  it('receives OTLP/HTTP JSON', async () => {
    const provider = providerWith(
      new HttpExporter({ url: `http://127.0.0.1:${server.httpPort}/v1/traces` }),
      'svc-json',
    );
    emit(provider, seedScenario({ session: 'json-1', request: 1 }, 3));
    await provider.forceFlush();
    await provider.shutdown();
    expect(
      await waitFor(
        () => (kindsFor(server, 'json-1').length === 4 ? kindsFor(server, 'json-1') : undefined),
        'the findings of json-1',
        10_000,
      ),
    ).toEqual(SEED_KINDS);
    const sig = server.findings().find((f) => f.session_id === 'json-1' && f.kind === FindingKind.SIGNATURE)!;
    // Reported as soon as complete (the third attempt); how the storm ended is a record of its own.
    expect(sig).toMatchObject({ service: 'svc-json', request_id: '1', duplicates: 2, attempts: 3 });
    expect(server.findings().filter((f) => f.session_id === 'json-1' && f.record !== undefined)).toMatchObject([
      { kind: FindingKind.RECONNECT_STORM, record: FindingRecord.STORM_ENDED, attempts: 4, ended_by: StormEnd.EVICTED },
    ]);
  });

  it('receives OTLP/HTTP protobuf, gzip-compressed', async () => {
    const exporter = new ProtoExporter({
      url: `http://127.0.0.1:${server.httpPort}/v1/traces`,
      compression: 'gzip' as never,
    });
    const provider = providerWith(exporter, 'svc-proto');
    emit(provider, seedScenario({ session: 'proto-1', request: 'r-9' }, 3));
    await provider.forceFlush();
    await provider.shutdown();
    expect(
      await waitFor(
        () => (kindsFor(server, 'proto-1').length === 4 ? kindsFor(server, 'proto-1') : undefined),
        'the findings of proto-1',
        10_000,
      ),
    ).toEqual(SEED_KINDS);
    expect(server.findings().find((f) => f.session_id === 'proto-1')).toMatchObject({
      service: 'svc-proto',
      request_id: 'r-9',
    });
  });

  it('receives OTLP/gRPC, gzip-compressed', async () => {
    const exporter = new GrpcExporter({ url: `http://127.0.0.1:${server.grpcPort}`, compression: 'gzip' as never });
    const provider = providerWith(exporter, 'svc-grpc');
    emit(provider, seedScenario({ session: 'grpc-1', request: 2 }, 3));
    await provider.forceFlush();
    await provider.shutdown();
    expect(
      await waitFor(
        () => (kindsFor(server, 'grpc-1').length === 4 ? kindsFor(server, 'grpc-1') : undefined),
        'the findings of grpc-1',
        10_000,
      ),
    ).toEqual(SEED_KINDS);
  });

  it('serves the contract metrics as Prometheus text and as OpenMetrics with trace_id exemplars', async () => {
    const base = `http://127.0.0.1:${server.metricsPort}`;
    // A server's request span, which mcp_server_operation_duration_seconds times.
    const operation = span('tools/list', Date.now(), { [ATTR_MCP_METHOD_NAME]: 'tools/list' }, { kind: 2 });
    await fetch(`http://127.0.0.1:${server.httpPort}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(otlpJson([operation], 'svc-server')),
    });
    const prom = await fetch(`${base}/metrics`);
    expect(prom.headers.get('content-type')).toContain('text/plain');
    const text = await prom.text();
    for (const name of exportedSeriesNames()) expect(text).toContain(name);
    expect(text).toMatch(new RegExp(`${METRIC_FINDINGS_TOTAL}\\{kind="signature",service="svc-json"\\} 1`));
    expect(text).toMatch(new RegExp(`${METRIC_SPANS_RECEIVED_TOTAL}\\{result="accepted"\\} \\d+`));
    expect(text).toMatch(/resumewatch_terminal_events_total\{service="svc-json",duplicate="true"\} 3/);
    expect(text).toMatch(/resumewatch_tracked_requests \d+/);
    expect(text).not.toContain('json-1');
    const om = await fetch(`${base}/metrics`, { headers: { accept: 'application/openmetrics-text; version=1.0.0' } });
    expect(om.headers.get('content-type')).toContain('application/openmetrics-text');
    const omText = await om.text();
    expect(omText).toMatch(
      /resumewatch_findings_total\{kind="signature",service="svc-json"\} 1 # \{trace_id="[0-9a-f]{32}"\} 1 /,
    );
    expect(omText.trimEnd().endsWith('# EOF')).toBe(true);
    expect(await (await fetch(`${base}/healthz`)).text()).toBe('ok\n');
    const findings = (await (await fetch(`${base}/findings`)).json()) as { kind: string }[];
    expect(findings.length).toBe(server.findings().length);
  });
});

describe('serve: bad input', () => {
  let server: RunningServer;
  let url: string;
  const TOKEN = 's3cret';
  const auth = { authorization: `Bearer ${TOKEN}` };
  beforeAll(async () => {
    server = await startServer({
      port: 0,
      grpcPort: 0,
      metricsPort: 0,
      output: null,
      token: TOKEN,
      maxBodyBytes: 64 * 1024,
      maxDecompressedBytes: 256 * 1024,
      maxServices: 2,
    });
    url = `http://127.0.0.1:${server.httpPort}/v1/traces`;
  });
  afterAll(() => server.close());

  async function stillServing(): Promise<void> {
    const body = JSON.stringify(otlpJson([terminal({ session: 'alive', request: 1 }, Date.now(), 'A')]));
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({});
  }

  it('401 without the bearer token, on OTLP/HTTP, gRPC and /findings', async () => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { message: string }).message).toMatch(/token/);
    expect((await fetch(`http://127.0.0.1:${server.metricsPort}/findings`)).status).toBe(401);
    expect((await fetch(`http://127.0.0.1:${server.metricsPort}/healthz`)).status).toBe(200);
    const client = new Client(`127.0.0.1:${server.grpcPort}`, credentials.createInsecure());
    const call = (body: Buffer, md: Metadata) =>
      new Promise<{ code?: number; details?: string }>((resolve) =>
        client.makeUnaryRequest(
          EXPORT,
          (b: Buffer) => b,
          (b: Buffer) => b,
          body,
          md,
          (err) => resolve(err ?? {}),
        ),
      );
    expect(await call(Buffer.alloc(0), new Metadata())).toMatchObject({ code: status.UNAUTHENTICATED });
    const withToken = new Metadata();
    withToken.set('authorization', `Bearer ${TOKEN}`);
    expect(await call(Buffer.from([0x0a, 0x20, 0x01]), withToken)).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringMatching(/malformed protobuf/),
    });
    expect(await call(Buffer.alloc(0), withToken)).toEqual({});
    client.close();
    const md = new Metadata();
    md.set('authorization', `Bearer ${TOKEN}`);
    const ok = providerWith(new GrpcExporter({ url: `http://127.0.0.1:${server.grpcPort}`, metadata: md }), 'svc-ok');
    emit(ok, seedScenario({ session: 'grpc-auth', request: 1 }, 3));
    await ok.forceFlush();
    await ok.shutdown();
    await waitFor(
      () => server.findings().some((f) => f.session_id === 'grpc-auth'),
      'the finding of grpc-auth',
      10_000,
    );
    await stillServing();
  });

  it('400 with a message for malformed JSON and protobuf', async () => {
    const bad = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: '{"resourceSpans": [',
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toMatch(/malformed JSON/);
    const shape = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: '{"resourceSpans": 3}',
    });
    expect(shape.status).toBe(400);
    expect(((await shape.json()) as { message: string }).message).toMatch(/resourceSpans is not an array/);
    const pb = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf', ...auth },
      body: Buffer.from([0x0a, 0x20, 0x01]),
    });
    expect(pb.status).toBe(400);
    expect(pb.headers.get('content-type')).toBe('application/x-protobuf');
    expect(Buffer.from(await pb.arrayBuffer()).toString('latin1')).toMatch(
      /malformed protobuf: length 32 at byte 1 runs past the end/,
    );
    const gz = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', ...auth },
      body: 'not gzip',
    });
    expect(gz.status).toBe(400);
    expect(((await gz.json()) as { message: string }).message).toMatch(/malformed gzip/);
    await stillServing();
  });

  it('415 for an unsupported content type or encoding', async () => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain', ...auth }, body: 'hello' });
    expect(res.status).toBe(415);
    expect(((await res.json()) as { message: string }).message).toMatch(/Content-Type/);
    const br = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'br', ...auth },
      body: '{}',
    });
    expect(br.status).toBe(415);
    await stillServing();
  });

  it('413 for a body over the limit and for a gzip bomb', async () => {
    const big = '{"resourceSpans":[],"pad":"' + 'x'.repeat(100 * 1024) + '"}';
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: big,
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { message: string }).message).toMatch(/body exceeds 65536 bytes/);
    const bomb = gzipSync(Buffer.alloc(10 * 1024 * 1024, 0x20));
    expect(bomb.length).toBeLessThan(64 * 1024);
    const b = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', ...auth },
      body: bomb,
    });
    expect(b.status).toBe(413);
    expect(((await b.json()) as { message: string }).message).toMatch(/decompressed body exceeds 262144 bytes/);
    await stillServing();
  });

  it('reports rejected spans as partial success and counts ignored spans', async () => {
    const doc = otlpJson([
      terminal({ session: 'p', request: 1 }, Date.now(), 'A'),
      terminal({ session: '', request: 1 }, Date.now(), 'A'),
    ]);
    (doc.resourceSpans as { scopeSpans: { spans: { spanId: string }[] }[] }[])[0]!.scopeSpans[0]!.spans[0]!.spanId =
      'zz';
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify(doc),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { partialSuccess: { rejectedSpans: string; errorMessage: string } };
    expect(body.partialSuccess.rejectedSpans).toBe('1');
    expect(body.partialSuccess.errorMessage).toMatch(/spanId/);
    const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`, { headers: auth })).text();
    expect(metrics).toMatch(/resumewatch_spans_received_total\{result="invalid"\} 1/);
    expect(metrics).toMatch(/resumewatch_spans_received_total\{result="ignored"\} [1-9]/);
  });

  it('bounds the service label', async () => {
    for (const svc of ['a', 'b', 'c', 'd']) {
      const body = JSON.stringify(otlpJson([terminal({ session: `svc-${svc}`, request: 1 }, Date.now(), 'A')], svc));
      expect(
        (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body })).status,
      ).toBe(200);
    }
    const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`, { headers: auth })).text();
    const services = new Set(
      [...metrics.matchAll(/resumewatch_terminal_events_total\{service="([^"]*)"/g)].map((m) => m[1]),
    );
    // maxServices is 2: the first two services seen keep their label (which ones depends on the tests run before).
    expect(services.size).toBe(3);
    expect(services.has('other')).toBe(true);
    expect(services.has('c') || services.has('d')).toBe(false);
  });
});
