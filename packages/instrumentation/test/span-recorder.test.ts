import { createGuardListener } from '@resumewatch/guard';
import {
  ATTR_ERROR_TYPE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_TERMINAL_DELIVERY,
  ATTR_MCP_TERMINAL_DUPLICATE,
  ATTR_MCP_TERMINAL_OUTCOME,
  GuardAction,
  ResumeEvidence,
  ResumeOutcome,
  SPAN_REQUEST_TERMINAL,
  SPAN_STREAM_RESUME,
  TerminalDelivery,
  TerminalOutcome,
} from '@resumewatch/semconv';
import { WireObserver } from '@resumewatch/wire';
import { describe, expect, it } from 'vitest';
import { tracerSource } from '../src/instrument-fetch.js';
import { SpanRecorder } from '../src/span-recorder.js';
import { attr as a, captureSpans } from './helpers/spans.js';
import type { SpanCapture } from './helpers/spans.js';
import {
  SCRIPTED_SESSION,
  progress,
  result,
  scriptedServerPerFile,
  sse,
} from '../../wire/test/helpers/scripted-server.js';

// The span recorder (span-recorder.ts) on a real observer over loopback: the spans it makes of the
// wire's events, and the guard's decisions it reads off the request or event, added before the guard.

const scripted = scriptedServerPerFile();
const { call, get } = scripted;

function setup(guarded: boolean): { observer: WireObserver; recorder: SpanRecorder; capture: SpanCapture } {
  const capture = captureSpans();
  const observer = new WireObserver();
  const recorder = new SpanRecorder({ tracer: tracerSource(capture.provider), observer, requestTimeoutMs: 60_000 });
  observer.addListener(recorder);
  if (guarded) observer.addListener(createGuardListener(), { filters: true });
  return { observer, recorder, capture };
}

describe('SpanRecorder', () => {
  it('ends the request span at its terminal and records the terminal', async () => {
    const { observer, capture } = setup(false);
    await call(observer.wrap(), 1, [sse({ id: 'a1', data: progress(1) }), sse({ id: 'a2', data: result(1, 'one') })]);
    expect(capture.spans('tools/call slow')).toHaveLength(1);
    const terminal = capture.spans(SPAN_REQUEST_TERMINAL)[0]!;
    expect(terminal.attributes).toMatchObject({
      [ATTR_JSONRPC_REQUEST_ID]: '1',
      [ATTR_MCP_TERMINAL_OUTCOME]: TerminalOutcome.RESULT,
      [ATTR_MCP_TERMINAL_DUPLICATE]: false,
      [ATTR_MCP_TERMINAL_DELIVERY]: TerminalDelivery.LIVE,
    });
    expect(a(terminal, ATTR_MCP_GUARD_ACTION)).toBeUndefined();
    expect(terminal.parentSpanContext?.spanId).toBe(capture.spans('tools/call slow')[0]!.spanContext().spanId);
  });

  it('records a replayed terminal as a duplicate, with the action of a guard added after it', async () => {
    const { observer, capture } = setup(true);
    const fetch = observer.wrap();
    await call(fetch, 2, [sse({ id: 'b1', data: result(2, 'two') })]);
    await get(fetch, [sse({ id: 'b2', data: result(2, 'two') })]);
    expect(
      capture.spans(SPAN_REQUEST_TERMINAL).map((t) => [a(t, ATTR_MCP_TERMINAL_DUPLICATE), a(t, ATTR_MCP_GUARD_ACTION)]),
    ).toEqual([
      [false, undefined],
      [true, GuardAction.DUPLICATE_TERMINAL_DROPPED],
    ]);
  });

  it('records a refused resume with the action of a guard added after it', async () => {
    const { observer, capture } = setup(true);
    const fetch = observer.wrap();
    await call(fetch, 3, [sse({ id: 'c1', data: progress(1) }), sse({ id: 'c2', data: result(3, 'three') })]);
    await expect(get(fetch, [], 'c1')).rejects.toThrow(/terminal; refusing to resume/);
    const resume = capture.spans(SPAN_STREAM_RESUME)[0]!;
    expect(resume.attributes).toMatchObject({
      [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.ERROR,
      [ATTR_MCP_GUARD_ACTION]: GuardAction.RESUME_REFUSED,
      [ATTR_ERROR_TYPE]: 'InvalidResumptionError',
    });
  });

  it('records an empty replay at the end of the resumed body, and the failure the guard reported', async () => {
    for (const guarded of [false, true]) {
      const { observer, recorder, capture } = setup(guarded);
      const fetch = observer.wrap();
      await call(fetch, 4, [sse({ id: 'd1', data: progress(1) })]);
      await get(fetch, [], 'd1');
      const resume = capture.spans(SPAN_STREAM_RESUME)[0]!;
      expect(resume.attributes).toMatchObject({
        [ATTR_MCP_RESUME_OUTCOME]: ResumeOutcome.EMPTY_REPLAY,
        [ATTR_MCP_RESUME_EVIDENCE]: ResumeEvidence.BODY_END,
        [ATTR_JSONRPC_REQUEST_ID]: '4',
      });
      expect(a(resume, ATTR_MCP_GUARD_ACTION)).toBe(guarded ? GuardAction.RESUMPTION_FAILED_REPORTED : undefined);
      expect(recorder.stats()).toMatchObject({ openResumes: 0, pendingHttp: 0 });
      expect(observer.getSession(SCRIPTED_SESSION)).toBeDefined();
    }
  });
});
