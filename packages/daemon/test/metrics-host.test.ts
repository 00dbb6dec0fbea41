import { request } from 'node:http';
import { ROUTE_FINDINGS, ROUTE_HEALTHZ, ROUTE_METRICS, ROUTE_PAGE, ROUTE_PAGE_DATA } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/index.js';
import { otlpJson } from '../../detector/test/helpers/otlp.js';
import { seedScenario } from '../../detector/test/helpers/spans.js';
import { waitFor } from '../../detector/test/helpers/wait.js';
import { rawConnect } from './helpers/raw-client.js';

/*
 * The metrics port against DNS rebinding: a page on attacker.example whose name is re-pointed at
 * 127.0.0.1 reads the port as same-origin, and without --token /page.json and /findings hold raw
 * session ids. Every request goes to 127.0.0.1; only its Host (and Origin) header says otherwise.
 */

const SESSION = 'rebinding-secret-session';
const READS = [ROUTE_PAGE_DATA, ROUTE_FINDINGS, ROUTE_PAGE, ROUTE_METRICS];

function get(port: number, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A serve on 127.0.0.1 with no token that has found the seed signature of SESSION. */
async function servingFindings(options: Parameters<typeof startServer>[0] = {}): Promise<RunningServer> {
  const server = await startServer({ port: 0, grpcPort: false, metricsPort: 0, output: null, ...options });
  // Under a name the receiver allows (it takes the same --allowed-hosts).
  const host = options.allowedHosts?.[0] ?? `127.0.0.1:${server.httpPort}`;
  const status = await new Promise<number>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.httpPort,
        path: '/v1/traces',
        method: 'POST',
        headers: { 'content-type': 'application/json', host },
        agent: false,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode!);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(otlpJson(seedScenario({ session: SESSION, request: 1 }, 3))));
  });
  expect(status).toBe(200);
  await waitFor(() => server.findings().some((f) => f.session_id === SESSION), 'the seed findings', 10_000);
  return server;
}

describe('the metrics port checks Host and Origin', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await servingFindings();
  });
  afterAll(() => server.close());

  it('a rebound Host reads neither /page.json nor /findings (nor the page or /metrics): 403', async () => {
    for (const host of ['attacker.example', `attacker.example:${server.metricsPort}`]) {
      for (const path of READS) {
        const res = await get(server.metricsPort, path, { host });
        expect(res.status, `${host} ${path}`).toBe(403);
        expect(res.body).toBe(`Host ${JSON.stringify(host)} is not allowed (--allowed-hosts)\n`);
        expect(res.body).not.toContain(SESSION);
      }
    }
  });

  it('the loopback names read them, with or without a port', async () => {
    const port = server.metricsPort;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'localhost', `[::1]:${port}`]) {
      for (const path of [ROUTE_PAGE_DATA, ROUTE_FINDINGS]) {
        const res = await get(port, path, { host });
        expect(res.status, `${host} ${path}`).toBe(200);
        expect(res.body).toContain(SESSION);
      }
    }
  });

  it('a foreign Origin is refused even with a loopback Host; a loopback one is not', async () => {
    const host = `127.0.0.1:${server.metricsPort}`;
    const foreign = await get(server.metricsPort, ROUTE_FINDINGS, { host, origin: 'http://attacker.example' });
    expect(foreign.status).toBe(403);
    expect(foreign.body).toBe('Origin "http://attacker.example" is not allowed (--allowed-origins)\n');
    const local = await get(server.metricsPort, ROUTE_FINDINGS, { host, origin: 'http://localhost:3000' });
    expect(local.status).toBe(200);
  });

  it("/healthz answers any Host, and a probe that sends none (HTTP/1.0, as haproxy's check)", async () => {
    expect((await get(server.metricsPort, ROUTE_HEALTHZ, { host: 'attacker.example' })).status).toBe(200);
    const probe = await rawConnect(server.metricsPort);
    probe.socket.write(`GET ${ROUTE_HEALTHZ} HTTP/1.0\r\n\r\n`);
    expect(await probe.until(/\r\n\r\nok\n$/)).toMatch(/^HTTP\/1\.1 200 /);
    probe.socket.destroy();
    // The same probe to a route with data is refused: no Host is no loopback name.
    const bare = await rawConnect(server.metricsPort);
    bare.socket.write(`GET ${ROUTE_FINDINGS} HTTP/1.0\r\n\r\n`);
    expect(await bare.until(/no Host header/)).toMatch(/^HTTP\/1\.1 403 /);
    bare.socket.destroy();
  });
});

describe('the metrics port with --allowed-hosts and --allowed-origins', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await servingFindings({
      allowedHosts: ['metrics.example.com'],
      allowedOrigins: ['https://dash.example.com'],
    });
  });
  afterAll(() => server.close());

  it('the configured name reads /page.json and /findings; the loopback names no longer do', async () => {
    for (const path of [ROUTE_PAGE_DATA, ROUTE_FINDINGS]) {
      const named = await get(server.metricsPort, path, { host: `metrics.example.com:${server.metricsPort}` });
      expect(named.status, path).toBe(200);
      expect(named.body).toContain(SESSION);
      for (const host of [`127.0.0.1:${server.metricsPort}`, 'attacker.example'])
        expect((await get(server.metricsPort, path, { host })).status, `${host} ${path}`).toBe(403);
    }
  });

  it('the configured origin passes, another is refused', async () => {
    const host = 'metrics.example.com';
    expect((await get(server.metricsPort, ROUTE_FINDINGS, { host, origin: 'https://dash.example.com' })).status).toBe(
      200,
    );
    expect((await get(server.metricsPort, ROUTE_FINDINGS, { host, origin: 'https://evil.example.com' })).status).toBe(
      403,
    );
  });
});
