import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { runScenario } from '@resumewatch/lab';
import type { ScenarioName, ScenarioSummary } from '@resumewatch/lab';
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_REQUEST_ARGUMENTS_DIGEST,
  ATTR_MCP_REQUEST_INPUT_ROUND,
  ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID,
  ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID,
  ATTR_MCP_SESSION_ID,
  ErrorType,
  STATELESS_PROTOCOL_VERSION,
} from '@resumewatch/semconv';
import { describe, expect, it, vi } from 'vitest';
import { IDLE, WAIT, capturedFetch } from './helpers/spans.js';
import type { SpanCapture } from './helpers/spans.js';

/** The 2026-07-28 era on the real v2 SDK (client and server 2.4): the lab's modern scenarios through instrumentFetch. */

async function run(name: ScenarioName): Promise<{ summary: ScenarioSummary; capture: SpanCapture }> {
  const { capture, fetch } = capturedFetch({ requestTimeoutMs: 60_000 });
  const summary = await runScenario(name, { serverUrl: 'http://127.0.0.1:1/mcp', fetch, client: 'sdk-v2' });
  await vi.waitFor(() => expect(fetch.stats()).toEqual(IDLE), WAIT);
  return { summary, capture };
}

const calls = (capture: SpanCapture, tool: string): ReadableSpan[] =>
  capture
    .spans()
    .filter((s) => s.attributes[ATTR_MCP_METHOD_NAME] === 'tools/call' && s.attributes[ATTR_GEN_AI_TOOL_NAME] === tool)
    .sort((a, b) => Number(a.attributes[ATTR_JSONRPC_REQUEST_ID]) - Number(b.attributes[ATTR_JSONRPC_REQUEST_ID]));

const isRequestSpan = (s: ReadableSpan) => s.name.startsWith('tools/call');

describe('2026-07-28 client request spans on the real v2 SDK', () => {
  it('modern-broken-reissue: the first attempt ends stream_broken, the re-issue points at it', async () => {
    const { summary, capture } = await run('modern-broken-reissue');
    expect(summary.details.reissues).toBe(1);
    const [first, reissue, ...rest] = calls(capture, 'charge').filter(isRequestSpan);
    expect(rest).toEqual([]);
    expect(first!.attributes[ATTR_ERROR_TYPE]).toBe(ErrorType.STREAM_BROKEN);
    expect(first!.attributes[ATTR_MCP_PROTOCOL_VERSION]).toBe(STATELESS_PROTOCOL_VERSION);
    expect(reissue!.attributes[ATTR_ERROR_TYPE]).toBeUndefined();
    const digest = first!.attributes[ATTR_MCP_REQUEST_ARGUMENTS_DIGEST];
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
    expect(reissue!.attributes[ATTR_MCP_REQUEST_ARGUMENTS_DIGEST]).toBe(digest);
    expect(reissue!.attributes[ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID]).toBe(first!.spanContext().traceId);
    expect(reissue!.attributes[ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID]).toBe(first!.spanContext().spanId);
    expect(reissue!.links.map((l) => l.context.spanId)).toEqual([first!.spanContext().spanId]);
    expect(first!.attributes[ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID]).toBeUndefined();
    // The raw arguments are nowhere on the spans.
    const key = String((summary.details.serverExecutions as { key: string }[])[0]!.key);
    for (const span of capture.spans()) expect(JSON.stringify(span.attributes)).not.toContain(key);
  }, 30_000);

  it('modern-input-round: the Multi Round-Trip round is an input round, not a re-issue', async () => {
    const { capture } = await run('modern-input-round');
    const [ask, round, ...rest] = calls(capture, 'confirm_charge').filter(isRequestSpan);
    expect(rest).toEqual([]);
    expect(ask!.attributes[ATTR_MCP_REQUEST_INPUT_ROUND]).toBeUndefined();
    expect(round!.attributes[ATTR_MCP_REQUEST_INPUT_ROUND]).toBe(true);
    for (const span of [ask!, round!]) {
      expect(span.attributes[ATTR_MCP_PROTOCOL_VERSION]).toBe(STATELESS_PROTOCOL_VERSION);
      expect(span.attributes[ATTR_ERROR_TYPE]).toBeUndefined();
      expect(span.attributes[ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID]).toBeUndefined();
    }
    expect(round!.attributes[ATTR_MCP_REQUEST_ARGUMENTS_DIGEST]).toBe(
      ask!.attributes[ATTR_MCP_REQUEST_ARGUMENTS_DIGEST],
    );
  }, 30_000);

  it('dual-era: one fetch, each exchange with its own version', async () => {
    const { capture } = await run('dual-era');
    const spans = calls(capture, 'charge').filter(isRequestSpan);
    const sessionEra = spans.filter((s) => s.attributes[ATTR_MCP_SESSION_ID] !== undefined);
    const modern = spans.filter((s) => s.attributes[ATTR_MCP_SESSION_ID] === undefined);
    expect(sessionEra.map((s) => s.attributes[ATTR_MCP_PROTOCOL_VERSION])).toEqual(['2025-11-25']);
    expect(modern.map((s) => s.attributes[ATTR_MCP_PROTOCOL_VERSION])).toEqual([STATELESS_PROTOCOL_VERSION]);
    const initialize = capture.spans().find((s) => s.name === 'initialize')!;
    expect(initialize.attributes[ATTR_MCP_PROTOCOL_VERSION]).toBe('2025-11-25');
    for (const span of spans) expect(span.attributes[ATTR_ERROR_TYPE]).toBeUndefined();
  }, 30_000);
});
