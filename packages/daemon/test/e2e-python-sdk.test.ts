import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GuardOptions } from '@resumewatch/instrumentation';
import { McpHttpSession, isResponseTo } from '@resumewatch/lab';
import type { StreamEvent } from '@resumewatch/lab';
import { FindingKind } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRig } from './helpers/lab-rig.js';
import { waitFor } from '../../detector/test/helpers/wait.js';
import {
  pythonUnavailable,
  pythonWithMcp,
  startPythonServer,
  type PythonServer,
} from '../../gateway/test/helpers/e2e-python.js';

// Optional (issue 12): the official Python SDK (`mcp`) server with a store that works like its example
// event store (one store for every session, streams keyed by JSON-RPC request id), so session A's
// resume replays session B's result. The SDK (mcp 2.3.0) comes from ../shared/wheels, installed
// offline into a venv the gateway's Python tests share (their helper); skipped where that is missing,
// with the reason in the test's name.

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'helpers', 'python', 'shared_store_server.py');
const TIMEOUT = 60_000;
const unavailable = pythonUnavailable();

describe.skipIf(unavailable !== undefined)(
  `the Python SDK server with a store shared across sessions${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    let server: PythonServer;
    beforeAll(async () => {
      // The first run installs the wheels into the cached virtual environment (30 to 60 s).
      server = await startPythonServer(pythonWithMcp(), SCRIPT, []);
    }, 150_000);
    afterAll(() => {
      server?.stop();
    });

    it.each([false, true])(
      "guard=%s: A's resume gets B's result, then its own: conflicting_terminal, no client finding",
      { timeout: TIMEOUT },
      async (guarded) => {
        const conflicts: Array<{ requestId: string; delivered: string | undefined; conflicting: string | undefined }> =
          [];
        const options: GuardOptions = {
          onConflictingTerminal: (r) =>
            void conflicts.push({
              requestId: r.requestId,
              delivered: r.delivered.eventId,
              conflicting: r.conflicting.eventId,
            }),
        };
        const rig = await startRig('client', 'json', { guard: guarded ? options : undefined });
        try {
          // Session A: request 1 (`slow`); the client drops its stream after the first event with an id.
          const a = await McpHttpSession.open(server.url, rig.fetch, 'python-a');
          const call = a.toolCall('slow', { text: 'from session A', quietMs: 1500 });
          const stop = new AbortController();
          let cursor: string | undefined;
          await a
            .post(call.message, {
              signal: stop.signal,
              onEvent: (event) => {
                if (event.id !== undefined && event.message !== undefined && cursor === undefined) {
                  cursor = event.id;
                  stop.abort();
                }
              },
            })
            .catch(() => undefined);
          expect(cursor).toBeDefined();
          // Session B: request 1 too, completed.
          const b = await McpHttpSession.open(server.url, rig.fetch, 'python-b');
          const echo = await b.callTool('echo', { text: 'from session B' });
          expect(echo.call.id).toBe(call.id);
          await b.close().catch(() => undefined);
          // A resumes; it reads until its own result has come (or 10 s).
          const seen: StreamEvent[] = [];
          const done = new AbortController();
          const timer = setTimeout(() => done.abort(), 10_000);
          await a
            .get(cursor, {
              signal: done.signal,
              onEvent: (event) => {
                seen.push(event);
                if (JSON.stringify(event.message ?? {}).includes('from session A')) done.abort();
              },
            })
            .catch(() => undefined);
          clearTimeout(timer);
          await a.close().catch(() => undefined);
          const texts = seen
            .filter((event) => isResponseTo(event.message, call.id))
            .map((event) => JSON.stringify(event.message));
          // Without the guard A reads both (B's first); with it, only B's: A's own is removed and reported.
          expect(texts.map((t) => (t.includes('from session B') ? 'B' : 'A'))).toEqual(guarded ? ['B'] : ['B', 'A']);
          if (guarded) expect(conflicts).toMatchObject([{ requestId: String(call.id) }]);
          await rig.settle();
          await waitFor(
            () => rig.findings().some((f) => f.kind === FindingKind.CONFLICTING_TERMINAL),
            'conflicting_terminal',
          );
          await rig.settle();
          expect([...new Set(rig.findings().map((f) => f.kind))]).toEqual([FindingKind.CONFLICTING_TERMINAL]);
          expect(rig.findings()[0]).toMatchObject({
            session_id: a.sessionId,
            request_id: String(call.id),
            server: '127.0.0.1',
          });
        } finally {
          await rig.close();
        }
      },
    );
  },
);
