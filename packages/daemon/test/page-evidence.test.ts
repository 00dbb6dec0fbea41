import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ErrorType,
  FindingKind,
  FindingRecord,
  METRIC_EVIDENCE_BYTES,
  METRIC_EVIDENCE_REQUESTS,
  METRIC_EVIDENCE_WINDOW_BYTES,
  METRIC_PAGE_RENDERS_TOTAL,
  ROUTE_PAGE,
  ROUTE_PAGE_DATA,
  ROUTE_PAGE_TIMELINE,
  SPAN_REQUEST_TERMINAL,
} from '@resumewatch/semconv';
import type { SpanRecord } from '@resumewatch/detector';
import { afterAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/index.js';
import { configWith } from '../src/doors/writing-pipeline.js';
import { Pipeline } from '../src/doors/pipeline.js';
import { scriptJson } from '../src/page/render-html.js';
import { EVIDENCE_EVENTS } from '../src/page/evidence.js';
import { LivePage, PAGE_REUSE_MAX_MS, livePageData, type TimelineAnswer } from '../src/page/live-page.js';
import type { DrawnTimeline } from '../src/page/timeline-view.js';
import { metricsHandler } from '../src/doors/metrics-server.js';
import { T0, modernRequest, seedScenario, span, terminal, traceOf } from '../../detector/test/helpers/spans.js';

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

/** The live page's answer for request `key` (ROUTE_PAGE_TIMELINE), the timeline it draws now. */
function drawnOf(page: LivePage, key: string): DrawnTimeline {
  const answer = JSON.parse(page.timeline(key)!.toString()) as TimelineAnswer;
  expect(answer.key).toBe(key);
  return answer.timeline!;
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
    // The live data draws no timeline: the page fetches each request's by its key.
    expect(data.timelines).toEqual({});
    const page = new LivePage(pipeline, configWith());
    const spansOf = (request: unknown) => (String(request) === '1' ? one : two).map((s) => s.spanId);
    data.findings.forEach((f, i) => {
      const timeline = drawnOf(page, data.request_keys[i]!);
      expect(timeline.events.map((e) => e.span_id)).toEqual(spansOf(f.request_id));
    });
    const keyOf = new Map(data.findings.map((f, i) => [f.request_id, data.request_keys[i]]));
    expect(new Set(data.request_keys)).toEqual(new Set(keyOf.values()));
    expect(keyOf.size).toBe(2);
  });

  it("holds a 2026-07-28 re-issue's two attempts by trace: both move in with its finding, later spans follow", () => {
    const pipeline = new Pipeline({ config: configWith() });
    const first = modernRequest(T0, { trace: traceOf(1), request: 0, error: ErrorType.STREAM_BROKEN });
    const fate = modernRequest(T0 + 50, {
      trace: traceOf(1),
      kind: 2,
      service: 'server',
      completedAfterCancellation: true,
    });
    const reissue = modernRequest(T0 + 500, { trace: traceOf(2), request: 1, reissueOf: first });
    // The re-issue's terminal: no session, so the detector ignores it; the page draws it.
    const result = span(
      SPAN_REQUEST_TERMINAL,
      T0 + 590,
      { [ATTR_MCP_METHOD_NAME]: 'tools/call', [ATTR_JSONRPC_REQUEST_ID]: 1 },
      { trace: traceOf(2) },
    );
    // Spans of no MCP request, without a session: never held, not even in the window.
    const other = span('GET /healthz', T0, {}, { trace: traceOf(3) });
    feed(pipeline, [other, first, fate, result]);
    // The first attempt's broken stream is a lost_result until a re-issue retracts it: that attempt (its
    // trace, as its spans are kept) is held with its finding; the re-issue's trace is still in the window.
    expect(pipeline.recent.findings().map((f) => f.kind)).toEqual([FindingKind.LOST_RESULT]);
    expect(pipeline.evidence.stats()).toMatchObject({ requests: 1, windowRequests: 1 });
    const lost = pipeline.recent.findings()[0]!;
    expect(pipeline.evidence.timeline(lost)?.events.map((e) => e.span_id)).toEqual([first.spanId, fate.spanId]);
    feed(pipeline, [reissue]);
    const finding = pipeline.recent.findings().find((f) => f.kind === FindingKind.DUPLICATE_EXECUTION)!;
    const ids = (held: { events: { span_id: string }[] } | undefined) => held?.events.map((e) => e.span_id);
    expect(ids(pipeline.evidence.attempts(finding).first)).toEqual([first.spanId, fate.spanId]);
    expect(ids(pipeline.evidence.attempts(finding).reissue)).toEqual([result.spanId, reissue.spanId]);
    // The two attempts by trace, each held once: the retracted lost_result's evidence is its attempt's.
    expect(pipeline.evidence.stats()).toMatchObject({ requests: 2, windowRequests: 0 });
    // A span of either trace after the finding joins its attempt.
    const late = modernRequest(T0 + 520, { trace: traceOf(2), kind: 2, service: 'server' });
    feed(pipeline, [late]);
    expect(ids(pipeline.evidence.attempts(finding).reissue)).toContain(late.spanId);
    // The page's data: the lost_result and its retraction share one key (one entry, its attempt's timeline).
    const data = livePageData(pipeline, configWith());
    const page = new LivePage(pipeline, configWith());
    const keyOfRecord = (record: string | undefined) =>
      data.request_keys[data.findings.findIndex((f) => f.kind === FindingKind.LOST_RESULT && f.record === record)];
    expect(keyOfRecord(FindingRecord.RETRACTION)).toBe(keyOfRecord(undefined));
    expect(drawnOf(page, keyOfRecord(undefined)!).events).toHaveLength(2);
    // The re-issue's finding: one timeline, both attempts, each side of each on its lane.
    const timeline = drawnOf(page, data.request_keys[data.findings.indexOf(finding)]!);
    expect(timeline.lanes.map((l) => l.label)).toEqual([
      'first attempt \u00b7 client',
      'first attempt \u00b7 server',
      're-issue \u00b7 client',
      're-issue \u00b7 server',
    ]);
    expect(timeline.events.map((e) => [timeline.lanes[e.lane]!.label, e.type])).toEqual([
      ['first attempt \u00b7 client', 'call'],
      ['first attempt \u00b7 server', 'call'],
      ['first attempt \u00b7 client', 'broken'],
      ['first attempt \u00b7 server', 'ran_on'],
      ['re-issue \u00b7 client', 'call'],
      ['re-issue \u00b7 server', 'call'],
      ['re-issue \u00b7 client', 'terminal'],
    ]);
    expect(timeline.notes!.join(' ')).toMatch(/the work ran twice/);
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

/** The CSP sources of the page's inline script and style: the SHA-256 of their text as served. */
function inlineHashes(html: string): { script: string; style: string } {
  const hash = (text: string | undefined) => `'sha256-${createHash('sha256').update(text!, 'utf8').digest('base64')}'`;
  return {
    script: hash(/<script>([\s\S]*?)<\/script>/.exec(html)?.[1]),
    style: hash(/<style>([\s\S]*?)<\/style>/.exec(html)?.[1]),
  };
}

/** GET `path` on the metrics listener at `port`, with the bearer token if any. */
function getFrom(
  port: number,
  path: string,
  token?: string,
): Promise<{ status: number; body: string; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path, headers: token ? { authorization: `Bearer ${token}` } : {} },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe("the page's render, shared", () => {
  const closers: (() => void)[] = [];
  afterAll(() => closers.forEach((close) => close()));

  it('a loop of GETs costs one render per reuse window; a finding made since shows once it passes', async () => {
    let now = Date.now();
    const config = configWith();
    const pipeline = new Pipeline({ config, clock: () => now });
    const server = createServer(metricsHandler(pipeline, config));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    closers.push(() => server.close());
    const port = (server.address() as AddressInfo).port;
    const get = (path: string) => getFrom(port, path);
    const renders = async (): Promise<number> =>
      Number(new RegExp(`^${METRIC_PAGE_RENDERS_TOTAL} (\\d+)$`, 'm').exec((await get('/metrics')).body)?.[1]);
    const requestsShown = (body: string) =>
      new Set((JSON.parse(body) as { findings: { request_id: unknown }[] }).findings.map((f) => String(f.request_id)));

    feed(pipeline, seedOf(1));
    expect(await renders()).toBe(0);
    // 50 GETs, the page and its data, one after the other and 10 at once: one render, the same data.
    const bodies: string[] = [];
    for (let i = 0; i < 20; i++) bodies.push((await get(i % 2 ? ROUTE_PAGE : ROUTE_PAGE_DATA)).body);
    bodies.push(...(await Promise.all(Array.from({ length: 10 }, () => get(ROUTE_PAGE_DATA)))).map((r) => r.body));
    feed(pipeline, seedOf(2));
    for (let i = 0; i < 20; i++) bodies.push((await get(i % 2 ? ROUTE_PAGE : ROUTE_PAGE_DATA)).body);
    expect(await renders()).toBe(1);
    const data = bodies.filter((b) => b.startsWith('{'));
    expect(data).toHaveLength(30);
    expect(new Set(data).size).toBe(1);
    expect(requestsShown(data[0]!)).toEqual(new Set(['1']));
    for (const page of bodies.filter((b) => !b.startsWith('{')))
      expect(page).toContain(scriptJson(JSON.parse(data[0]!)));

    // Past the window (longer when renders take long, never longer than PAGE_REUSE_MAX_MS), the next
    // request renders again: request 2's finding is there, in the page too.
    now += PAGE_REUSE_MAX_MS;
    const next = (await get(ROUTE_PAGE_DATA)).body;
    expect(requestsShown(next)).toEqual(new Set(['1', '2']));
    expect((await get(ROUTE_PAGE)).body).toContain(scriptJson(JSON.parse(next)));
    expect(await renders()).toBe(2);
  });
});

describe("the page's synchronous work, bounded by one request's evidence (counted in spans serialised)", () => {
  const closers: (() => void)[] = [];
  afterAll(() => closers.forEach((close) => close()));
  /** Spans a body serialises: each drawn event carries its span's id. */
  const spansIn = (body: string): number => body.split('"span_id"').length - 1;

  it('at a full evidence store, the page and its data serialise no span; each timeline answer one request’s, at most EVIDENCE_EVENTS', async () => {
    const evidenceBytes = 512 * 1024;
    const config = configWith({ evidenceBytes });
    const pipeline = new Pipeline({ config });
    for (let n = 1; n <= 400; n++) feed(pipeline, seedOf(n));
    // Full: what the evidence holds is at its cap, the oldest requests evicted.
    const stats = pipeline.evidence.stats();
    expect(stats.bytes).toBeGreaterThan(evidenceBytes * 0.9);
    expect(stats.requests).toBeLessThan(400);
    const server = createServer(metricsHandler(pipeline, config));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    closers.push(() => server.close());
    const get = (path: string) => getFrom((server.address() as AddressInfo).port, path);

    const data = await get(ROUTE_PAGE_DATA);
    const listed = JSON.parse(data.body) as { findings: unknown[]; request_keys: string[]; timelines: object };
    expect(listed.findings.length).toBeGreaterThan(100);
    // The render draws no timeline: its work is the findings list, whatever the evidence holds.
    expect(listed.timelines).toEqual({});
    expect(spansIn(data.body)).toBe(0);
    expect(spansIn((await get(ROUTE_PAGE)).body)).toBe(0);

    // Each timeline, one answer: the 12 spans of its request (all a seed request has), never more than
    // EVIDENCE_EVENTS; together they are the whole evidence, which one render drew before.
    const keys = [...new Set(listed.request_keys)];
    let total = 0;
    let drawn = 0;
    for (const key of keys) {
      const answer = await get(`${ROUTE_PAGE_TIMELINE}?key=${encodeURIComponent(key)}`);
      expect(answer.status).toBe(200);
      const spans = spansIn(answer.body);
      expect(spans).toBeLessThanOrEqual(EVIDENCE_EVENTS);
      total += spans;
      if (spans > 0) {
        drawn++;
        expect(spans).toBe(12);
      }
    }
    expect(drawn).toBe(stats.requests);
    expect(total).toBe(12 * stats.requests);
    expect(total).toBeGreaterThan(4 * EVIDENCE_EVENTS);

    // A key no listed finding has, or none at all: refused, nothing drawn.
    expect((await get(`${ROUTE_PAGE_TIMELINE}?key=${encodeURIComponent('made-up')}`)).status).toBe(404);
    expect((await get(ROUTE_PAGE_TIMELINE)).status).toBe(400);
  });
});

describe('the page on the metrics port', () => {
  let server: RunningServer;
  afterAll(() => server?.close());

  const get = (path: string, token?: string) => getFrom(server.metricsPort, path, token);

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

  it('sends its Content-Security-Policy as a header: its own script and style by hash, nothing inline else', async () => {
    for (const token of ['t0k', undefined]) {
      const page = await get(ROUTE_PAGE, token);
      const policy = String(page.headers['content-security-policy']);
      const { script, style } = inlineHashes(page.body);
      expect(policy.split('; ').sort()).toEqual(
        [
          "default-src 'none'",
          `script-src ${script}`,
          `style-src ${style}`,
          "connect-src 'self'",
          "base-uri 'none'",
          "form-action 'none'",
          "frame-ancestors 'none'",
        ].sort(),
      );
      expect(page.headers['x-content-type-options']).toBe('nosniff');
      expect(page.headers['referrer-policy']).toBe('no-referrer');
      expect(page.body).not.toContain('http-equiv');
    }
    expect((await get(ROUTE_PAGE_DATA, 't0k')).headers['x-content-type-options']).toBe('nosniff');
  });
});
