import { describe, expect, it } from 'vitest';
import { EraAnswer, ErrorType, ProtocolEra, eraAnswer } from '../src/index.js';

const { SESSIONS, STATELESS } = ProtocolEra;
const { ACCEPTED, REFUSED, NONE } = EraAnswer;

describe('eraAnswer: an exchange counts in its era only when the server accepted it there', () => {
  // [what the span shows, method, era, HTTP status (0: none), JSON-RPC error code, error.type, client side, answer]
  const cases: [string, string, ProtocolEra, number, string | undefined, string | undefined, boolean, EraAnswer][] = [
    // The 2026-07-28 probe against a session-era server, as the SDK v2 client (`auto`) reads a refusal.
    [
      'probe answered 400 (SDK 1.x: "Server not initialized")',
      'server/discover',
      STATELESS,
      400,
      undefined,
      '400',
      true,
      REFUSED,
    ],
    ['probe answered 404', 'server/discover', STATELESS, 404, undefined, '404', true, REFUSED],
    ['probe answered 405', 'server/discover', STATELESS, 405, undefined, '405', true, REFUSED],
    ['probe answered 406', 'server/discover', STATELESS, 406, undefined, '406', true, REFUSED],
    ['probe answered 200 with Method not found', 'server/discover', STATELESS, 200, '-32601', '-32601', true, REFUSED],
    [
      'probe reaching a server handler that answers Method not found',
      'server/discover',
      STATELESS,
      0,
      '-32601',
      '-32601',
      false,
      REFUSED,
    ],
    ['probe answered 200 with its result', 'server/discover', STATELESS, 200, undefined, undefined, true, ACCEPTED],
    // Not a refusal of the version: credentials, rate, the server's own failure.
    ['probe answered 401', 'server/discover', STATELESS, 401, undefined, '401', true, NONE],
    ['probe answered 403', 'server/discover', STATELESS, 403, undefined, '403', true, NONE],
    ['probe answered 429', 'server/discover', STATELESS, 429, undefined, '429', true, NONE],
    ['probe answered 500', 'server/discover', STATELESS, 500, undefined, '500', true, NONE],
    // The session era's handshake.
    ['initialize answered with its result', 'initialize', SESSIONS, 200, undefined, undefined, true, ACCEPTED],
    [
      'initialize refused by a 2026-07-28-only server (400 -32022)',
      'initialize',
      SESSIONS,
      400,
      undefined,
      '400',
      true,
      REFUSED,
    ],
    ['initialize answered with a JSON-RPC error', 'initialize', SESSIONS, 200, '-32602', '-32602', true, REFUSED],
    // After the handshake: a JSON-RPC error is an answer in the era; a 4xx is the session's business.
    [
      'session-era call answered with a JSON-RPC error',
      'tools/call',
      SESSIONS,
      200,
      '-32603',
      '-32603',
      true,
      ACCEPTED,
    ],
    ['session-era call whose session is gone (404)', 'tools/call', SESSIONS, 404, undefined, '404', true, NONE],
    [
      'session-era call that timed out after its 200',
      'tools/call',
      SESSIONS,
      200,
      undefined,
      ErrorType.TIMEOUT,
      true,
      ACCEPTED,
    ],
    ['any call answered Unsupported protocol version', 'tools/call', SESSIONS, 200, '-32022', '-32022', true, REFUSED],
    // Every 2026-07-28 request carries its own version claim.
    ['2026-07-28 call answered 400', 'tools/call', STATELESS, 400, undefined, '400', true, REFUSED],
    [
      '2026-07-28 call whose stream broke after its 200',
      'tools/call',
      STATELESS,
      200,
      undefined,
      ErrorType.STREAM_BROKEN,
      true,
      ACCEPTED,
    ],
    [
      '2026-07-28 call answered with a tool error',
      'tools/call',
      STATELESS,
      200,
      undefined,
      ErrorType.TOOL_ERROR,
      true,
      ACCEPTED,
    ],
    // No status recorded: a server span was accepted by its transport; a client span by its result.
    [
      'server span aborted (its stream closed)',
      'tools/call',
      STATELESS,
      0,
      undefined,
      ErrorType.ABORTED,
      false,
      ACCEPTED,
    ],
    [
      'client span without a status, ended by its result',
      'tools/call',
      SESSIONS,
      0,
      undefined,
      undefined,
      true,
      ACCEPTED,
    ],
    [
      'client span without a status, timed out before any answer',
      'tools/call',
      SESSIONS,
      0,
      undefined,
      ErrorType.TIMEOUT,
      true,
      NONE,
    ],
    [
      'client span without a status, a network error',
      'server/discover',
      STATELESS,
      0,
      undefined,
      'TypeError',
      true,
      NONE,
    ],
  ];

  for (const [what, method, era, status, code, error, client, answer] of cases)
    it(`${what}: ${answer}`, () => {
      expect(eraAnswer(method, era, status, code, error, client)).toBe(answer);
    });
});
