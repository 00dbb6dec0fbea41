// What withIdempotencyKeys does to the bodies it sends; its effect on a real v2 server is in modern-era.test.ts.
import { META_IDEMPOTENCY_KEY, STATELESS_PROTOCOL_VERSION } from '@resumewatch/semconv';
import { HEADER_PROTOCOL_VERSION } from '@resumewatch/wire';
import { describe, expect, it } from 'vitest';
import { createGuardListener } from '../src/index.js';

/** The bodies as they leave, and a 202 for each (what a server answers a notification). */
function sent() {
  const bodies: unknown[] = [];
  const fetch = async (_input: string | URL | Request, init?: RequestInit) => {
    bodies.push(init?.body);
    return new Response(null, { status: 202 });
  };
  return { bodies, fetch };
}

const call = (id: number, name: string, meta?: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: { key: 'k' }, ...(meta ? { _meta: meta } : {}) },
});

function post(version: string, body: unknown): RequestInit {
  return { method: 'POST', headers: { [HEADER_PROTOCOL_VERSION]: version }, body: JSON.stringify(body) };
}

describe('withIdempotencyKeys', () => {
  it('keys every 2026-07-28 tools/call, keeps its other _meta and a key the application set, and nothing else', async () => {
    const { bodies, fetch } = sent();
    const keyed = createGuardListener({}).withIdempotencyKeys(fetch);
    await keyed('http://127.0.0.1:9/mcp', post(STATELESS_PROTOCOL_VERSION, call(0, 'charge', { progressToken: 0 })));
    await keyed(
      'http://127.0.0.1:9/mcp',
      post(STATELESS_PROTOCOL_VERSION, call(1, 'charge', { [META_IDEMPOTENCY_KEY]: 'mine' })),
    );
    const ping = post(STATELESS_PROTOCOL_VERSION, { jsonrpc: '2.0', id: 2, method: 'ping' });
    await keyed('http://127.0.0.1:9/mcp', ping);
    const first = JSON.parse(bodies[0] as string) as ReturnType<typeof call>;
    expect(first.params._meta).toEqual({
      progressToken: 0,
      [META_IDEMPOTENCY_KEY]: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(JSON.parse(bodies[1] as string)).toEqual(call(1, 'charge', { [META_IDEMPOTENCY_KEY]: 'mine' }));
    expect(bodies[2]).toBe(ping.body);
  });

  it('keys a session-era tools/call that asks for a task (2025-11-25 params.task), and no other session-era call', async () => {
    const { bodies, fetch } = sent();
    const keyed = createGuardListener({}).withIdempotencyKeys(fetch);
    const task = { ...call(0, 'charge'), params: { ...call(0, 'charge').params, task: { ttl: 60_000 } } };
    await keyed('http://127.0.0.1:9/mcp', post('2025-11-25', task));
    // Its arguments name a task, but it asks for none.
    const plain = post('2025-11-25', { ...call(1, 'charge'), params: { name: 'charge', arguments: { task: 1 } } });
    await keyed('http://127.0.0.1:9/mcp', plain);
    const sentTask = JSON.parse(bodies[0] as string) as typeof task & { params: { _meta?: Record<string, unknown> } };
    expect(sentTask.params._meta?.[META_IDEMPOTENCY_KEY]).toMatch(/^[0-9a-f-]{36}$/);
    expect(sentTask.params.task).toEqual({ ttl: 60_000 });
    expect(bodies[1]).toBe(plain.body);
  });

  it('leaves a session-era body byte for byte', async () => {
    const { bodies, fetch } = sent();
    const keyed = createGuardListener({}).withIdempotencyKeys(fetch);
    const init = post('2025-11-25', call(0, 'charge'));
    await keyed('http://127.0.0.1:9/mcp', init);
    await keyed('http://127.0.0.1:9/mcp', { ...init, headers: {} });
    expect(bodies).toEqual([init.body, init.body]);
  });

  it('keys each call of a batch on its own', async () => {
    const { bodies, fetch } = sent();
    const keyed = createGuardListener({}).withIdempotencyKeys(fetch);
    await keyed('http://127.0.0.1:9/mcp', post(STATELESS_PROTOCOL_VERSION, [call(0, 'a'), call(1, 'b')]));
    const keys = (JSON.parse(bodies[0] as string) as ReturnType<typeof call>[]).map(
      (m) => m.params._meta?.[META_IDEMPOTENCY_KEY],
    );
    expect(keys).toHaveLength(2);
    expect(new Set(keys).size).toBe(2);
  });

  it('sends a call whose arguments nest 100,000 deep as written, rather than fail the fetch', async () => {
    const { bodies, fetch } = sent();
    const keyed = createGuardListener({}).withIdempotencyKeys(fetch);
    const args = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
    const body = `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"store","arguments":${args}}}`;
    const init = { ...post(STATELESS_PROTOCOL_VERSION, null), body };
    expect((await keyed('http://127.0.0.1:9/mcp', init)).status).toBe(202);
    expect(bodies).toEqual([body]);
  });
});
