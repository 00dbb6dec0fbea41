import { ATTR_SERVICE_NAME, TRACER_SCOPE } from '@resumewatch/semconv';
import type { SpanRecord } from '../../src/index.js';
import { otlpAttributes } from './otlp.js';

/*
 * An application's own telemetry beside its MCP spans, in the shapes @opentelemetry/auto-instrumentations-node
 * gives them (instrumentation-http, -undici, -express, -fastify, -pg, -mysql2, -ioredis; the stable HTTP and
 * database conventions): what `serve` receives when an application's exporter, or a Collector, sends it
 * everything. The detector and the page never use these spans. Bodies are laid out as the OTLP exporters
 * write them: one ResourceSpans with the SDK's resource, a ScopeSpans per instrumentation scope, every span
 * with its parent, status, events, links and dropped counts.
 */

type Attributes = SpanRecord['attributes'];

/** OTLP span kinds. */
const INTERNAL = 1;
const SERVER = 2;
const CLIENT = 3;

/** A span of the application, before its ids and times are given. */
interface AppSpan {
  scope: string;
  name: string;
  kind: number;
  attributes: Attributes;
  /** An error: status ERROR and an exception event. */
  error?: string;
}

const ROUTES = ['/api/orders/:id', '/api/carts/:cartId/items', '/api/users/:id', '/healthz', '/api/search'];
const TABLES = ['orders', 'order_items', 'customers', 'carts', 'inventory', 'payments'];

/** Deterministic pseudo-random numbers (xorshift32), so that bodies are the same from run to run. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}

/** The nine spans of one request the application served (an HTTP server span and what it did). */
function requestSpans(n: number, rand: () => number): AppSpan[] {
  const route = ROUTES[n % ROUTES.length]!;
  const path = route.replace(/:(\w+)/g, () => String(1000 + Math.floor(rand() * 90000)));
  const method = n % 7 === 3 ? 'POST' : 'GET';
  const failed = n % 23 === 11;
  const status = failed ? 500 : method === 'POST' ? 201 : 200;
  const table = TABLES[n % TABLES.length]!;
  const id = 1 + Math.floor(rand() * 1e6);
  const peer = `10.0.${n % 8}.${1 + (n % 250)}`;
  const pg = (statement: string): AppSpan => ({
    scope: '@opentelemetry/instrumentation-pg',
    name: `pg.query:${statement.split(' ')[0]} shop`,
    kind: CLIENT,
    attributes: {
      'db.system': 'postgresql',
      'db.namespace': 'shop',
      'db.name': 'shop',
      'db.query.text': statement,
      'db.statement': statement,
      'db.user': 'shop_app',
      'db.connection_string': 'postgresql://db.internal:5432/shop',
      'server.address': 'db.internal',
      'server.port': 5432,
      'net.peer.name': 'db.internal',
      'net.peer.port': 5432,
    },
  });
  return [
    {
      scope: '@opentelemetry/instrumentation-http',
      name: `${method} ${route}`,
      kind: SERVER,
      attributes: {
        'http.request.method': method,
        'url.scheme': 'http',
        'url.path': path,
        ...(n % 3 === 0 ? { 'url.query': `page=${n % 9}&limit=20` } : {}),
        'http.route': route,
        'server.address': 'shop.example.com',
        'server.port': 8080,
        'client.address': peer,
        'network.peer.address': peer,
        'network.peer.port': 40000 + (n % 20000),
        'network.protocol.version': '1.1',
        'user_agent.original':
          'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/128.0 Safari/537.36',
        'http.response.status_code': status,
        ...(failed ? { 'error.type': '500' } : {}),
      },
      ...(failed ? { error: 'Internal Server Error' } : {}),
    },
    {
      scope: '@opentelemetry/instrumentation-express',
      name: 'middleware - query',
      kind: INTERNAL,
      attributes: { 'http.route': '/', 'express.name': 'query', 'express.type': 'middleware' },
    },
    {
      scope: '@opentelemetry/instrumentation-express',
      name: 'middleware - jsonParser',
      kind: INTERNAL,
      attributes: { 'http.route': '/', 'express.name': 'jsonParser', 'express.type': 'middleware' },
    },
    {
      scope: '@opentelemetry/instrumentation-express',
      name: `request handler - ${route}`,
      kind: INTERNAL,
      attributes: { 'http.route': route, 'express.name': route, 'express.type': 'request_handler' },
    },
    n % 2 === 0
      ? {
          scope: '@opentelemetry/instrumentation-pg',
          name: 'pg-pool.connect',
          kind: CLIENT,
          attributes: {
            'db.system': 'postgresql',
            'db.namespace': 'shop',
            'db.user': 'shop_app',
            'server.address': 'db.internal',
            'server.port': 5432,
            'db.postgresql.idle.timeout.millis': 10000,
            'db.postgresql.max.client': 10,
          },
        }
      : {
          scope: '@opentelemetry/instrumentation-fastify',
          name: 'middleware - onRequest',
          kind: INTERNAL,
          attributes: {
            'fastify.type': 'hook',
            'plugin.name': 'fastify-cors',
            'hook.name': 'onRequest',
            'http.route': route,
          },
        },
    pg(`SELECT id, status, total_cents, updated_at FROM ${table} WHERE id = $1 AND tenant_id = $2`),
    n % 3 === 0
      ? {
          scope: '@opentelemetry/instrumentation-mysql2',
          name: `SELECT catalog.${table}`,
          kind: CLIENT,
          attributes: {
            'db.system': 'mysql',
            'db.namespace': 'catalog',
            'db.query.text': `SELECT sku, price FROM ${table} WHERE sku IN (?, ?, ?)`,
            'db.statement': `SELECT sku, price FROM ${table} WHERE sku IN (?, ?, ?)`,
            'db.user': 'catalog_ro',
            'server.address': 'mysql.internal',
            'server.port': 3306,
          },
        }
      : {
          scope: '@opentelemetry/instrumentation-ioredis',
          name: 'get',
          kind: CLIENT,
          attributes: {
            'db.system': 'redis',
            'db.statement': `get session:${id}`,
            'db.query.text': `get session:${id}`,
            'server.address': 'redis.internal',
            'server.port': 6379,
            'net.peer.name': 'redis.internal',
            'net.peer.port': 6379,
          },
        },
    {
      scope: '@opentelemetry/instrumentation-undici',
      name: 'POST',
      kind: CLIENT,
      attributes: {
        'http.request.method': 'POST',
        'url.full': `https://payments.example.net/v2/charges/${id}/capture`,
        'url.path': `/v2/charges/${id}/capture`,
        'url.query': '',
        'url.scheme': 'https',
        'server.address': 'payments.example.net',
        'server.port': 443,
        'network.peer.address': '203.0.113.17',
        'network.peer.port': 443,
        'user_agent.original': 'node',
        'http.response.status_code': failed ? 503 : 200,
        'http.response.header.content-length': 412,
      },
    },
    {
      scope: '@opentelemetry/instrumentation-http',
      name: 'GET',
      kind: CLIENT,
      attributes: {
        'http.request.method': 'GET',
        'url.full': `http://inventory.internal:8081/stock/${id}?warehouse=${n % 4}`,
        'server.address': 'inventory.internal',
        'server.port': 8081,
        'network.peer.address': `10.1.0.${n % 200}`,
        'network.peer.port': 8081,
        'network.protocol.version': '1.1',
        'http.response.status_code': 200,
      },
    },
  ];
}

