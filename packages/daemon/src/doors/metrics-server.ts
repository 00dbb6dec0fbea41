import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  ROUTE_FINDINGS,
  ROUTE_HEALTHZ,
  ROUTE_METRICS,
  ROUTE_PAGE,
  ROUTE_PAGE_DATA,
  ROUTE_PAGE_TIMELINE,
} from '@resumewatch/semconv';
import { LivePage } from '../page/live-page.js';
import { PAGE_HEADERS } from '../page/page-policy.js';
import type { ResumewatchConfig } from '../config.js';
import { hostCheck, type HostCheck } from '../host-policy.js';
import { authorized } from './auth.js';
import type { Pipeline } from './pipeline.js';

/** GET /metrics (Prometheus or OpenMetrics by Accept), GET /healthz, GET /findings, the page (/), its data and timelines. */
export function metricsHandler(pipeline: Pipeline, config: ResumewatchConfig) {
  const hosts = hostCheck({
    bindHost: config.host,
    allowedHosts: config.allowedHosts,
    allowedOrigins: config.allowedOrigins,
  });
  const handle = route(pipeline, config, hosts);
  return (req: IncomingMessage, res: ServerResponse): void => {
    try {
      handle(req, res);
    } catch (e) {
      // Never a crash: a failure is this request's answer.
      if (!res.headersSent) text(res, 500, `internal error: ${(e as Error).message}\n`);
      else res.destroy();
    }
  };
}

function route(pipeline: Pipeline, config: ResumewatchConfig, hosts: HostCheck) {
  const page = new LivePage(pipeline, config);
  return (req: IncomingMessage, res: ServerResponse): void => {
    const [path, query] = (req.url ?? '').split('?', 2);
    req.resume();
    if (req.method !== 'GET' && req.method !== 'HEAD') return text(res, 405, 'use GET\n');
    // Says nothing but "up", and probes name the listener as they like (haproxy's sends no Host at all).
    if (path === ROUTE_HEALTHZ) return text(res, 200, 'ok\n');
    // Before the token: a page on a rebound name (DNS rebinding) reads nothing, token or none.
    const refused = hosts(req.headers.host, req.headers.origin);
    if (refused) return text(res, 403, `${refused.message}\n`);
    if (!authorized(config.token, req.headers.authorization)) {
      res.setHeader('www-authenticate', 'Bearer');
      // A browser cannot send the header when it opens the page: it gets the page without its data,
      // which takes the token from its address's fragment and fetches the data with it.
      if (path === ROUTE_PAGE) {
        res.writeHead(401, { 'content-type': 'text/html; charset=utf-8', ...PAGE_HEADERS });
        return void res.end(page.locked());
      }
      return text(res, 401, 'missing or wrong bearer token\n');
    }
    if (path === ROUTE_FINDINGS) {
      // Bounded by --findings-bytes whatever the findings hold: the newest that fit.
      const { body } = pipeline.recent.toJson();
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(body);
    }
    if (path === ROUTE_METRICS) {
      Promise.resolve()
        .then(() => pipeline.metrics.render(req.headers.accept))
        .then(
          ({ contentType, body }) => {
            res.writeHead(200, { 'content-type': contentType });
            res.end(body);
          },
          (e: Error) => text(res, 500, `metrics failed: ${e.message}\n`),
        );
      return;
    }
    if (path === ROUTE_PAGE) {
      // Read-only and bounded: the findings as /findings bounds them, the timelines by --evidence-bytes;
      // one render a second at most, shared by every request (live-page.ts).
      const body = page.page();
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...PAGE_HEADERS });
      return void res.end(body);
    }
    if (path === ROUTE_PAGE_DATA) {
      const body = page.data();
      res.writeHead(200, { 'content-type': 'application/json', ...PAGE_HEADERS });
      return void res.end(body);
    }
    if (path === ROUTE_PAGE_TIMELINE) {
      // One request's timeline, drawn now: the page asks for the finding it opens (live-page.ts).
      const key = new URLSearchParams(query ?? '').get('key');
      if (key === null)
        return text(res, 400, `${ROUTE_PAGE_TIMELINE} takes ?key=, a request key of ${ROUTE_PAGE_DATA}\n`);
      const body = page.timeline(key);
      if (body === undefined) return text(res, 404, `no finding of request ${JSON.stringify(key.slice(0, 100))} now\n`);
      res.writeHead(200, { 'content-type': 'application/json', ...PAGE_HEADERS });
      return void res.end(body);
    }
    text(res, 404, `not found: try ${ROUTE_PAGE}, ${ROUTE_METRICS}, ${ROUTE_HEALTHZ} or ${ROUTE_FINDINGS}\n`);
  };
}

function text(res: ServerResponse, status: number, body: string): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
}
