import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEverythingServer } from '../src/everything-server.js';
import type { EverythingServer } from '../src/everything-server.js';
import { startFaultProxy } from '../src/index.js';
import type { FaultProxy } from '../src/index.js';
import { connectSdkSession, responsesPerRequest, resumesIn } from '../src/scenarios/sdk-clients.js';

let everything: EverythingServer;
let proxy: FaultProxy;

beforeAll(async () => {
  everything = await startEverythingServer();
  proxy = await startFaultProxy({ target: everything.url });
});

afterAll(async () => {
  await proxy?.close();
  await everything?.stop();
});

/** Every request id answered exactly once: the tool calls (ids 1..n) and nothing else. */
function oncePerRequest(n: number): Record<string, number> {
  return Object.fromEntries(Array.from({ length: n }, (_, index) => [String(index + 1), 1]));
}

describe('the official everything server as a peer (SDK 1.x client through the fault proxy)', () => {
  it('listens on 127.0.0.1 only, at /mcp, in Streamable HTTP mode', () => {
    expect(everything.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(everything.port).toBeGreaterThan(0);
    expect(everything.output()).toContain('Streamable HTTP');
  });

  it('healthy workload: four tool calls, one with progress; every result arrives once, no resume', async () => {
    const session = await connectSdkSession('sdk', proxy.url, fetch, 'everything-healthy');
    const progress: number[] = [];
    const texts = [
      (await session.callTool('echo', { message: 'one' })).content?.[0]?.text,
      (await session.callTool('get-sum', { a: 2, b: 3 })).content?.[0]?.text,
      (
        await session.callTool(
          'trigger-long-running-operation',
          { duration: 0.3, steps: 3 },
          { onprogress: (p) => void progress.push(p.progress) },
        )
      ).content?.[0]?.text,
      (await session.callTool('echo', { message: 'two' })).content?.[0]?.text,
    ];
    await session.terminate();
    await session.close();
    expect(texts[0]).toBe('Echo: one');
    expect(texts[1]).toContain('5');
    expect(texts[2]).toBe('Long running operation completed. Duration: 0.3 seconds, Steps: 3.');
    expect(texts[3]).toBe('Echo: two');
    expect(progress).toEqual([1, 2, 3]);
    expect(responsesPerRequest(session.log)).toEqual(oncePerRequest(4));
    expect(resumesIn(session.log)).toEqual([]);
    expect(session.errors).toEqual([]);
  });

  it('cut and resume: the POST stream is cut after the first progress update; the SDK resumes and every result arrives once', async () => {
    const session = await connectSdkSession('sdk', proxy.url, fetch, 'everything-cut');
    const progress: number[] = [];
    const before = (await session.callTool('echo', { message: 'before' })).content?.[0]?.text;
    // Priming event + progress 1, then the TCP cut. The operation finishes (0.3 s) before the SDK's
    // first reconnect (1 s: the everything server sends no `retry:`), so the replay holds the result;
    // its store would lose live events of a stream resumed mid-operation.
    proxy.armCut({ method: 'POST', afterEvents: 2 });
    const cut = (
      await session.callTool(
        'trigger-long-running-operation',
        { duration: 0.3, steps: 3 },
        { onprogress: (p) => void progress.push(p.progress) },
      )
    ).content?.[0]?.text;
    const after = (await session.callTool('echo', { message: 'after' })).content?.[0]?.text;
    const resumes = resumesIn(session.log);
    await session.terminate();
    await session.close();
    expect([before, cut, after]).toEqual([
      'Echo: before',
      'Long running operation completed. Duration: 0.3 seconds, Steps: 3.',
      'Echo: after',
    ]);
    expect(proxy.cuts.at(-1)?.eventsForwarded).toBe(2);
    expect(resumes.map((entry) => entry.status)).toEqual([200]);
    expect(progress).toEqual([1, 2, 3]);
    expect(responsesPerRequest(session.log)).toEqual(oncePerRequest(3));
  });
});
