import { request as httpRequest } from 'node:http';
import {
  METRIC_EVIDENCE_BYTES,
  METRIC_EVIDENCE_REQUESTS,
  METRIC_EVIDENCE_WINDOW_BYTES,
  ROUTE_PAGE,
  ROUTE_PAGE_DATA,
} from '@resumewatch/semconv';
import type { SpanRecord } from '@resumewatch/detector';
import { afterAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/index.js';
import { configWith } from '../src/doors/writing-pipeline.js';
import { Pipeline } from '../src/doors/pipeline.js';
import { scriptJson } from '../src/page/render-html.js';
import { livePageData } from '../src/page/live-page.js';
import { seedScenario, terminal } from '../../detector/test/helpers/spans.js';

function feed(pipeline: Pipeline, spans: SpanRecord[]): void {
  pipeline.ingest((sink) => {
    for (const s of spans) sink(s);
    return { spans: spans.length, invalid: 0 };
  });
}

/** Distinct span ids for request `n`: the helpers number spans from 1 in each scenario. */
function seedOf(n: number): SpanRecord[] {
  return seedScenario({ session: `s-${n}`, request: n }, 3).map((s, i) => ({
    ...s,
    spanId: (n * 64 + i + 1).toString(16).padStart(16, '0'),
  }));
}

describe('the evidence the page draws from', () => {
  it('keeps nothing for a request without a finding; a finding moves its earlier spans in, later ones follow', () => {
    const pipeline = new Pipeline({ config: configWith() });
    const spans = seedOf(1);
    feed(pipeline, spans.slice(0, 1));
    expect(pipeline.evidence.stats()).toMatchObject({ bytes: 0, requests: 0, windowRequests: 1 });
    feed(pipeline, spans.slice(1));
    const stats = pipeline.evidence.stats();
    expect(stats.requests).toBe(1);
    expect(stats.windowRequests).toBe(0);
    const finding = pipeline.recent.findings()[0]!;
    expect(pipeline.evidence.timeline(finding)!.events.map((e) => e.span_id)).toEqual(spans.map((s) => s.spanId));
  });

  it("gives each finding its request's key: findings of one request share a timeline, of two requests not", () => {
    const pipeline = new Pipeline({ config: configWith() });
    const [one, two] = [seedOf(1), seedOf(2)];
    feed(pipeline, [...one, ...two]);
    const data = livePageData(pipeline, configWith());
    expect(data.findings.length).toBeGreaterThanOrEqual(2);
    expect(data.request_keys).toHaveLength(data.findings.length);
    const spansOf = (request: unknown) => (String(request) === '1' ? one : two).map((s) => s.spanId);
    data.findings.forEach((f, i) => {
      const timeline = data.timelines[data.request_keys[i]!]!;
      expect(timeline.events.map((e) => e.span_id)).toEqual(spansOf(f.request_id));
    });
    const keyOf = new Map(data.findings.map((f, i) => [f.request_id, data.request_keys[i]]));
    expect(new Set(data.request_keys)).toEqual(new Set(keyOf.values()));
    expect(keyOf.size).toBe(2);
  });

  it('stays within its byte caps however many requests are reported', () => {
    const evidenceBytes = 64 * 1024;
    const evidenceWindowBytes = 8 * 1024;
    const pipeline = new Pipeline({ config: configWith({ evidenceBytes, evidenceWindowBytes }) });
    for (let n = 1; n <= 500; n++) {
      feed(pipeline, seedOf(n));
      // Requests that never become findings only ever reach the window.
      feed(pipeline, [
        { ...terminal({ session: `ok-${n}`, request: n }, 1000, 'A'), spanId: `f${n.toString(16).padStart(15, '0')}` },
      ]);
    }
    const stats = pipeline.evidence.stats();
    expect(stats.bytes).toBeLessThanOrEqual(evidenceBytes);
    expect(stats.bytes).toBeGreaterThan(evidenceBytes / 2);
    expect(stats.windowBytes).toBeLessThanOrEqual(evidenceWindowBytes);
    expect(stats.requests).toBeLessThan(500);
  });

  it('embeds data in a script block that no value can close or change', () => {
    const text = scriptJson({ a: '</script><!-- & \u2028' });
    expect(text).not.toMatch(/[<>&\u2028]/);
    expect(JSON.parse(text)).toEqual({ a: '</script><!-- & \u2028' });
  });
});

describe('the page on the metrics port', () => {
  let server: RunningServer;
  afterAll(() => server?.close());

  function get(path: string, token?: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: server.metricsPort,
          path,
          headers: token ? { authorization: `Bearer ${token}` } : {},
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  it('asks for the token as /findings does; the evidence is counted in /metrics', async () => {
    server = await startServer({ port: 0, grpcPort: false, metricsPort: 0, output: null, token: 't0k' });
    for (const path of [ROUTE_PAGE, ROUTE_PAGE_DATA]) expect((await get(path)).status).toBe(401);
    // Without the token the page is its code alone, no data: it asks for the token (page-script.ts).
    expect((await get(ROUTE_PAGE)).body).toContain('<script type="application/json" id="page-data">null</script>');
    expect((await get(ROUTE_PAGE, 'wrong')).body).toContain('id="page-data">null</script>');
    const page = await get(ROUTE_PAGE, 't0k');
    expect(page.status).toBe(200);
    expect(page.body).toContain('<script type="application/json" id="page-data">');
    const data = JSON.parse((await get(ROUTE_PAGE_DATA, 't0k')).body) as { findings: unknown[]; header: object };
    expect(data.findings).toEqual([]);
    const metrics = (await get('/metrics', 't0k')).body;
    for (const name of [METRIC_EVIDENCE_BYTES, METRIC_EVIDENCE_REQUESTS, METRIC_EVIDENCE_WINDOW_BYTES])
      expect(metrics).toContain(`${name} 0`);
  });
});
