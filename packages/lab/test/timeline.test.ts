import { describe, expect, it } from 'vitest';
import { RunTimeline, formatRequestTimeline, runScenario } from '../src/index.js';
import { labServerPerFile } from './helpers/lab-per-file.js';

const lab = labServerPerFile();

describe('RunTimeline: what the client fetch saw, per request', () => {
  it('seed-loop: one request went wrong; its terminal 4 times, 4 resumes after it with the stale cursor', async () => {
    const timeline = new RunTimeline();
    const summary = await runScenario('seed-loop', {
      serverUrl: lab.server.url,
      fetch: timeline.wrap((input, init) => fetch(input, init)),
    });
    const [wrong, ...more] = timeline.wentWrong();
    expect(more).toEqual([]);
    expect(wrong).toMatchObject({
      sessionId: summary.sessionId,
      rpcId: String(summary.details.requestId),
      rpcMethod: 'tools/call stream_progress',
    });
    expect(wrong!.terminalDeliveries).toBe(summary.terminalDeliveries);
    expect(wrong!.resumesAfterTerminal).toBe(summary.reconnects);
    const [post, ...resumes] = wrong!.exchanges;
    expect(post).toMatchObject({ method: 'POST', status: 200, endedCleanly: true });
    expect(resumes.map((x) => x.status)).toEqual(summary.resumeStatuses);
    expect(new Set(resumes.map((x) => x.lastEventId))).toEqual(new Set([summary.details.staleCursor]));
    // Each replay carries the same terminal event as the POST did.
    const terminalIds = wrong!.exchanges.flatMap((x) => x.terminals.map((t) => t.eventId));
    expect(terminalIds).toEqual(summary.details.terminalEventIds);
    const text = formatRequestTimeline(wrong!);
    expect(text.split('\n')).toHaveLength(1 + 1 + 1 + 4 + 3 + 1);
  });

  it('network-cut: the resume of an unfinished request is a continuation, not a request that went wrong', async () => {
    const timeline = new RunTimeline();
    const summary = await runScenario('network-cut', {
      serverUrl: lab.server.url,
      fetch: timeline.wrap((input, init) => fetch(input, init)),
    });
    expect(timeline.wentWrong()).toEqual([]);
    const request = timeline.requests().find((r) => r.rpcId === String(summary.details.requestId))!;
    // The cut POST, then the resume with the last id it got, traced back to the request by that cursor.
    expect(request.exchanges.map((x) => x.method)).toEqual(['POST', 'GET']);
    expect(request.exchanges[0]!.endedCleanly).toBe(false);
    expect(request.exchanges[1]!.lastEventId).toBe(request.exchanges[0]!.eventIds.at(-1));
    expect(request.terminalDeliveries).toBe(1);
    expect(request.resumesAfterTerminal).toBe(0);
  });

  it('healthy: nothing went wrong', async () => {
    const timeline = new RunTimeline();
    await runScenario('healthy', {
      serverUrl: lab.server.url,
      fetch: timeline.wrap((input, init) => fetch(input, init)),
    });
    expect(timeline.requests().length).toBeGreaterThan(0);
    expect(timeline.wentWrong()).toEqual([]);
  });
});
