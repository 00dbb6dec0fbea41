import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_REQUEST_ARGUMENTS_DIGEST,
  ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION,
  ATTR_MCP_REQUEST_INPUT_ROUND,
  ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID,
  ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID,
  ATTR_MCP_SESSION_ID,
  ErrorType,
  STATELESS_PROTOCOL_VERSION,
} from '@resumewatch/semconv';
import { describe, expect, it, vi } from 'vitest';
import { runModern } from './helpers/modern-run.js';
import { WAIT } from './helpers/spans.js';
import type { SpanCapture } from './helpers/spans.js';

/**
 * The 2026-07-28 era on the real v2 SDK (client and server 2.4): the lab's modern scenarios, the client
 * through instrumentFetch, every server instance of the v2 lab server through instrumentMcpServer.
 */

/** The request spans of `tool`'s calls, by JSON-RPC id (the terminal spans left out). */
function calls(capture: SpanCapture, tool: string): ReadableSpan[] {
  return capture
    .spans()
    .filter(
      (s) =>
        s.name.startsWith('tools/call') &&
        s.attributes[ATTR_MCP_METHOD_NAME] === 'tools/call' &&
        s.attributes[ATTR_GEN_AI_TOOL_NAME] === tool,
    )
    .sort((a, b) => Number(a.attributes[ATTR_JSONRPC_REQUEST_ID]) - Number(b.attributes[ATTR_JSONRPC_REQUEST_ID]));
}

/** The `count` request spans of `tool`'s calls, once all have ended. */
async function ended(capture: SpanCapture, tool: string, count: number): Promise<ReadableSpan[]> {
  return vi.waitFor(() => {
    const spans = calls(capture, tool);
    expect(spans).toHaveLength(count);
    return spans;
  }, WAIT);
}

describe('the 2026-07-28 era on the real v2 SDK', () => {
  it('modern-broken-reissue: stream_broken, then a re-issue pointing at it; the server completed the first attempt', async () => {
    const { summary, client, server } = await runModern('modern-broken-reissue');
    expect(summary.details.reissues).toBe(1);
    const [first, reissue] = await ended(client, 'charge', 2);
    expect(first!.attributes[ATTR_ERROR_TYPE]).toBe(ErrorType.STREAM_BROKEN);
    expect(first!.attributes[ATTR_MCP_PROTOCOL_VERSION]).toBe(STATELESS_PROTOCOL_VERSION);
    expect(first!.attributes[ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID]).toBeUndefined();
    expect(reissue!.attributes[ATTR_ERROR_TYPE]).toBeUndefined();
    const digest = first!.attributes[ATTR_MCP_REQUEST_ARGUMENTS_DIGEST];
    expect(digest).toMatch(/^[0-9a-f]{32}$/);
    expect(reissue!.attributes[ATTR_MCP_REQUEST_ARGUMENTS_DIGEST]).toBe(digest);
    expect(reissue!.attributes[ATTR_MCP_REQUEST_REISSUE_OF_TRACE_ID]).toBe(first!.spanContext().traceId);
    expect(reissue!.attributes[ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID]).toBe(first!.spanContext().spanId);
    expect(reissue!.links.map((l) => l.context.spanId)).toEqual([first!.spanContext().spanId]);
    // The raw arguments are on no span.
    const key = (summary.details.serverExecutions as { key: string }[])[0]!.key;
    for (const span of client.spans()) expect(JSON.stringify(span.attributes)).not.toContain(key);

    const [firstServed, reissueServed] = await ended(server, 'charge', 2);
    expect(firstServed!.attributes[ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION]).toBe(true);
    expect(firstServed!.attributes[ATTR_ERROR_TYPE]).toBe(ErrorType.ABORTED);
    expect(reissueServed!.attributes[ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION]).toBeUndefined();
    expect(reissueServed!.attributes[ATTR_ERROR_TYPE]).toBeUndefined();
    for (const span of [firstServed!, reissueServed!])
      expect(span.attributes[ATTR_MCP_PROTOCOL_VERSION]).toBe(STATELESS_PROTOCOL_VERSION);
  }, 30_000);

  it('modern-honours-cancel: the server span says the first attempt did not complete', async () => {
    const { client, server } = await runModern('modern-honours-cancel');
    const [first, reissue] = await ended(client, 'charge_cancellable', 2);
    expect(first!.attributes[ATTR_ERROR_TYPE]).toBe(ErrorType.STREAM_BROKEN);
    expect(reissue!.attributes[ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID]).toBe(first!.spanContext().spanId);
    const [firstServed, reissueServed] = await ended(server, 'charge_cancellable', 2);
    expect(firstServed!.attributes[ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION]).toBe(false);
    expect(firstServed!.attributes[ATTR_ERROR_TYPE]).toBe(ErrorType.ABORTED);
    expect(reissueServed!.attributes[ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION]).toBeUndefined();
  }, 30_000);

  it('modern-input-round: the Multi Round-Trip round is an input round, not a re-issue', async () => {
    const { client, server } = await runModern('modern-input-round');
    const [ask, round] = await ended(client, 'confirm_charge', 2);
    expect(ask!.attributes[ATTR_MCP_REQUEST_INPUT_ROUND]).toBeUndefined();
    expect(round!.attributes[ATTR_MCP_REQUEST_INPUT_ROUND]).toBe(true);
    expect(round!.attributes[ATTR_MCP_REQUEST_ARGUMENTS_DIGEST]).toBe(
      ask!.attributes[ATTR_MCP_REQUEST_ARGUMENTS_DIGEST],
    );
    for (const span of [ask!, round!]) {
      expect(span.attributes[ATTR_MCP_PROTOCOL_VERSION]).toBe(STATELESS_PROTOCOL_VERSION);
      expect(span.attributes[ATTR_ERROR_TYPE]).toBeUndefined();
      expect(span.attributes[ATTR_MCP_REQUEST_REISSUE_OF_SPAN_ID]).toBeUndefined();
    }
    for (const span of await ended(server, 'confirm_charge', 2))
      expect(span.attributes[ATTR_MCP_REQUEST_COMPLETED_AFTER_CANCELLATION]).toBeUndefined();
  }, 30_000);

  it('dual-era: each exchange carries its own version, on the client and on the dual server', async () => {
    const { client, server } = await runModern('dual-era');
    const version = (s: ReadableSpan) => s.attributes[ATTR_MCP_PROTOCOL_VERSION];
    const inSession = (s: ReadableSpan) => s.attributes[ATTR_MCP_SESSION_ID] !== undefined;
    const spans = await ended(client, 'charge', 2);
    expect(spans.filter(inSession).map(version)).toEqual(['2025-11-25']);
    expect(spans.filter((s) => !inSession(s)).map(version)).toEqual([STATELESS_PROTOCOL_VERSION]);
    expect(client.spans().find((s) => s.name === 'initialize')?.attributes[ATTR_MCP_PROTOCOL_VERSION]).toBe(
      '2025-11-25',
    );
    for (const span of spans) expect(span.attributes[ATTR_ERROR_TYPE]).toBeUndefined();
    const served = await ended(server, 'charge', 2);
    expect(served.filter(inSession).map(version)).toEqual(['2025-11-25']);
    expect(served.filter((s) => !inSession(s)).map(version)).toEqual([STATELESS_PROTOCOL_VERSION]);
  }, 30_000);
});
