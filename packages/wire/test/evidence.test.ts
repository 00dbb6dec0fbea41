import { describe, expect, it } from 'vitest';
import { WireObserver } from '../src/index.js';
import type { TerminalObservation, WireEvent, WireRequest, WireResponse } from '../src/index.js';
import { SCRIPTED_SESSION, progress, result, scriptedServerPerFile, sse } from './helpers/scripted-server.js';

const scripted = scriptedServerPerFile();
const { call, get } = scripted;
const SESSION = SCRIPTED_SESSION;

function observed() {
  const observer = new WireObserver();
  const requests: WireRequest[] = [];
  const responses: WireResponse[] = [];
  const events: WireEvent[] = [];
  observer.addListener({
    onRequest: (r) => void requests.push(r),
    onResponse: (_q, r) => void responses.push(r),
    onEvent: (e) => void events.push(e),
  });
  const fetch = observer.wrap();
  const terminals = (): TerminalObservation[] => events.flatMap((e) => e.terminals);
  return { observer, fetch, requests, responses, events, terminals };
}

describe('messages, priming events and polling', () => {
  it('counts only events holding a JSON-RPC message; priming events, {} and other data are not messages', async () => {
    const wire = observed();
    await call(wire.fetch, 1, [
      sse({ id: 'p', data: '' }),
      sse({ id: 'e1', data: {} }),
      sse({ data: '{"foo":"bar"}' }),
      sse({ data: 'not json "method" at all' }),
      sse({ id: 'e2', data: progress(1) }),
      sse({ id: 'e3', data: result(1, 'done') }),
    ]);
    const stream = wire.responses[0]!.stream!;
    expect(stream.messageEvents).toBe(2);
    expect(stream.terminalEvents).toBe(1);
    expect(stream.kind).toBe('request');
    expect(stream.format).toBe('sse');
    expect(stream.pollingAnnounced).toBe(true);
  });

  it('takes a retry field as announced polling and passes it along the resume chain', async () => {
    const wire = observed();
    await call(wire.fetch, 2, [sse({ id: 'a1', data: progress(1) }), `retry: 20\n\n`]);
    const post = wire.responses[0]!.stream!;
    expect(post.pollingAnnounced).toBe(true);
    await get(wire.fetch, [], 'a1');
    const resumed = wire.responses[1]!.stream!;
    expect(resumed.kind).toBe('request');
    expect(resumed.pollingAnnounced).toBe(true);
    expect(resumed.messageEvents).toBe(0);
  });

  it('announces nothing on a stream without a priming event or retry field', async () => {
    const wire = observed();
    await call(wire.fetch, 3, [sse({ id: 'b1', data: progress(1) }), sse({ id: 'b2', data: result(3, 'x') })]);
    expect(wire.responses[0]!.stream!.pollingAnnounced).toBe(false);
  });
});

