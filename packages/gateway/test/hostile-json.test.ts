import type { ServerResponse } from 'node:http';
import { FindingKind, METRIC_GATEWAY_OBSERVATION_FAILURES_TOTAL } from '@resumewatch/semconv';
import { WireObserver } from '@resumewatch/wire';
import { describe, expect, it, vi } from 'vitest';
import { send } from './helpers/raw-client.js';
import { rigPerTest } from './helpers/scripted-upstream.js';

/*
 * JSON a server may really send, which the gateway must read without dying, refusing or judging
 * wrongly (issue 37, defects 1, 7 and 8): a result or arguments nested far deeper than any recursion
 * over them survives (a stored document passed through unchanged), and a JSON body after a UTF-8 byte
 * order mark (which `fetch`'s `res.json()` and Python's `json.loads(bytes)` accept).
 */

const rig = rigPerTest();

/** Deeper than the ~4,200 levels at which JSON.stringify of a result overflowed in the terminal's digest. */
const DEPTH = 10_000;

const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** JSON text nested `depth` objects deep, two members each (so key order and content both count). */
function nested(depth: number): string {
  return '{"b":0,"a":'.repeat(depth) + '"leaf"' + '}'.repeat(depth);
}

function callText(id: number, args = '{}'): string {
  return `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"store","arguments":${args}}}`;
}

function resultText(id: number, result: string): string {
  return `{"jsonrpc":"2.0","id":${id},"result":${result}}`;
}

/** The request id of the tools/call the upstream received. */
function idOf(body: Buffer): number {
  return (JSON.parse(body.toString('utf8')) as { id: number }).id;
}

const SESSION = 'session-of-a-json-server';

const kindsOf = (findings: readonly { kind: string }[]) => findings.map((f) => f.kind);

describe('a result nested 10,000 deep', () => {
  for (const enforce of [false, true]) {
    for (const format of ['json', 'sse'] as const) {
      it(`passes byte-identical and the gateway lives (${enforce ? 'enforce' : 'observe'}, ${format})`, async () => {
        // Each answer is the result of the request that asked, deep for every call.
        const body = (id: number): Buffer =>
          Buffer.from(
            format === 'json'
              ? resultText(id, nested(DEPTH))
              : `event: message\nid: ${id}-1\ndata: ${resultText(id, nested(DEPTH))}\n\n`,
          );
        const { endpoint, gateway } = await rig(
          (_req, res: ServerResponse, seen) =>
            void res
              .writeHead(200, { 'content-type': format === 'json' ? 'application/json' : 'text/event-stream' })
              .end(body(idOf(seen.body))),
          { enforce },
        );
        for (const id of [1, 2]) {
          const answer = await send(endpoint, { method: 'POST', headers, body: callText(id) });
          expect([answer.status, answer.complete]).toEqual([200, true]);
          expect(answer.body.equals(body(id))).toBe(true);
        }
        // Read, not stood aside: the digest walked the result (a failed observation would be counted here).
        expect(gateway.counts().observationFailures).toBe(0);
        await gateway.flush();
        expect(kindsOf(gateway.detector!.findings())).toEqual([]);
      });
    }
  }
});

describe('tools/call arguments nested 10,000 deep', () => {
  it('are forwarded as sent and answered by the upstream, not refused with 502 internal_error', async () => {
    const { endpoint, upstream, gateway } = await rig(
      (_req, res: ServerResponse, seen) =>
        void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(resultText(idOf(seen.body), '{"content":[]}')),
    );
    const call = callText(1, nested(DEPTH));
    const answer = await send(endpoint, { method: 'POST', headers, body: call });
    expect(answer.status).toBe(200);
    expect(answer.body.toString()).toBe(resultText(1, '{"content":[]}'));
    expect(upstream.seen.map((s) => s.body.toString())).toEqual([call]);
    expect(gateway.counts().refusals).toEqual({});
  });
});

