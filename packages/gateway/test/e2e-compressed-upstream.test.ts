// The SDK 1.x client against the SDK 1.x lab server behind compression middleware (a tiny node:zlib
// proxy that gzips every JSON and SSE body whose request accepts gzip, flushing each chunk as SSE
// compression must), through the gateway. Node's fetch, so the SDK client, sends `Accept-Encoding:
// gzip, deflate`: observing, the gateway reads a decoded copy of the gzip'd bodies and finds what it
// finds without compression; enforcing, it asks the upstream for identity, and nothing is compressed.
import { createServer, request } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createGzip } from 'node:zlib';
import { runScenario, startLabServer } from '@resumewatch/lab';
import { FindingKind } from '@resumewatch/semconv';
import { afterEach, describe, expect, it } from 'vitest';
import { CLIENT_EXPECTED } from './helpers/e2e-expected.js';
import { gatewayMcpUrl, kindsOf, settleGateway, startTestGateway, waitFor } from './helpers/e2e-rig.js';

const TIMEOUT = 40_000;

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** Compression middleware in front of `target`: what it compressed is counted. */
async function compressing(target: string): Promise<{ url: string; compressed: () => number }> {
  const origin = new URL(target);
  let compressed = 0;
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const upstream = request(
      { host: origin.hostname, port: origin.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        const type = String(answer.headers['content-type'] ?? '');
        const gzip =
          /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? '')) &&
          (type.includes('application/json') || type.includes('text/event-stream'));
        if (!gzip) {
          res.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(res);
          return;
        }
        compressed++;
        const headers = { ...answer.headers, 'content-encoding': 'gzip' };
        delete headers['content-length'];
        res.writeHead(answer.statusCode!, headers);
        const gz = createGzip();
        gz.pipe(res);
        answer.on('data', (chunk: Buffer) => {
          gz.write(chunk);
          gz.flush();
        });
        answer.once('end', () => gz.end());
        answer.once('error', () => res.destroy());
      },
    );
    upstream.once('error', () => res.destroy());
    res.once('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  );
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${origin.pathname}`,
    compressed: () => compressed,
  };
}

async function rig(enforce: boolean) {
  const lab = await startLabServer({ retryIntervalMs: 50 });
  closers.push(() => lab.close());
  const middleware = await compressing(lab.url);
  const gateway = await startTestGateway(middleware.url, { enforce, requestTimeoutMs: 10_000 });
  closers.push(() => gateway.close());
  return { lab, middleware, gateway, url: gatewayMcpUrl(gateway, middleware.url) };
}

describe('SDK 1.x client and server behind compression, through the gateway', () => {
  it.each(['quiet-resume', 'polling', 'cancellation'] as const)(
    'observing, %s: gzip’d bodies, decoded copies read, the findings of the uncompressed run',
    { timeout: TIMEOUT },
    async (name) => {
      const { lab, middleware, gateway, url } = await rig(false);
      const summary = await runScenario(name, {
        serverUrl: url,
        controlUrl: lab.controlUrl,
        client: 'sdk',
        maxReconnects: 5,
      });
      expect(middleware.compressed()).toBeGreaterThan(0);
      if (name === 'quiet-resume') expect(summary.resultsPerRequest).toEqual({ '1': 1 });
      // Each request ends on its result, read from a decoded copy (decoded off the loop's thread: waited for).
      await waitFor(() => gateway.stats().openRequests === 0, 'every request to end on its result');
      await settleGateway(gateway);
      expect(gateway.stats().unreadEncodedBodies).toBe(0);
      // Waited to the request deadline, `cancellation`'s second call (its client closed its transport, with no
      // notifications/cancelled and no DELETE) is reported lost: at a proxy a closed transport is a dropped
      // connection, and the result was neither resumed nor re-issued by its deadline. The same without
      // compression; the client's own instrumentation, which sees the application close it, reports nothing.
      const expected = name === 'cancellation' ? [FindingKind.LOST_RESULT] : [...CLIENT_EXPECTED[name]];
      expect(kindsOf(gateway.detector!.findings())).toEqual(expected.sort());
    },
  );

  it(
    'enforcing, quiet-resume: identity asked, nothing compressed, the result once, no action, no finding',
    { timeout: TIMEOUT },
    async () => {
      const { lab, middleware, gateway, url } = await rig(true);
      const summary = await runScenario('quiet-resume', { serverUrl: url, controlUrl: lab.controlUrl, client: 'sdk' });
      expect(summary.resumeStatuses).toEqual([200]);
      expect(summary.resultsPerRequest).toEqual({ '1': 1 });
      expect(middleware.compressed()).toBe(0);
      await settleGateway(gateway);
      expect(gateway.counts().actions).toEqual({});
      expect(gateway.stats().unreadEncodedBodies).toBe(0);
      expect(kindsOf(gateway.detector!.findings())).toEqual([]);
    },
  );
});
