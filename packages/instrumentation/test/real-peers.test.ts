import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { ConflictingTerminal, DroppedTerminal, FailedResumption, ResumeReport } from '@resumewatch/guard';
import {
  ATTR_ERROR_TYPE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_REQUEST_TERMINAL_OBSERVED,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_RESUME_REPLAYED_TERMINAL,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_STREAM_KIND,
  ATTR_MCP_TERMINAL_CONFLICT,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_MCP_TERMINAL_FOREIGN,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  SPAN_REQUEST_TERMINAL,
  SPAN_STREAM_RESUME,
} from '@resumewatch/semconv';
import { describe, expect, it, vi } from 'vitest';
import { CLIENT_KINDS, connectClient } from './helpers/clients.js';
import type { ClientKind } from './helpers/clients.js';
import { ReplayEverythingStore, RequestKeyedStore } from './helpers/peer-stores.js';
import { attr as a, capturedFetch, captureSpans, IDLE, WAIT } from './helpers/spans.js';
import { MemoryEventStore, sdkServerPerTest } from './helpers/sdk-server.js';
import { instrumentEventStore } from '../src/index.js';

// Servers built only from MCP SDK 1.32 parts, the SDK 1.x and v2 clients, real loopback HTTP, the
// real OpenTelemetry SDK; each case with and without the guard (enforced on the same observer).

const sdkServer = sdkServerPerTest();

interface GuardSeen {
  decisions: ResumeReport[];
  failed: FailedResumption[];
  dropped: DroppedTerminal[];
  conflicts: ConflictingTerminal[];
}

function setup(guarded: boolean, requestTimeoutMs = 60_000) {
  const seen: GuardSeen = { decisions: [], failed: [], dropped: [], conflicts: [] };
  const guard = guarded
    ? {
        onResumeDecision: (r: ResumeReport) => void seen.decisions.push(r),
        onFailedResumption: (r: FailedResumption) => void seen.failed.push(r),
        onDuplicateTerminalDropped: (r: DroppedTerminal) => void seen.dropped.push(r),
        onConflictingTerminal: (r: ConflictingTerminal) => void seen.conflicts.push(r),
      }
    : undefined;
  const { capture, fetch } = capturedFetch({ requestTimeoutMs, guard });
  return { capture, fetch, seen };
}

const resumeSpans = (spans: ReadableSpan[]) => spans.filter((s) => s.name === SPAN_STREAM_RESUME);
const outcomes = (spans: ReadableSpan[]) =>
  resumeSpans(spans).map((s) => [a(s, ATTR_MCP_RESUME_OUTCOME), a(s, ATTR_MCP_RESUME_EVIDENCE)]);
const terminalsOf = (spans: ReadableSpan[], id: string) =>
  spans.filter((s) => s.name === SPAN_REQUEST_TERMINAL && a(s, ATTR_JSONRPC_REQUEST_ID) === id);

const cases: [ClientKind, boolean][] = CLIENT_KINDS.flatMap((kind) => [
  [kind, false] as [ClientKind, boolean],
  [kind, true] as [ClientKind, boolean],
]);