describe('a JSON body after a UTF-8 byte order mark', () => {
  it('is read: its result is seen, and only its twin without a result is a lost_result at the deadline', async () => {
    const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
    // Request 1 gets its result after the mark; request 2, its twin, the same mark and a notification only.
    const answerOf = (id: number): Buffer =>
      Buffer.concat([
        BOM,
        Buffer.from(
          id === 1
            ? resultText(1, '{"content":[{"type":"text","text":"done"}]}')
            : '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}',
        ),
      ]);
    const { endpoint, gateway } = await rig(
      (_req, res: ServerResponse, seen) =>
        void res
          .writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': SESSION })
          .end(answerOf(idOf(seen.body))),
      { requestTimeoutMs: 500 },
    );
    for (const id of [1, 2]) {
      const answer = await send(endpoint, {
        method: 'POST',
        headers: { ...headers, 'mcp-session-id': SESSION },
        body: callText(id),
      });
      expect(answer.body.equals(answerOf(id))).toBe(true);
    }
    // The twin's deadline passes after the first's: once its lost_result is out, request 1's had its chance.
    const lost = () => gateway.detector!.findings().filter((f) => f.kind === FindingKind.LOST_RESULT);
    await vi.waitFor(() => expect(lost().length).toBeGreaterThan(0), { timeout: 15_000, interval: 50 });
    await gateway.flush();
    expect(lost().map((f) => f.request_id)).toEqual(['2']);
  });
});

/*
 * No real input reaches these any more (the ones that did are fixed above): a failure is injected into
 * the observer's own methods, as a defect would throw there, to prove what the gateway does then.
 */
describe('a defect of observation (injected)', () => {
  const sseBody = (id: number) => `id: r${id}\ndata: ${resultText(id, '{"content":[]}')}\n\n`;

  async function throughAFailure(where: 'sseEvent' | 'jsonBody' | 'proxyRequest' | 'proxyResponse') {
    const json = where === 'jsonBody';
    const body = (id: number) => (json ? resultText(id, '{"content":[]}') : sseBody(id));
    const { endpoint, gateway } = await rig(
      (_req, res: ServerResponse, seen) => {
        const id = idOf(seen.body);
        res.writeHead(200, { 'content-type': json ? 'application/json' : 'text/event-stream' });
        // Two chunks: an SSE event is carried across them (held whole under --enforce) when it fails.
        res.write(body(id).slice(0, 20));
        setImmediate(() => res.end(body(id).slice(20)));
      },
      { enforce: true },
    );
    const lines: string[] = [];
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((line) => {
      lines.push(String(line));
      return true;
    });
    const method = vi
      .spyOn(WireObserver.prototype as unknown as Record<string, () => unknown>, where)
      .mockImplementationOnce(() => {
        throw new RangeError('an injected defect');
      });
    try {
      for (const id of [1, 2]) {
        const answer = await send(endpoint, { method: 'POST', headers, body: callText(id) });
        expect([answer.status, answer.complete, answer.body.toString()]).toEqual([200, true, body(id)]);
      }
      expect(method).toHaveBeenCalled();
      expect(gateway.counts().observationFailures).toBe(1);
      expect(gateway.counts().refusals).toEqual({});
      expect(lines.filter((l) => l.includes('observation failed'))).toHaveLength(1);
      const metrics = await (await fetch(`http://127.0.0.1:${gateway.detector!.metricsPort}/metrics`)).text();
      expect(metrics).toContain(`\n${METRIC_GATEWAY_OBSERVATION_FAILURES_TOTAL} 1\n`);
    } finally {
      method.mockRestore();
      stderr.mockRestore();
    }
  }

  it('in an SSE event: that body stands aside, its bytes unchanged, counted; the next body is observed', () =>
    throughAFailure('sseEvent'));
  it("at a JSON body's end: the client's bytes were all written, the failure counted", () =>
    throughAFailure('jsonBody'));
  it('in describing the request: forwarded unobserved, not refused', () => throughAFailure('proxyRequest'));
  it('at the response headers: passed through unobserved', () => throughAFailure('proxyResponse'));
});