const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0');

/** The resource an application's SDK gives its spans (the Node SDK's detectors). */
function resourceAttributes(service: string): Attributes {
  return {
    [ATTR_SERVICE_NAME]: service,
    'service.version': '2.14.1',
    'service.instance.id': '7c1f3b9e-4a2d-4f6e-9b1a-2d8c5e7f0a13',
    'deployment.environment.name': 'production',
    'telemetry.sdk.language': 'nodejs',
    'telemetry.sdk.name': 'opentelemetry',
    'telemetry.sdk.version': '2.0.1',
    'telemetry.distro.name': 'opentelemetry-auto-instrumentations-node',
    'host.name': 'shop-api-6f9c7d8b5-x2kqp',
    'host.arch': 'amd64',
    'os.type': 'linux',
    'process.pid': 27,
    'process.executable.name': 'node',
    'process.runtime.name': 'nodejs',
    'process.runtime.version': '20.18.0',
    'process.command': '/app/dist/server.js',
  };
}

interface OtlpJsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: ReturnType<typeof otlpAttributes>;
  droppedAttributesCount: number;
  events: {
    timeUnixNano: string;
    name: string;
    attributes: ReturnType<typeof otlpAttributes>;
    droppedAttributesCount: number;
  }[];
  droppedEventsCount: number;
  status: { code: number; message?: string };
  links: never[];
  droppedLinksCount: number;
  flags: number;
}

const nanos = (ms: number): string => String(Math.round(ms * 1e6));

/** An MCP span as the exporters write it, with the fields the instrumentation's spans have too. */
function mcpSpan(s: SpanRecord, int: (n: number) => string | number): OtlpJsonSpan {
  return {
    traceId: s.traceId,
    spanId: s.spanId,
    ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
    name: s.name,
    kind: s.kind,
    startTimeUnixNano: nanos(s.startTimeUnixMs),
    endTimeUnixNano: nanos(s.endTimeUnixMs),
    attributes: otlpAttributes(s.attributes, int),
    droppedAttributesCount: 0,
    events: [],
    droppedEventsCount: 0,
    status: { code: 0 },
    links: [],
    droppedLinksCount: 0,
    flags: 1,
  };
}