describe('the listening stream and foreign terminals', () => {
  it('keeps the listening stream and its resumes unattributed, marking a replayed terminal foreign', async () => {
    const wire = observed();
    await call(wire.fetch, 4, [sse({ id: 'c1', data: result(4, 'four') })]);
    await get(wire.fetch, [sse({ id: 'l1', data: progress(9) })]);
    const listening = wire.responses[1]!.stream!;
    expect(listening.kind).toBe('listening');
    // A store that replays every stream of the session into the resumed listening stream.
    await get(wire.fetch, [sse({ id: 'c1', data: result(4, 'four') })], 'l1');
    const resume = wire.requests[2]!.resume!;
    expect(resume.from?.id).toBe(listening.id);
    expect(resume.requests).toEqual([]);
    const resumed = wire.responses[2]!.stream!;
    expect(resumed.kind).toBe('listening');
    expect(resumed.requests).toEqual([]);
    expect(resumed.terminalEvents).toBe(0);
    expect(resumed.foreignTerminalEvents).toBe(1);
    const replayed = wire.terminals()[1]!;
    expect([replayed.foreign, replayed.duplicate, replayed.conflict, replayed.delivery]).toEqual([
      true,
      true,
      false,
      'replay',
    ]);
    expect(replayed.firstStream?.id).toBe(wire.responses[0]!.stream!.id);
    expect(replayed.firstEventId).toBe('c1');
  });

  it('marks a terminal for another request on a POST stream foreign, and delivers it as the first', async () => {
    const wire = observed();
    await call(wire.fetch, 5, [sse({ id: 'd1', data: progress(1) })]);
    await call(wire.fetch, 6, [sse({ id: 'd2', data: result(5, 'five') }), sse({ id: 'd3', data: result(6, 'six') })]);
    const [five, six] = wire.terminals();
    expect([five!.request.id, five!.foreign, five!.duplicate, five!.conflict]).toEqual(['5', true, false, false]);
    expect([six!.request.id, six!.foreign]).toEqual(['6', false]);
    expect(wire.responses[1]!.stream!.requests.map((r) => r.id)).toEqual(['6']);
  });

  it('learns the request of a resume whose cursor it cannot place from its first terminal, not foreign', async () => {
    const wire = observed();
    await call(wire.fetch, 7, [sse({ id: 'f1', data: progress(1) })]);
    await get(wire.fetch, [sse({ id: 'f3', data: result(7, 'seven') })], 'unknown-cursor');
    const stream = wire.responses[1]!.stream!;
    expect(stream.kind).toBeUndefined();
    expect(wire.terminals()[0]!.foreign).toBe(false);
    expect(stream.requests.map((r) => r.id)).toEqual(['7']);
  });
});

describe('conflicting terminals', () => {
  it('tells a duplicate (same content) from a conflict (different content), keeping the first terminal', async () => {
    const wire = observed();
    await call(wire.fetch, 8, [sse({ id: 'g1', data: progress(1) }), sse({ id: 'g2', data: result(8, 'mine') })]);
    await get(wire.fetch, [sse({ id: 'g2', data: result(8, 'mine') })], 'g1');
    await get(wire.fetch, [sse({ id: 'x9', data: result(8, 'from another session') })], 'g1');
    const [first, duplicate, conflict] = wire.terminals();
    const post = wire.responses[0]!.stream!;
    expect([first!.duplicate, first!.conflict, first!.firstStream]).toEqual([false, false, undefined]);
    expect([duplicate!.duplicate, duplicate!.conflict, duplicate!.firstStream?.id, duplicate!.firstEventId]).toEqual([
      true,
      false,
      post.id,
      'g2',
    ]);
    expect([conflict!.duplicate, conflict!.conflict, conflict!.firstStream?.id, conflict!.firstEventId]).toEqual([
      false,
      true,
      post.id,
      'g2',
    ]);
    const record = wire.observer.getRequest(SESSION, 8)!;
    expect(record.terminalCount).toBe(3);
    expect(record.firstTerminalStream?.id).toBe(post.id);
  });

  it('digests an error terminal by its error member', async () => {
    const wire = observed();
    const error = (message: string) => ({ jsonrpc: '2.0', id: 10, error: { code: -32603, message } });
    await call(wire.fetch, 10, [sse({ id: 'h1', data: error('a') })]);
    await get(wire.fetch, [sse({ id: 'h1', data: error('a') }), sse({ id: 'h2', data: error('b') })], 'h0');
    expect(wire.terminals().map((t) => [t.duplicate, t.conflict])).toEqual([
      [false, false],
      [true, false],
      [false, true],
    ]);
  });
});

describe('cancellation', () => {
  it('names the known requests a notifications/cancelled gives up', async () => {
    const wire = observed();
    await call(wire.fetch, 11, [sse({ id: 'k1', data: progress(1) })]);
    scripted.server.script.push({ status: 202, chunks: [] });
    const body = JSON.stringify({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 11, reason: 'user' },
    });
    await (
      await wire.fetch(scripted.server.url, { method: 'POST', headers: { 'mcp-session-id': SESSION }, body })
    ).text();
    expect(wire.requests[1]!.cancels.map((r) => r.id)).toEqual(['11']);
    expect(wire.requests[0]!.cancels).toEqual([]);
  });
});
