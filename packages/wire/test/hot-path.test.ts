import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { headerValue } from '../src/headers.js';
import { SseParser, WireObserver } from '../src/index.js';
import type { SseEvent, WireEvent } from '../src/index.js';
import { startSseServer } from './helpers/sse-server.js';
import type { SseServer } from './helpers/sse-server.js';

let server: SseServer;
beforeAll(async () => {
  server = await startSseServer();
});
afterAll(async () => {
  await server.close();
});

const post = (body: object, sessionId: string) => ({
  method: 'POST',
  headers: {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-session-id': sessionId,
  },
  body: JSON.stringify(body),
});

async function initialize(fetch: typeof globalThis.fetch): Promise<string> {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }),
  });
  await response.json();
  return response.headers.get('mcp-session-id')!;
}

function eventsOf(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  const parser = new SseParser((e) => events.push(e));
  parser.push(new TextEncoder().encode(text));
  parser.end();
  return events;
}

describe('WireObserver hot path', () => {
  it('tells a listener that wants only deciding events the terminals and every event of a resumed stream, and no other', async () => {
    const observer = new WireObserver();
    const all: WireEvent[] = [];
    const deciding: WireEvent[] = [];
    observer.addListener({ onEvent: (e) => void all.push(e) });
    observer.addListener({ eventsWanted: 'deciding', onEvent: (e) => void deciding.push(e) });
    const fetch = observer.wrap();
    server.progress = 3;
    try {
      const sessionId = await initialize(fetch);
      await (
        await fetch(server.url, post({ jsonrpc: '2.0', id: 21, method: 'tools/call', params: {} }, sessionId))
      ).text();
      // Every SSE event to the first; to the second the JSON initialize body and the terminal only.
      expect(all.filter((e) => e.sse).map((e) => e.eventId)).toEqual(['s21-1', 's21-2', 's21-3', 's21-4']);
      expect(deciding.map((e) => [e.eventId, e.terminals.length])).toEqual([
        [undefined, 1],
        ['s21-4', 1],
      ]);
      // A resume's events are all deciding: its first message settles the resume.
      await (await fetch(server.url, { headers: { 'mcp-session-id': sessionId, 'last-event-id': 's21-1' } })).text();
      expect(deciding.slice(2).map((e) => e.eventId)).toEqual(['s21-2', 's21-3', 's21-4']);
      expect(all.slice(-3).map((e) => e.eventId)).toEqual(['s21-2', 's21-3', 's21-4']);
    } finally {
      server.progress = 1;
    }
  });

  it('with no listener wanting every event, still counts messages and places cursors of events it tells no one', async () => {
    const observer = new WireObserver();
    let told = 0;
    observer.addListener({ eventsWanted: 'deciding', onEvent: () => void told++ }, { filters: true });
    const fetch = observer.wrap();
    server.progress = 3;
    try {
      const sessionId = await initialize(fetch);
      await (
        await fetch(server.url, post({ jsonrpc: '2.0', id: 22, method: 'tools/call', params: {} }, sessionId))
      ).text();
      expect(told).toBe(2);
      const session = observer.getSession(sessionId)!;
      const stream = session.streams.at(-1)!;
      expect([stream.messageEvents, stream.terminalEvents, stream.lastEventId, stream.deliveredEventId]).toEqual([
        4,
        1,
        's22-4',
        's22-4',
      ]);
      expect(session.cursors.get('s22-2')).toBe(stream);
    } finally {
      server.progress = 1;
    }
  });

  it('forwards exactly the kept events when a filtering listener removes events in the middle of a chunk', async () => {
    const observer = new WireObserver();
    // Removes the 2nd and 4th progress events: kept runs before, between and after them.
    observer.addListener({ onEvent: (e) => !(e.eventId === 's23-2' || e.eventId === 's23-4') }, { filters: true });
    const fetch = observer.wrap();
    server.progress = 5;
    try {
      const sessionId = await initialize(fetch);
      const text = await (
        await fetch(server.url, post({ jsonrpc: '2.0', id: 23, method: 'tools/call', params: {} }, sessionId))
      ).text();
      const original = server.written.get('POST 23')!;
      const expected = eventsOf(original)
        .filter((e) => e.id !== 's23-2' && e.id !== 's23-4')
        .map((e) => Buffer.from(e.raw).toString())
        .join('');
      expect(text).toBe(expected);
      expect(eventsOf(text).map((e) => e.id)).toEqual(['s23-1', 's23-3', 's23-5', 's23-6']);
      // The client's cursor is the last id it was given.
      expect(observer.getSession(sessionId)!.streams.at(-1)!.deliveredEventId).toBe('s23-6');
    } finally {
      server.progress = 1;
    }
  });
});

describe('SseParser field names', () => {
  it('reads a known field only when a colon or the line end follows its name, and ids of any length exactly', () => {
    const long = 'a-long-event-id-of-forty-characters-0001';
    const events = eventsOf(
      [
        'datum: no\nids: no\nevents: no\nretryx: 5\nid: short-1\ndata: yes\n\n',
        `id:${long}\nevent:message\ndata\nretry: 7\n\n`,
        'id: has\0nul\nevent: a\0b\ndata: x\n\n',
        'i: no\nd: no\n:comment\ndata: last\n\n',
      ].join(''),
    );
    expect(events.map((e) => [e.id, e.event, e.data, e.retry])).toEqual([
      ['short-1', '', 'yes', undefined],
      [long, 'message', '', 7],
      [undefined, 'a\0b', 'x', undefined],
      [undefined, '', 'last', undefined],
    ]);
  });
});

describe('headerValue', () => {
  it('reads a header from every form of request headers as Headers would, by its lower-case name', () => {
    const forms: RequestInit['headers'][] = [
      new Headers({ 'Mcp-Session-Id': 'abc' }),
      { 'Mcp-Session-Id': ' abc\t' },
      [['MCP-SESSION-ID', 'abc']],
      new Map([['mcp-session-id', 'abc']]) as unknown as RequestInit['headers'],
    ];
    for (const headers of forms)
      expect(headerValue(headers, 'mcp-session-id')).toBe(new Headers(headers).get('mcp-session-id'));
    expect(
      headerValue(
        [
          ['a', '1'],
          ['A', '2'],
        ],
        'a',
      ),
    ).toBe(
      new Headers([
        ['a', '1'],
        ['A', '2'],
      ]).get('a'),
    );
    expect(headerValue({ accept: 'x' }, 'mcp-session-id')).toBeUndefined();
    expect(headerValue(undefined, 'accept')).toBeUndefined();
  });
});