export interface MixOptions {
  /** Application spans per MCP span: 9 gives a stream in which 1 span in 10 is an MCP span. */
  perMcpSpan?: number;
  /** Spans an export request holds (the BatchSpanProcessor's maxExportBatchSize). */
  perBody?: number;
  /** The spans' service; the MCP spans keep their own when they have one. */
  service?: string;
  /** Seeds the application spans (ids, paths): the same seed gives the same spans. */
  seed?: number;
  /** int64 attribute values as the encoding spells them (a string in OTLP/JSON, a number for protobufjs). */
  intValue?: (n: number) => string | number;
}

/**
 * OTLP export requests (plain objects, the OTLP/JSON mapping) in which each MCP span of `mcp`, in order,
 * comes after `perMcpSpan` application spans: each request groups its spans by service, then by scope, as
 * the SDK's exporters do (the MCP spans under @resumewatch/instrumentation's scope, or `mcpScope`).
 */
export function mixedRequests(mcp: SpanRecord[], options: MixOptions = {}): Record<string, unknown>[] {
  const per = options.perMcpSpan ?? 9;
  const perBody = options.perBody ?? 512;
  const appService = options.service ?? 'shop-api';
  const int = options.intValue ?? String;
  const rand = rng(options.seed ?? 1);
  const out: Record<string, unknown>[] = [];
  /** Spans of the body being filled: service → scope → spans. */
  let body = new Map<string, Map<string, OtlpJsonSpan[]>>();
  let inBody = 0;
  const push = (service: string, scope: string, span: OtlpJsonSpan): void => {
    let scopes = body.get(service);
    if (!scopes) body.set(service, (scopes = new Map()));
    let spans = scopes.get(scope);
    if (!spans) scopes.set(scope, (spans = []));
    spans.push(span);
    if (++inBody === perBody) flush();
  };
  const flush = (): void => {
    if (inBody === 0) return;
    out.push({
      resourceSpans: [...body].map(([service, scopes]) => ({
        resource: { attributes: otlpAttributes(resourceAttributes(service), int), droppedAttributesCount: 0 },
        scopeSpans: [...scopes].map(([scope, spans]) => ({
          scope: { name: scope, version: scope === TRACER_SCOPE ? '0.1.0' : '0.57.2' },
          spans,
        })),
      })),
    });
    body = new Map();
    inBody = 0;
  };
  let app: AppSpan[] = [];
  let appIndex = 0;
  let request = 0;
  let trace = '';
  let root = '';
  let t = 1_700_000_000_000;
  let spanSeq = Math.floor(rand() * 1e9);
  for (const s of mcp) {
    for (let k = 0; k < per; k++) {
      if (appIndex === app.length) {
        app = requestSpans(request, rand);
        appIndex = 0;
        trace =
          hex(Math.floor(rand() * 2 ** 32), 8) + hex(request, 8) + hex(Math.floor(rand() * 2 ** 32), 8) + 'a1b2c3d4';
        request++;
      }
      const a = app[appIndex]!;
      const spanId = hex(Math.floor(rand() * 2 ** 32), 8) + hex(++spanSeq >>> 0, 8);
      if (appIndex === 0) root = spanId;
      const start = t + appIndex * 0.7;
      const span: OtlpJsonSpan = {
        traceId: trace,
        spanId,
        ...(appIndex === 0 ? {} : { parentSpanId: root }),
        name: a.name,
        kind: a.kind,
        startTimeUnixNano: nanos(start),
        endTimeUnixNano: nanos(start + 0.4 + rand() * 12),
        attributes: otlpAttributes(a.attributes, int),
        droppedAttributesCount: 0,
        events: a.error
          ? [
              {
                timeUnixNano: nanos(start + 0.3),
                name: 'exception',
                attributes: otlpAttributes(
                  {
                    'exception.type': 'Error',
                    'exception.message': a.error,
                    'exception.stacktrace': `Error: ${a.error}\n    at handler (/app/dist/routes/orders.js:41:11)\n    at Layer.handle [as handle_request] (/app/node_modules/express/lib/router/layer.js:95:5)`,
                  },
                  int,
                ),
                droppedAttributesCount: 0,
              },
            ]
          : [],
        droppedEventsCount: 0,
        status: a.error ? { code: 2, message: a.error } : { code: 0 },
        links: [],
        droppedLinksCount: 0,
        flags: 1,
      };
      push(appService, a.scope, span);
      appIndex++;
      t += 0.05;
    }
    push(s.service || appService, TRACER_SCOPE, mcpSpan(s, int));
  }
  flush();
  return out;
}

/** OTLP/JSON bodies (text) of mixedRequests. */
export function mixedJsonBodies(mcp: SpanRecord[], options: Omit<MixOptions, 'intValue'> = {}): string[] {
  return mixedRequests(mcp, options).map((r) => JSON.stringify(r));
}
