// What a proxy's observer keeps of an ended session (confirmDelivery): a terminal waits for the client's
// proof only while a proof can still come. Without the connection's proof (a gateway without
// --trust-connection-reuse) the cursor is the only proof, and no cursor names a JSON body's terminal or
// an event of a session the observer no longer holds: nothing is kept waiting for those.
import { setTimeout } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { WireObserver } from '../src/index.js';
import type { FetchLike } from '../src/index.js';
import { SCRIPTED_SESSION, result, scriptedServerPerFile, sse } from './helpers/scripted-server.js';

const scripted = scriptedServerPerFile();
const { call } = scripted;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** The terminals the observer keeps waiting for a proof, by stream. */
const awaited = (observer: WireObserver): number => observer.stateAccess().awaitingDelivery!.size;

/** initialize, answered with JSON and a new session id. */
async function initialize(fetch: FetchLike, session: string): Promise<void> {
  scripted.server.script.push({
    headers: { 'content-type': 'application/json', 'mcp-session-id': session },
    chunks: [JSON.stringify({ jsonrpc: '2.0', id: 0, result: { protocolVersion: '2025-06-18', capabilities: {} } })],
  });
  const body = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} });
  await (
    await fetch(scripted.server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  ).text();
}

/** DELETE of the session, answered 200. */
async function deleteSession(fetch: FetchLike, session = SCRIPTED_SESSION): Promise<void> {
  scripted.server.script.push({ headers: { 'mcp-session-id': session }, chunks: [] });
  await (await fetch(scripted.server.url, { method: 'DELETE', headers: { 'mcp-session-id': session } })).text();
}

describe('confirmDelivery without the connection’s proof: nothing waits for a proof that cannot come', () => {
  it('a JSON body’s terminal (no cursor names it) is not kept waiting; with the connection’s proof it is', async () => {
    for (const connectionProof of [false, true]) {
      const observer = new WireObserver({ confirmDelivery: true, connectionProof });
      const fetch = observer.wrap();
      await initialize(fetch, 'json-session');
      expect(awaited(observer)).toBe(connectionProof ? 1 : 0);
      // Unproven either way: the client never showed it read the answer.
      expect(observer.getRequest(undefined, 0)?.finished ?? false).toBe(false);
    }
  });

  it('a session’s DELETE forgets the terminals its streams await; one delivered after it is not kept', async () => {
    const observer = new WireObserver({ confirmDelivery: true, connectionProof: false });
    const fetch = observer.wrap();
    await call(fetch, 1, [sse({ id: 'a1', data: result(1, 'one') })]);
    // Still provable by a cursor while the session is held.
    expect(awaited(observer)).toBe(1);
    // A stream still open across the DELETE: its terminal is read (observed) after the session's release.
    scripted.server.script.push({ chunks: [sse({ id: 'b1', data: result(2, 'two') })] });
    const open = await fetch(scripted.server.url, {
      method: 'POST',
      headers: { 'mcp-session-id': SCRIPTED_SESSION, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'slow' } }),
    });
    await deleteSession(fetch);
    expect(awaited(observer)).toBe(0);
    expect(await open.text()).toContain('"two"');
    expect(awaited(observer)).toBe(0);
  });

  it('with the connection’s proof, a DELETEd session’s terminals still await it (the next request on the connection)', async () => {
    const observer = new WireObserver({ confirmDelivery: true, connectionProof: true });
    const fetch = observer.wrap();
    await call(fetch, 1, [sse({ id: 'a1', data: result(1, 'one') })]);
    await deleteSession(fetch);
    expect(awaited(observer)).toBe(1);
  });

  it('an ended session is not kept alive by the stream that carried its initialize answer', async () => {
    // With the connection's proof the initialize stream is kept (its terminal awaits that proof): it must
    // not hold its session, which the DELETE released.
    const observer = new WireObserver({ confirmDelivery: true, connectionProof: true });
    const fetch = observer.wrap();
    await initialize(fetch, 'gone-session');
    expect(awaited(observer)).toBe(1);
    const session = new WeakRef(observer.getSession('gone-session')!);
    await deleteSession(fetch, 'gone-session');
    expect(observer.getSession('gone-session')).toBeUndefined();
    await setTimeout(10);
    gc();
    expect(session.deref()).toBeUndefined();
    expect(awaited(observer)).toBe(1);
  });
});
