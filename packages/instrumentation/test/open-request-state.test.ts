import {
  ATTR_ERROR_TYPE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_REQUEST_RECOVERY,
  ATTR_MCP_SESSION_ID,
  ErrorType,
  RequestRecovery,
} from '@resumewatch/semconv';
import { WireObserver, restoreObserver, snapshotObserverText } from '@resumewatch/wire';
import type { RequestRecord } from '@resumewatch/wire';
import { describe, expect, it, vi } from 'vitest';
import { tracerSource } from '../src/instrument-fetch.js';
import { SpanRecorder } from '../src/span-recorder.js';
import { WAIT, attr as a, captureSpans, ms } from './helpers/spans.js';
import {
  SCRIPTED_SESSION,
  progress,
  result,
  scriptedServerPerFile,
  sse,
} from '../../wire/test/helpers/scripted-server.js';

// The open request spans across a restart (the gateway's --state-file): read at the snapshot, handed
// over at the shutdown (not ended as an abort the shutdown made), and opened again in the next process
// in their trace, with the deadline they had.

const scripted = scriptedServerPerFile();
const { call, get } = scripted;

function setup(requestTimeoutMs = 60_000) {
  const capture = captureSpans();
  const observer = new WireObserver({ confirmDelivery: true, releaseOnTransportClose: false });
  const recorder = new SpanRecorder({ tracer: tracerSource(capture.provider), observer, requestTimeoutMs });
  observer.addListener(recorder);
  return { observer, recorder, capture };
}

/** A first process whose request 3's stream ended after its progress, without its result; then its shutdown. */
async function firstProcess() {
  const first = setup();
  await call(first.observer.wrap(), 3, [sse({ id: 'c1', data: progress(1) })]);
  const [open, ...more] = first.recorder.openRequestSpans();
  expect(more).toEqual([]);
  expect(open).toMatchObject({ broken: true, cursor: true, resumed: false });
  expect(open!.deadline).toBe(open!.record.startedAt + 60_000);
  // Looked up alone, as a snapshot in steps does: the same span.
  expect(first.recorder.openRequestSpan(open!.record)).toEqual(open);
  // Written beside its record (the gateway writes the span's ids and deadline there).
  const wire = snapshotObserverText(first.observer, {
    extra: (record) => (first.recorder.openRequestSpan(record) ? 'open' : undefined),
  });
  first.recorder.handOverRequestSpans();
  expect(first.recorder.stats().openRequests).toBe(0);
  // The shutdown ends the session's exchanges: nothing of the request is ended in this process.
  await first.observer.wrap()(scripted.server.url, {
    method: 'DELETE',
    headers: { 'mcp-session-id': SCRIPTED_SESSION },
  });
  expect(first.capture.spans('tools/call slow')).toEqual([]);
  expect(first.recorder.openRequestSpan(open!.record)).toBeUndefined();
  return { open: open!, section: JSON.parse(wire) as unknown };
}

/** The record written with the open span, as the next process restores it. */
function restored(observer: WireObserver, section: unknown): RequestRecord {
  const { extras } = restoreObserver(observer, section, (x) => x === 'open');
  expect(extras.map(([, x]) => x)).toEqual(['open']);
  return extras[0]![0];
}

describe('open request spans across a restart', () => {
  it('reopened in their trace, a request whose client never comes back ends at the deadline it had: a lost result', async () => {
    const { open, section } = await firstProcess();
    const next = setup(3_600_000);
    const record = restored(next.observer, section);
    // Its deadline had passed by the restart: it ends at once, not an hour (this process's timeout) later.
    next.recorder.reopenRequest({ ...open, record, deadline: Date.now() - 1 }, scripted.server.url);
    await vi.waitFor(() => expect(next.capture.spans('tools/call slow')).toHaveLength(1), WAIT);
    const span = next.capture.spans('tools/call slow')[0]!;
    expect(span.spanContext().traceId).toBe(open.traceId);
    expect(span.parentSpanContext?.spanId).toBe(open.spanId);
    expect(ms(span.startTime)).toBe(record.startedAt);
    expect(a(span, ATTR_JSONRPC_REQUEST_ID)).toBe('3');
    expect(a(span, ATTR_MCP_SESSION_ID)).toBe(SCRIPTED_SESSION);
    expect(a(span, ATTR_ERROR_TYPE)).toBe(ErrorType.TIMEOUT);
    expect(a(span, ATTR_MCP_REQUEST_RECOVERY)).toBe(RequestRecovery.NOT_RESUMED);
  });

  it('reopened, a request resumed through the next process ends with its result', async () => {
    const { open, section } = await firstProcess();
    const next = setup();
    const record = restored(next.observer, section);
    next.recorder.reopenRequest({ ...open, record }, scripted.server.url);
    expect(next.recorder.stats().openRequests).toBe(1);
    await get(next.observer.wrap(), [sse({ id: 'c2', data: result(3, 'three') })], 'c1');
    const [span] = next.capture.spans('tools/call slow');
    expect(span?.spanContext().traceId).toBe(open.traceId);
    expect(a(span!, ATTR_ERROR_TYPE)).toBeUndefined();
    expect(next.recorder.stats().openRequests).toBe(0);
  });
});
