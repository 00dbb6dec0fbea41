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
import { describe, expect, it } from 'vitest';
import { CLIENT_KINDS, connectClient } from './helpers/clients.js';
import type { ClientKind } from './helpers/clients.js';
import { ReplayEverythingStore, RequestKeyedStore } from './helpers/peer-stores.js';
import { peerServerPerTest } from './helpers/peer-server.js';
import { IDLE, attr as a, capturedFetch, waitFor } from './helpers/spans.js';

// Servers built only from MCP SDK 1.32 parts, the SDK 1.x and v2 clients, real loopback HTTP, the
// real OpenTelemetry SDK; each case with and without the guard (enforced on the same observer).

const peer = peerServerPerTest();

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
const outcomes = (spans: ReadableSpan[]) => resumeSpans(spans).map((s) => [a(s, ATTR_MCP_RESUME_OUTCOME), a(s, ATTR_MCP_RESUME_EVIDENCE)]);
const terminalsOf = (spans: ReadableSpan[], id: string) => spans.filter((s) => s.name === SPAN_REQUEST_TERMINAL && a(s, ATTR_JSONRPC_REQUEST_ID) === id);

const cases: [ClientKind, boolean][] = CLIENT_KINDS.flatMap((kind) => [[kind, false] as [ClientKind, boolean], [kind, true] as [ClientKind, boolean]]);
const label = (kind: ClientKind, guarded: boolean) => `${kind}, ${guarded ? 'guard' : 'no guard'}`;

describe('a quiet resume: progress, a cut after the first update, seconds of silence, then the result', () => {
  it.each(cases)('%s (guard: %s): one continuation, no escalation, the result exactly once', async (kind, guarded) => {
    const server = await peer();
    const { capture, fetch, seen } = setup(guarded);
    const client = await connectClient(kind, server.url, fetch);
    // The priming event and the first progress update reach the client; then the socket is destroyed.
    server.cutNextCallAfter = 2;
    // Longer than the replay windows this package (2 s) and the guard (1 s) used to judge silence by.
    expect(await client.call('quiet', { gapMs: 2200 })).toBe('quiet done');
    await client.close();
    await waitFor(() => fetch.stats().openResumes === 0, 'the resumed stream to end');

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
    expect(terminals.map((t) => [a(t, ATTR_MCP_TERMINAL_DUPLICATE), a(t, ATTR_MCP_STREAM_ID)])).toEqual([[false, a(resume, ATTR_MCP_STREAM_ID)]]);
    expect(client.progress).toEqual([1, 2]);
    if (guarded) {
      expect(seen.decisions.map((d) => [d.requestId, d.outcome, d.evidence, d.decision])).toEqual([[id, 'continuation', 'message', 'continuation_valid']]);
      expect(seen.failed).toEqual([]);
    }
    expect(fetch.stats()).toEqual(IDLE);
  });
});

describe('SEP-1699 polling: an SDK 1.32 server with retryInterval closes the stream with closeSSEStream, again and again', () => {
  it.each(cases)('%s (guard: %s): ten polls, then the result on the last reconnection; no failure, no escalation', async (kind, guarded) => {
    const server = await peer({ retryInterval: 10, primeResumes: true });
    const { capture, fetch, seen } = setup(guarded);
    const client = await connectClient(kind, server.url, fetch);
    expect(await client.call('poll', { polls: 11 })).toBe('polled 11');
    await client.close();
    await waitFor(() => fetch.stats().openResumes === 0, 'the resumed streams to end');

    const request = capture.spans('tools/call poll')[0]!;
    const id = String(a(request, ATTR_JSONRPC_REQUEST_ID));
    expect(a(request, ATTR_ERROR_TYPE)).toBeUndefined();
    const resumes = resumeSpans(capture.spans()).filter((s) => a(s, ATTR_JSONRPC_REQUEST_ID) === id);
    expect(resumes.map((s) => a(s, ATTR_MCP_RESUME_OUTCOME))).toEqual([...Array(10).fill('poll'), 'continuation']);
    for (const resume of resumes) expect(a(resume, ATTR_MCP_STREAM_KIND)).toBe('request');
    expect(terminalsOf(capture.spans(), id).map((t) => a(t, ATTR_MCP_TERMINAL_DUPLICATE))).toEqual([false]);
    if (guarded) {
      expect(seen.decisions.filter((d) => d.requestId === id).map((d) => d.decision)).toEqual([...Array(10).fill('poll_no_action'), 'continuation_valid']);
      expect(seen.failed).toEqual([]);
    }
    expect(fetch.stats()).toEqual(IDLE);
  });
});
