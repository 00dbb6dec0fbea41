import { describe, expect, it, vi } from 'vitest';
import { ResumeDecision, guardedFetch } from '../src/index.js';
import { recordGuard } from './helpers/record-guard.js';
import { WAIT } from './helpers/wait.js';
import { CLIENT_KINDS, connectClient } from '../../instrumentation/test/helpers/clients.js';
import { ReplayEverythingStore, RequestKeyedStore } from '../../instrumentation/test/helpers/peer-stores.js';
import { sdkServerPerTest } from '../../instrumentation/test/helpers/sdk-server.js';

// guardedFetch between the SDK 1.x or v2 client and servers built only from MCP SDK 1.32 parts, over
// real loopback HTTP: what the application is told, and what reaches it.

const sdkServer = sdkServerPerTest();

function guarded(extra = {}) {
  const seen = recordGuard(extra);
  return { seen, fetch: guardedFetch(seen.options) };
}

describe.each(CLIENT_KINDS)('guardedFetch with the %s client', (kind) => {
  it('quiet resume (2.2 s of silence after a cut): a continuation, no escalation, the result once', async () => {
    const server = await sdkServer();
    const { seen, fetch } = guarded();
    const client = await connectClient(kind, server.url, fetch);
    server.cutNextCallAfter = 2;
    expect(await client.call('quiet', { gapMs: 2200 })).toBe('quiet done');
    await client.close();
    expect(seen.decisions.map((d) => [d.outcome, d.evidence, d.decision])).toEqual([
      ['continuation', 'message', ResumeDecision.CONTINUATION_VALID],
    ]);
    expect(seen.failed).toEqual([]);
    expect(seen.dropped).toEqual([]);
    expect(client.errors.filter((e) => !String(e).includes('SSE stream disconnected'))).toEqual([]);
  });

  it('SEP-1699 polling, ten polls before the result: only poll and continuation verdicts, no failure', async () => {
    const server = await sdkServer({ retryInterval: 10, primeResumes: true });
    const { seen, fetch } = guarded();
    const client = await connectClient(kind, server.url, fetch);
    expect(await client.call('poll', { polls: 11 })).toBe('polled 11');
    await client.close();
    expect(seen.decisions.map((d) => d.decision)).toEqual([
      ...Array(10).fill(ResumeDecision.POLL_NO_ACTION),
      ResumeDecision.CONTINUATION_VALID,
    ]);
    expect(seen.failed).toEqual([]);
    expect(fetch.listener.stats()).toEqual({
      silentResumes: 0,
      unsettledRequests: 0,
      brokenRequests: 0,
      tasks: 0,
      taskHandles: 0,
      refusedSessions: 0,
      refusedListeningStreams: 0,
      deadSessionAnswers: 0,
      listeningRefusalAnswers: 0,
      evictions: 0,
    });
  });

  it('a store that replays every stream: the old result replayed into the listening stream is removed, nothing attributed', async () => {
    const server = await sdkServer({ store: () => new ReplayEverythingStore() });
    const { seen, fetch } = guarded();
    const client = await connectClient(kind, server.url, fetch);
    await vi.waitFor(() => expect(fetch.observer.getSession(client.sessionId)?.lastStandalone).toBeDefined(), WAIT);
    await server.notifyListening(client.sessionId);
    await vi.waitFor(
      () => expect(fetch.observer.getSession(client.sessionId)?.lastStandalone?.lastEventId).toBeDefined(),
      WAIT,
    );
    expect(await client.call('echo', { text: 'one' })).toBe('one');
    server.closeListening(client.sessionId);
    await vi.waitFor(() => expect(seen.dropped).toHaveLength(1), WAIT);
    await client.close();
    expect(seen.dropped.map((d) => [d.requestId, d.foreign, d.action])).toEqual([
      ['1', true, 'duplicate_terminal_dropped'],
    ]);
    expect(seen.decisions.map((d) => [d.requestId, d.outcome])).toEqual([[undefined, 'continuation']]);
    expect(seen.failed).toEqual([]);
    expect(seen.conflicts).toEqual([]);
  });

  it('a store shared across sessions keyed by request id: the real result is reported as a conflict, not dropped silently', async () => {
    const server = await sdkServer({
      store: (() => {
        const shared = new RequestKeyedStore();
        return () => shared;
      })(),
      retryInterval: 20,
    });
    const { seen, fetch } = guarded();
    const a = await connectClient(kind, server.url, fetch);
    const b = await connectClient(kind, server.url, undefined);
    server.cutNextCallAfter = 2;
    let release = () => {};
    server.holdResumes = new Promise<void>((resolve) => (release = resolve));
    const call = a.call('slow', { ms: 1200 });
    await vi.waitFor(() => expect(a.progress).toHaveLength(1), WAIT);
    // The other session's call completes before this client's resume reaches the store.
    await b.call('echo', { text: 'Echo: from session B' });
    release();
    expect(await call).toBe('Echo: from session B');
    await vi.waitFor(() => expect(seen.conflicts).toHaveLength(1), WAIT);
    await a.close();
    await b.close();
    const [conflict] = seen.conflicts;
    expect([conflict!.action, conflict!.sessionId, conflict!.requestId, conflict!.removed, conflict!.foreign]).toEqual([
      'conflicting_terminal_reported',
      a.sessionId,
      '1',
      true,
      false,
    ]);
    expect(conflict!.delivered.eventId).toEqual(expect.any(String));
    expect(conflict!.conflicting.eventId).toEqual(expect.any(String));
    expect(seen.dropped).toEqual([]);
    // The real result never reached the client as an unknown response: the guard removed it.
    expect(a.errors.filter((e) => String(e).includes('unknown'))).toEqual([]);
  });
});