describe('a quiet resume: progress, a cut after the first update, seconds of silence, then the result', () => {
  it.each(cases)('%s (guard: %s): one continuation, no escalation, the result exactly once', async (kind, guarded) => {
    const server = await sdkServer();
    const { capture, fetch, seen } = setup(guarded);
    const client = await connectClient(kind, server.url, fetch);
    // The priming event and the first progress update reach the client; then the socket is destroyed.
    server.cutNextCallAfter = 2;
    // Longer than the replay windows this package (2 s) and the guard (1 s) used to judge silence by.
    expect(await client.call('quiet', { gapMs: 2200 })).toBe('quiet done');
    await client.close();
    await vi.waitFor(() => expect(fetch.stats().openResumes, 'the resumed stream to end').toBe(0), WAIT);

    const request = capture.spans('tools/call quiet')[0]!;
    const id = String(a(request, ATTR_JSONRPC_REQUEST_ID));
    expect(a(request, ATTR_ERROR_TYPE)).toBeUndefined();
    expect(outcomes(capture.spans())).toEqual([['continuation', 'message']]);
    const resume = resumeSpans(capture.spans())[0]!;
    expect(resume.attributes).toMatchObject({
      [ATTR_JSONRPC_REQUEST_ID]: id,
      [ATTR_MCP_STREAM_KIND]: 'request',
      [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: false,
      [ATTR_MCP_RESUME_REPLAYED_TERMINAL]: true,
    });
    expect(a(resume, ATTR_MCP_GUARD_ACTION)).toBeUndefined();
    const terminals = terminalsOf(capture.spans(), id);
    expect(terminals.map((t) => [a(t, ATTR_MCP_TERMINAL_DUPLICATE), a(t, ATTR_MCP_STREAM_ID)])).toEqual([
      [false, a(resume, ATTR_MCP_STREAM_ID)],
    ]);
    expect(client.progress).toEqual([1, 2]);
    if (guarded) {
      expect(seen.decisions.map((d) => [d.requestId, d.outcome, d.evidence, d.decision])).toEqual([
        [id, 'continuation', 'message', 'continuation_valid'],
      ]);
      expect(seen.failed).toEqual([]);
    }
    expect(fetch.stats()).toEqual(IDLE);
  });
});

describe('SEP-1699 polling: an SDK 1.32 server with retryInterval closes the stream with closeSSEStream, again and again', () => {
  it.each(cases)(
    '%s (guard: %s): ten polls, then the result on the last reconnection; no failure, no escalation',
    async (kind, guarded) => {
      const server = await sdkServer({ retryInterval: 10, primeResumes: true });
      const { capture, fetch, seen } = setup(guarded);
      const client = await connectClient(kind, server.url, fetch);
      expect(await client.call('poll', { polls: 11 })).toBe('polled 11');
      await client.close();
      await vi.waitFor(() => expect(fetch.stats().openResumes, 'the resumed streams to end').toBe(0), WAIT);

      const request = capture.spans('tools/call poll')[0]!;
      const id = String(a(request, ATTR_JSONRPC_REQUEST_ID));
      expect(a(request, ATTR_ERROR_TYPE)).toBeUndefined();
      const resumes = resumeSpans(capture.spans()).filter((s) => a(s, ATTR_JSONRPC_REQUEST_ID) === id);
      expect(resumes.map((s) => a(s, ATTR_MCP_RESUME_OUTCOME))).toEqual([...Array(10).fill('poll'), 'continuation']);
      for (const resume of resumes) expect(a(resume, ATTR_MCP_STREAM_KIND)).toBe('request');
      expect(terminalsOf(capture.spans(), id).map((t) => a(t, ATTR_MCP_TERMINAL_DUPLICATE))).toEqual([false]);
      if (guarded) {
        expect(seen.decisions.filter((d) => d.requestId === id).map((d) => d.decision)).toEqual([
          ...Array(10).fill('poll_no_action'),
          'continuation_valid',
        ]);
        expect(seen.failed).toEqual([]);
      }
      expect(fetch.stats()).toEqual(IDLE);
    },
  );
});

describe("a store that replays every stream of the session (server-everything's), into the resumed listening stream", () => {
  it.each(cases)(
    '%s (guard: %s): the listening resume concerns no request; the replayed result is foreign',
    async (kind, guarded) => {
      const server = await sdkServer({ store: () => new ReplayEverythingStore() });
      const { capture, fetch, seen } = setup(guarded);
      const client = await connectClient(kind, server.url, fetch);
      const session = () => fetch.observer.getSession(client.sessionId)!;
      await vi.waitFor(() => expect(session().lastStandalone, 'the listening stream').toBeDefined(), WAIT);
      await server.notifyListening(client.sessionId);
      await vi.waitFor(
        () => expect(session().lastStandalone?.lastEventId, 'an event on the listening stream').toBeDefined(),
        WAIT,
      );
      expect(await client.call('echo', { text: 'one' })).toBe('one');
      const echo = capture.spans('tools/call echo')[0]!;
      const id = String(a(echo, ATTR_JSONRPC_REQUEST_ID));
      server.closeListening(client.sessionId);
      await vi.waitFor(
        () =>
          expect(
            [terminalsOf(capture.spans(), id).length, resumeSpans(capture.spans()).length],
            'the replayed terminal',
          ).toEqual([2, 1]),
        WAIT,
      );
      await client.close();

      const resume = resumeSpans(capture.spans())[0]!;
      expect(resume.attributes).toMatchObject({
        [ATTR_MCP_STREAM_KIND]: 'listening',
        [ATTR_MCP_RESUME_OUTCOME]: 'continuation',
        [ATTR_MCP_RESUME_EVIDENCE]: 'message',
        [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: false,
        [ATTR_MCP_RESUME_REPLAYED_TERMINAL]: false,
      });
      expect(a(resume, ATTR_JSONRPC_REQUEST_ID)).toBeUndefined();
      const [live, replayed] = terminalsOf(capture.spans(), id);
      expect([a(live!, ATTR_MCP_TERMINAL_FOREIGN), a(live!, ATTR_MCP_TERMINAL_DUPLICATE)]).toEqual([undefined, false]);
      expect(replayed!.attributes).toMatchObject({
        [ATTR_MCP_TERMINAL_FOREIGN]: true,
        [ATTR_MCP_TERMINAL_DUPLICATE]: true,
        [ATTR_MCP_TERMINAL_FIRST_STREAM_ID]: a(live!, ATTR_MCP_STREAM_ID),
        [ATTR_MCP_STREAM_ID]: a(resume, ATTR_MCP_STREAM_ID),
        [ATTR_SERVER_ADDRESS]: '127.0.0.1',
        [ATTR_SERVER_PORT]: Number(new URL(server.url).port),
      });
      expect(a(replayed!, ATTR_MCP_GUARD_ACTION)).toBe(guarded ? 'duplicate_terminal_dropped' : undefined);
      if (guarded) {
        expect(seen.dropped.map((d) => [d.requestId, d.foreign])).toEqual([[id, true]]);
        expect(seen.decisions.map((d) => [d.requestId, d.outcome])).toEqual([[undefined, 'continuation']]);
        expect(seen.failed).toEqual([]);
      }
    },
  );
});

describe("a store that replays every stream of the session, into a request's resumed stream", () => {
  it.each(cases)(
    "%s (guard: %s): another request's result replayed on it is foreign; the resume is still this request's",
    async (kind, guarded) => {
      const server = await sdkServer({ store: () => new ReplayEverythingStore() });
      const { capture, fetch, seen } = setup(guarded);
      const client = await connectClient(kind, server.url, fetch);
      server.cutNextCallAfter = 2;
      let release = () => {};
      server.holdResumes = new Promise<void>((resolve) => (release = resolve));
      const call = client.call('quiet', { gapMs: 300 });
      await vi.waitFor(() => expect(client.progress.length, 'the first progress update').toBe(1), WAIT);
      // Another request finishes while this one's stream is cut: the store will replay its result too.
      expect(await client.call('echo', { text: 'other' })).toBe('other');
      release();
      expect(await call).toBe('quiet done');
      await client.close();
      await vi.waitFor(() => expect(fetch.stats().openResumes, 'the resumed stream to end').toBe(0), WAIT);

      const quiet = String(a(capture.spans('tools/call quiet')[0]!, ATTR_JSONRPC_REQUEST_ID));
      const echo = String(a(capture.spans('tools/call echo')[0]!, ATTR_JSONRPC_REQUEST_ID));
      const resume = resumeSpans(capture.spans())[0]!;
      expect(resumeSpans(capture.spans())).toHaveLength(1);
      expect(resume.attributes).toMatchObject({
        [ATTR_JSONRPC_REQUEST_ID]: quiet,
        [ATTR_MCP_STREAM_KIND]: 'request',
        [ATTR_MCP_RESUME_OUTCOME]: 'continuation',
        [ATTR_MCP_REQUEST_TERMINAL_OBSERVED]: false,
        [ATTR_MCP_RESUME_REPLAYED_TERMINAL]: true,
      });
      const echoTerminals = terminalsOf(capture.spans(), echo);
      expect(
        echoTerminals.map((t) => [
          a(t, ATTR_MCP_TERMINAL_DUPLICATE),
          a(t, ATTR_MCP_TERMINAL_FOREIGN),
          a(t, ATTR_MCP_GUARD_ACTION),
        ]),
      ).toEqual([
        [false, undefined, undefined],
        [true, true, guarded ? 'duplicate_terminal_dropped' : undefined],
      ]);
      expect(a(echoTerminals[1]!, ATTR_MCP_STREAM_ID)).toBe(a(resume, ATTR_MCP_STREAM_ID));
      expect(
        terminalsOf(capture.spans(), quiet).map((t) => [
          a(t, ATTR_MCP_TERMINAL_DUPLICATE),
          a(t, ATTR_MCP_TERMINAL_FOREIGN),
        ]),
      ).toEqual([[false, undefined]]);
      if (guarded) {
        expect(seen.dropped.map((d) => [d.requestId, d.foreign])).toEqual([[echo, true]]);
        expect(seen.decisions.map((d) => [d.requestId, d.decision])).toEqual([[quiet, 'continuation_valid']]);
        expect(seen.failed).toEqual([]);
      }
      expect(fetch.stats()).toEqual(IDLE);
    },
  );
});

describe('a store shared by every session and keyed by request id (the Python SDK example store)', () => {
  it.each(cases)(
    "%s (guard: %s): another session's result arrives first; the real one is a conflict, never silently dropped",
    async (kind, guarded) => {
      const shared = new RequestKeyedStore();
      const server = await sdkServer({ store: () => shared, retryInterval: 20 });
      const { capture, fetch, seen } = setup(guarded);
      const a1 = await connectClient(kind, server.url, fetch);
      const b1 = await connectClient(kind, server.url, undefined);
      server.cutNextCallAfter = 2;
      let release = () => {};
      server.holdResumes = new Promise<void>((resolve) => (release = resolve));
      const call = a1.call('slow', { ms: 1200 });
      await vi.waitFor(() => expect(a1.progress.length, 'the first progress update').toBe(1), WAIT);
      // The other session's call completes before this client's resume reaches the store.
      expect(await b1.call('echo', { text: 'Echo: from session B' })).toBe('Echo: from session B');
      release();
      // The SDK clients take the first result for the request id: session B's. Nothing can stop that.
      expect(await call).toBe('Echo: from session B');
      const request = capture.spans('tools/call slow')[0]!;
      const id = String(a(request, ATTR_JSONRPC_REQUEST_ID));
      await vi.waitFor(() => expect(terminalsOf(capture.spans(), id).length, 'the real result').toBe(2), WAIT);
      await a1.close();
      await b1.close();

      const [first, real] = terminalsOf(capture.spans(), id);
      expect([a(first!, ATTR_MCP_TERMINAL_DUPLICATE), a(first!, ATTR_MCP_TERMINAL_CONFLICT)]).toEqual([
        false,
        undefined,
      ]);
      expect(real!.attributes).toMatchObject({
        [ATTR_MCP_TERMINAL_CONFLICT]: true,
        [ATTR_MCP_TERMINAL_DUPLICATE]: false,
        [ATTR_MCP_TERMINAL_FIRST_STREAM_ID]: a(first!, ATTR_MCP_STREAM_ID),
      });
      expect(a(real!, ATTR_MCP_GUARD_ACTION)).toBe(guarded ? 'conflicting_terminal_reported' : undefined);
      if (guarded) {
        expect(
          seen.conflicts.map((c) => [
            c.requestId,
            c.sessionId,
            c.removed,
            c.delivered.streamId === c.conflicting.streamId,
          ]),
        ).toEqual([[id, a1.sessionId, true, true]]);
        expect(seen.conflicts[0]!.delivered.eventId).not.toBe(seen.conflicts[0]!.conflicting.eventId);
        expect(seen.dropped).toEqual([]);
        expect(seen.failed).toEqual([]);
      }
    },
  );
});

describe('cancellation and session end', () => {
  it.each(cases)(
    '%s (guard: %s): notifications/cancelled ends the request span and its silent resume',
    async (kind, guarded) => {
      const server = await sdkServer();
      const { capture, fetch, seen } = setup(guarded);
      const client = await connectClient(kind, server.url, fetch);
      server.cutNextCallAfter = 2;
      const controller = new AbortController();
      const call = client.call('slow', { ms: 3000 }, controller.signal);
      await vi.waitFor(() => expect(fetch.stats().openResumes, 'the silent resumed stream').toBe(1), WAIT);
      controller.abort('user gave up');
      await expect(call).rejects.toThrow();
      await vi.waitFor(() => expect(server.cancelled, 'the server to see the cancellation').toBe(1), WAIT);

      const request = capture.spans('tools/call slow')[0]!;
      expect(a(request, ATTR_ERROR_TYPE)).toBe('cancelled');
      expect(outcomes(capture.spans())).toEqual([['error', 'request_end']]);
      expect(a(resumeSpans(capture.spans())[0]!, ATTR_ERROR_TYPE)).toBe('cancelled');
      if (guarded) {
        expect(seen.decisions.map((d) => [d.outcome, d.evidence, d.decision])).toEqual([
          ['error', 'request_end', 'resume_error_no_action'],
        ]);
        expect(seen.failed).toEqual([]);
      }
      await client.close();
      expect(fetch.stats()).toEqual(IDLE);
    },
  );

  it.each(CLIENT_KINDS)('%s: a DELETE of the session ends its open request spans', async (kind) => {
    const server = await sdkServer();
    const { capture, fetch } = setup(false);
    const client = await connectClient(kind, server.url, fetch);
    const call = client.call('slow', { ms: 3000 });
    await vi.waitFor(() => expect(client.progress.length, 'the first progress update').toBe(1), WAIT);
    await client.terminate();
    await call.catch(() => undefined);
    expect(a(capture.spans('tools/call slow')[0]!, ATTR_ERROR_TYPE)).toBe('aborted');
    expect(fetch.stats()).toEqual(IDLE);
  });
});

describe('server side: the instrumented EventStore on the same peers (plain SDK 1.x client)', () => {
  it('a quiet resume: the replay sent nothing, the next stored message makes it a continuation, never an empty replay', async () => {
    const capture = captureSpans();
    const server = await sdkServer({
      store: () => instrumentEventStore(new MemoryEventStore(), { tracerProvider: capture.provider }),
    });
    const client = await connectClient('sdk-v1', server.url, undefined);
    server.cutNextCallAfter = 2;
    expect(await client.call('quiet', { gapMs: 2200 })).toBe('quiet done');
    await client.close();
    const resumes = resumeSpans(capture.spans());
    expect(
      resumes.map((r) => [
        a(r, ATTR_MCP_RESUME_OUTCOME),
        a(r, ATTR_MCP_RESUME_EVIDENCE),
        a(r, ATTR_MCP_REQUEST_TERMINAL_OBSERVED),
      ]),
    ).toEqual([['continuation', 'message', false]]);
  });

  it('SEP-1699 polling: every replay the client came back from is a poll, the last one a continuation', async () => {
    const capture = captureSpans();
    const server = await sdkServer({
      retryInterval: 10,
      primeResumes: true,
      store: () => instrumentEventStore(new MemoryEventStore(), { tracerProvider: capture.provider }),
    });
    const client = await connectClient('sdk-v1', server.url, undefined);
    expect(await client.call('poll', { polls: 11 })).toBe('polled 11');
    await client.close();
    expect(outcomes(capture.spans())).toEqual([...Array(10).fill(['poll', 'body_end']), ['continuation', 'message']]);
  });
});
