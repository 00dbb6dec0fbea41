// The loop scenarios of issue 39 and their healthy twins, on the real SDK 1.x client and servers (and
// server-everything) over loopback HTTP: each run's traffic shows what the scenario claims, read off the
// server's own request log and off the client's recording fetch. Findings are not asserted here (the
// detector's tests do that); the promised kinds are checked for shape only.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FindingKind } from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { LOOP_SCENARIO_EXPECTED_FINDINGS, LOOP_SCENARIO_NAMES, runScenario, scenarioClients } from '../src/index.js';
import type { LoopClientRequest, LoopServerRequest, ScenarioSummary } from '../src/index.js';

const UNUSED = 'http://127.0.0.1:9/mcp';
type Counts = Record<string, number>;

const clientStatuses = (summary: ScenarioSummary): Counts => summary.details.clientStatuses as Counts;
const serverStatuses = (summary: ScenarioSummary): Counts => summary.details.serverStatuses as Counts;
const serverRequests = (summary: ScenarioSummary): LoopServerRequest[] =>
  summary.details.serverRequests as LoopServerRequest[];

describe('loop scenarios (SDK 1.x)', { timeout: 30_000 }, () => {
  it('dead-session-loop: ten calls on the forgotten session, each answered 404, no initialize between', async () => {
    const summary = await runScenario('dead-session-loop', { serverUrl: UNUSED });
    const dead = summary.details.deadSessionId as string;
    expect(dead).toBeTruthy();
    expect((summary.details.firstCall as { ok: boolean }).ok).toBe(true);
    const requests = serverRequests(summary);
    const refused = requests.filter((request) => request.sessionId === dead && request.status === 404);
    expect(refused.filter((request) => request.method === 'POST')).toHaveLength(10);
    expect(requests.filter((request) => request.rpc === 'initialize')).toHaveLength(1);
    // Past initialize, one call came back: the one before the server forgot the session.
    const initialize = requests.findIndex((request) => request.rpc === 'initialize');
    expect(
      requests.slice(initialize + 1).filter((request) => request.status === 200 && request.method === 'POST'),
    ).toHaveLength(1);
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.expectedFindings).toEqual([FindingKind.DEAD_SESSION_LOOP]);
  });

  it('dead-session-reinit: one 404, a new initialize, then the call succeeds on the new session', async () => {
    const summary = await runScenario('dead-session-reinit', { serverUrl: UNUSED });
    const dead = summary.details.deadSessionId as string;
    const renewed = summary.details.newSessionId as string;
    expect(renewed).toBeTruthy();
    expect(renewed).not.toBe(dead);
    const requests = serverRequests(summary);
    expect(requests.filter((request) => request.method === 'POST' && request.status === 404)).toHaveLength(1);
    expect(requests.filter((request) => request.rpc === 'initialize')).toHaveLength(2);
    const refusedAt = requests.findIndex((request) => request.status === 404);
    const reinitAt = requests.findIndex((request, i) => i > refusedAt && request.rpc === 'initialize');
    expect(reinitAt).toBeGreaterThan(refusedAt);
    // The call after the new initialize, on the new session, came back.
    expect(
      requests.filter(
        (request) => request.rpc === 'tools/call' && request.sessionId === renewed && request.status === 200,
      ),
    ).toHaveLength(1);
    expect(summary.details.callAfterReinit).toEqual({ ok: true, text: 'after reinitialize' });
    expect(summary.terminalDeliveries).toBe(2);
    expect(summary.expectedFindings).toEqual([]);
  });

  it('dead-session-loop-400: server-everything answers each call on the ended session 400', async () => {
    const summary = await runScenario('dead-session-loop-400', { serverUrl: UNUSED });
    expect((summary.details.firstCall as { ok: boolean }).ok).toBe(true);
    expect(summary.details.deleteStatus).toBe(200);
    const dead = summary.details.deadSessionId as string;
    const posts = (summary.details.clientRequests as LoopClientRequest[]).filter(
      (request) => request.method === 'POST' && request.sessionId === dead && request.status === 400,
    );
    expect(posts).toHaveLength(10);
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.expectedFindings).toEqual([FindingKind.DEAD_SESSION_LOOP]);
  });

  it('listening-stream-loop: eleven GETs against a server that offers none, each answered 405', async () => {
    const summary = await runScenario('listening-stream-loop', { serverUrl: UNUSED });
    // The SDK client's own GET, then the ten of the loop.
    expect(serverStatuses(summary)['GET 405']).toBe(11);
    expect(Object.keys(serverStatuses(summary)).filter((key) => key.startsWith('GET'))).toEqual(['GET 405']);
    expect(clientStatuses(summary)['GET 405']).toBe(11);
    expect(summary.expectedFindings).toEqual([FindingKind.LISTENING_STREAM_LOOP]);
  });

  it('listening-stream-loop-closed: the SDK client re-opens each stream the server closed at once', async () => {
    const summary = await runScenario('listening-stream-loop-closed', { serverUrl: UNUSED });
    expect(summary.details.reached).toBe(true);
    expect(serverStatuses(summary)['GET 200']).toBeGreaterThanOrEqual(10);
    expect(summary.expectedFindings).toEqual([FindingKind.LISTENING_STREAM_LOOP]);
  });

  it('listening-stream-stops: one GET answered 405, none after, and the call succeeds', async () => {
    const summary = await runScenario('listening-stream-stops', { serverUrl: UNUSED });
    expect(serverStatuses(summary)['GET 405']).toBe(1);
    expect(serverRequests(summary).filter((request) => request.method === 'GET')).toHaveLength(1);
    expect(summary.details.call).toEqual({ ok: true, text: 'still here' });
    expect(summary.expectedFindings).toEqual([]);
  });

  it('listening-stream-retry-pace: the client waits the announced retry before each re-open', async () => {
    const summary = await runScenario('listening-stream-retry-pace', { serverUrl: UNUSED });
    expect(summary.details.reached).toBe(true);
    const retryMs = summary.details.retryMs as number;
    const gaps = summary.details.gapsMs as number[];
    expect(gaps.length).toBeGreaterThanOrEqual(3);
    // A lower bound the client's own timer sets (a timer never fires early), not a wall time.
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(retryMs - 5);
    // Each re-open resumed from the priming event the server wrote.
    const gets = serverRequests(summary).filter((request) => request.method === 'GET');
    expect(serverStatuses(summary)['GET 200']).toBe(gets.length);
    expect(gets[0]!.lastEventId).toBeUndefined();
    expect(gets.slice(1).every((request) => request.lastEventId?.startsWith('priming-'))).toBe(true);
    expect(summary.expectedFindings).toEqual([]);
  });

  it('runs behind a front: every request of the loop goes through it', async () => {
    const seen: string[] = [];
    const front = async (serverUrl: string) => {
      const target = new URL(serverUrl);
      const proxy = createServer((req, res) => {
        seen.push(req.method ?? '');
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(req.headers))
            if (typeof value === 'string' && name !== 'host' && name !== 'content-length') headers.set(name, value);
          void fetch(new URL(req.url ?? '/', target), {
            method: req.method,
            headers,
            body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
          }).then(async (response) => {
            res.writeHead(response.status, Object.fromEntries(response.headers));
            res.end(Buffer.from(await response.arrayBuffer()));
          });
        });
      });
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
      const { port } = proxy.address() as AddressInfo;
      return {
        url: `http://127.0.0.1:${port}${target.pathname}`,
        close: () => new Promise<void>((resolve) => proxy.close(() => resolve())),
      };
    };
    const summary = await runScenario('dead-session-loop', { serverUrl: UNUSED, loops: { front } });
    expect(serverStatuses(summary)['POST 404']).toBe(10);
    expect(seen.filter((method) => method === 'POST').length).toBe(
      serverRequests(summary).filter((r) => r.method === 'POST').length,
    );
  });

  it('every loop scenario has its expected findings and runs with the SDK 1.x client only', () => {
    expect(Object.keys(LOOP_SCENARIO_EXPECTED_FINDINGS).sort()).toEqual([...LOOP_SCENARIO_NAMES].sort());
    for (const name of LOOP_SCENARIO_NAMES) expect(scenarioClients(name)).toEqual(['sdk']);
  });
});
