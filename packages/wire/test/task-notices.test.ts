// The observer keeps what tasks need on a request's record (taskRequested, the task id as target) and
// tells a task status notification as a deciding event, on the streams where one may come only: any
// other notification costs what it did.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NOTIFICATION_TASKS, NOTIFICATION_TASK_STATUS } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireObserver, taskFactsOfNotification } from '../src/index.js';
import type { WireEvent, WireListener, WireRequest } from '../src/index.js';

const note = (method: string, params: unknown): string =>
  `data: ${JSON.stringify({ jsonrpc: '2.0', method, params })}\n\n`;
const STATUS = note(NOTIFICATION_TASK_STATUS, { taskId: 'T1', status: 'working', ttl: 1000, pollInterval: 10 });
const PROGRESS = note('notifications/progress', { progressToken: 1, progress: 1 });

let url = '';
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (chunk: Buffer) => (body += chunk.toString()));
  req.on('end', () => {
    if (req.method === 'GET') {
      // The session's listening stream: a status notification and a progress notification, then the end.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${PROGRESS}${STATUS}`);
      return;
    }
    const message = JSON.parse(body) as { id: number; method: string };
    res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': req.headers['mcp-session-id'] ?? '' });
    const extension = note(NOTIFICATION_TASKS, { taskId: 'E1', status: 'completed', ttlMs: 5 });
    res.end(
      `${PROGRESS}${message.method === 'subscriptions/listen' ? extension : STATUS}data: ${JSON.stringify({
        jsonrpc: '2.0',
        id: message.id,
        result: {},
      })}\n\n`,
    );
  });
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** A deciding listener (as the instrumentation's recorder is): what it was told. */
function deciding(observer: WireObserver): { events: WireEvent[]; requests: WireRequest[] } {
  const seen = { events: [] as WireEvent[], requests: [] as WireRequest[] };
  const listener: WireListener = {
    eventsWanted: 'deciding',
    onRequest: (request) => void seen.requests.push(request),
    onEvent: (event) => void seen.events.push(event),
  };
  observer.addListener(listener);
  return seen;
}

const post = (fetch: typeof globalThis.fetch, session: string | undefined, message: unknown) =>
  fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(session ? { 'mcp-session-id': session } : {}),
    },
    body: JSON.stringify(message),
  }).then((res) => res.text());

/** The status notifications among the told events. */
const notices = (events: WireEvent[]) =>
  events.flatMap((event) => event.messages.map((m) => taskFactsOfNotification(m)).filter((f) => f !== undefined));

describe('tasks on the wire', () => {
  it('keeps taskRequested and the task id on the records, and tells status notices of task streams only', async () => {
    const observer = new WireObserver();
    const seen = deciding(observer);
    const fetch = observer.wrap(globalThis.fetch) as typeof globalThis.fetch;

    // A plain call: its stream's status notification (a server may send one anywhere) is not looked at.
    await post(fetch, 's1', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'plain' } });
    expect(seen.requests[0]!.requests[0]).toMatchObject({ taskRequested: false, target: 'plain' });
    expect(notices(seen.events)).toEqual([]);
    expect(seen.events).toHaveLength(1); // its terminal alone

    // The session's listening stream, before any task: nothing told.
    await fetch(url, { method: 'GET', headers: { 'mcp-session-id': 's1', accept: 'text/event-stream' } }).then((r) =>
      r.text(),
    );
    expect(notices(seen.events)).toEqual([]);

    // A call that asks for a task: the status notification on its stream is told, the progress is not.
    seen.events.length = 0;
    await post(fetch, 's1', { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'slow', task: {} } });
    expect(seen.requests.at(-1)!.requests[0]).toMatchObject({ taskRequested: true, target: 'slow' });
    expect(notices(seen.events)).toEqual([expect.objectContaining({ taskId: 'T1', status: 'working', ttlMs: 1000 })]);
    expect(seen.events).toHaveLength(2);

    // The session used tasks: its listening stream's status notifications are told now.
    seen.events.length = 0;
    await fetch(url, { method: 'GET', headers: { 'mcp-session-id': 's1', accept: 'text/event-stream' } }).then((r) =>
      r.text(),
    );
    expect(notices(seen.events)).toEqual([expect.objectContaining({ taskId: 'T1', pollIntervalMs: 10 })]);

    // tasks/get keeps its task id as its target.
    await post(fetch, 's1', { jsonrpc: '2.0', id: 3, method: 'tasks/get', params: { taskId: 'T1' } });
    expect(seen.requests.at(-1)!.requests[0]).toMatchObject({ method: 'tasks/get', target: 'T1' });
    // A long task id is kept bounded, as any id.
    await post(fetch, 's1', { jsonrpc: '2.0', id: 4, method: 'tasks/get', params: { taskId: 'x'.repeat(10_000) } });
    expect(seen.requests.at(-1)!.requests[0]!.target!.length).toBeLessThan(200);
  });

  it('tells the 2026-07-28 notifications/tasks of a subscriptions/listen stream, with no session', async () => {
    const observer = new WireObserver({ sessionlessApart: true });
    const seen = deciding(observer);
    const fetch = observer.wrap(globalThis.fetch) as typeof globalThis.fetch;
    await post(fetch, undefined, { jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: {} });
    expect(notices(seen.events)).toEqual([
      expect.objectContaining({ taskId: 'E1', status: 'completed', shape: 'extension', ttlMs: 5 }),
    ]);
  });
});
