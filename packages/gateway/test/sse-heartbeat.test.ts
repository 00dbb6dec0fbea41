// Where --sse-heartbeat may write: only where what was written ends an event (or nothing was written).
// The stream itself is a stand-in here; e2e-sse-heartbeat.test.ts runs the real gateway and clients.
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SseHeartbeat } from '../src/sse-heartbeat.js';

const made: SseHeartbeat[] = [];
afterEach(() => {
  for (const h of made.splice(0)) h.stop();
});

function after(...chunks: string[]): SseHeartbeat {
  // A response never written to: the interval is an hour, and the heartbeat is stopped after the test.
  const heartbeat = new SseHeartbeat({} as ServerResponse, 3_600_000, () => undefined);
  made.push(heartbeat);
  for (const chunk of chunks) heartbeat.wrote(Buffer.from(chunk, 'latin1'));
  return heartbeat;
}

describe('the heartbeat waits for an event boundary', () => {
  it.each([
    [[], true],
    [['data: x\n\n'], true],
    [['data: x\r\n\r\n'], true],
    [['data: x\r\r'], true],
    [['data: x\n\r'], true],
    [['data: x\r\r\n'], true],
    [['data: x\n', '\n'], true],
    [['data: x\r\n\r', '\n'], true],
    [['data: x\n\n\n\n\n'], true],
    [['d', 'a', 't', 'a', ':', '\n', '\n'], true],
    [['data: x'], false],
    [['data: x\n'], false],
    [['data: x\r'], false],
    [['data: x\r\n'], false],
    [['data: x\r', '\n'], false],
    [['data: x\n\n', 'id: 2\n'], false],
    [['data: x\n\n', 'id'], false],
    // The upstream's own comment line, its blank line still to come: waits (conservative).
    [['data: x\n\n', ': ping\n'], false],
  ] as const)('after %j: %s', (chunks, boundary) => {
    expect(after(...chunks).atBoundary()).toBe(boundary);
  });

  it("drops a byte-order mark that starts the upstream's bytes only when a heartbeat went before it", async () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf, 0x64]);
    expect(after().upstreamBytes(bom)).toEqual(bom);
    const written: Buffer[] = [];
    const res = { destroyed: false, writableEnded: false, writableLength: 0, write: (b: Buffer) => written.push(b) };
    let beats = 0;
    const early = new SseHeartbeat(res as unknown as ServerResponse, 10, () => beats++);
    made.push(early);
    await vi.waitFor(() => expect(beats).toBeGreaterThan(0));
    expect(Buffer.concat(written).toString('latin1')).toMatch(/^(: heartbeat\n\n)+$/);
    expect(early.upstreamBytes(bom)).toEqual(bom.subarray(3));
    // Only the stream's first bytes: a later mark is the upstream's to send.
    expect(early.upstreamBytes(bom)).toEqual(bom);
  });
});
