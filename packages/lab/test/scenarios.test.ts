import { describe, expect, it, vi } from 'vitest';
import { LabControlClient, LAB_SERVER_SCENARIO_NAMES, runScenario, startLabServer } from '../src/index.js';
import { labServerPerFile } from './helpers/lab-per-file.js';

const lab = labServerPerFile();

describe('scenarios against the lab server', () => {
  it('seed-loop: the final result arrives on several distinct responses until the cursor is evicted', async () => {
    const summary = await runScenario('seed-loop', { serverUrl: lab.server.url });
    expect(summary.distinctTerminalStreams).toBeGreaterThanOrEqual(2);
    expect(summary.terminalDeliveries).toBe(summary.distinctTerminalStreams);
    // Default replay limit 3: three replays of the finished stream, then the evicted cursor answers 404.
    expect(summary.resumeStatuses).toEqual([200, 200, 200, 404]);
    expect(summary.details.stoppedBecause).toBe('error-status');
    const terminalIds = summary.details.terminalEventIds as string[];
    expect(new Set(terminalIds).size).toBe(1);
    const resumes = lab.resumesAtServer(summary.sessionId);
    expect(resumes.map((entry) => entry.status)).toEqual([200, 200, 200, 404]);
    expect(new Set(resumes.map((entry) => entry.lastEventId))).toEqual(new Set([summary.details.staleCursor]));
    const replays = lab.server.state().recentReplays.filter((replay) => replay.sessionId === summary.sessionId);
    expect(replays.every((replay) => replay.streamFinished && replay.closed && replay.sent === 1)).toBe(true);
  });

  it('seed-loop stops at its safety cap when the server never evicts', async () => {
    const endless = await startLabServer({ eventStore: { finishedStreamReplayLimit: 0 } });
    try {
      const summary = await runScenario('seed-loop', { serverUrl: endless.url, maxReconnects: 5 });
      expect(summary.reconnects).toBe(5);
      expect(summary.terminalDeliveries).toBe(6);
      expect(summary.details.stoppedBecause).toBe('max-reconnects');
    } finally {
      await endless.close();
    }
  });

  it('per-stream-dedup: the per-stream consumer repeats the side effect, the per-request consumer does not', async () => {
    const summary = await runScenario('per-stream-dedup', { serverUrl: lab.server.url });
    const sideEffects = summary.details.sideEffects as { perStream: number; perRequest: number };
    const keys = summary.details.ledgerKeys as { perStream: string; perRequest: string };
    expect(sideEffects.perStream).toBeGreaterThan(1);
    expect(sideEffects.perStream).toBe(summary.terminalDeliveries);
    expect(sideEffects.perRequest).toBe(1);
    expect(summary.sideEffectCount).toBe(sideEffects.perStream);
    // The ledger on the server agrees.
    const control = new LabControlClient(lab.server.controlUrl);
    expect(await control.sideEffectCount(keys.perStream)).toBe(sideEffects.perStream);
    expect(await control.sideEffectCount(keys.perRequest)).toBe(1);
  });

  it('network-cut: the TCP cut lands mid-stream, the resume is valid, every event arrives exactly once', async () => {
    const summary = await runScenario('network-cut', { serverUrl: lab.server.url });
    expect(summary.details.firstStreamEnd).toBe('error');
    expect((summary.details.cut as { eventsForwarded: number }).eventsForwarded).toBe(4);
    expect(summary.details.duplicateEventIds).toEqual([]);
    expect(summary.details.progressNotDeliveredExactlyOnce).toEqual([]);
    expect(summary.details.everyEventExactlyOnce).toBe(true);
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.distinctTerminalStreams).toBe(1);
    expect(summary.resumeStatuses.at(-1)).toBe(200);
    // Priming event, 8 progress notifications, the result.
    expect(summary.details.distinctEventIds).toBe(10);
  });

  it('server-restart: the session is accepted and the resume of an unfinished request is 200 with no events', async () => {
    const before = lab.server.state().generation;
    const summary = await runScenario('server-restart', { serverUrl: lab.server.url, resultWaitMs: 400 });
    // The client waited for its result before deleting the session.
    expect(summary.durationMs).toBeGreaterThanOrEqual(400);
    expect(lab.server.state().generation).toBe(before + 1);
    expect(summary.details.firstStreamEnd).toBe('error');
    expect(summary.resumeStatuses).toEqual([200]);
    expect(summary.details.replayedEvents).toBe(0);
    expect(summary.details.replayEnd).toBe('clean');
    expect(summary.terminalDeliveries).toBe(0);
    expect(summary.details.emptyReplayOnUnfinishedRequest).toBe(true);
    // The server saw the resume under the same session id and restored the session to answer it.
    const log = lab.server.requestLog(summary.sessionId);
    expect(log.some((entry) => entry.restore)).toBe(true);
    expect(lab.resumesAtServer(summary.sessionId).map((entry) => entry.status)).toEqual([200]);
  });

  it('cursor-evicted: the resume answers 404, and the request is retried from scratch', async () => {
    const summary = await runScenario('cursor-evicted', { serverUrl: lab.server.url });
    expect(summary.resumeStatuses).toEqual([404]);
    expect(summary.details.resumeBody).toContain('cursor was evicted');
    expect(summary.details.retriedFromScratch).toBe(true);
    expect(summary.details.retryCompleted).toBe(true);
    expect(summary.terminalDeliveries).toBe(1);
  });

  it('sdk-error-resume: the unmodified SDK client resumes with the error event id after the error response', async () => {
    const summary = await runScenario('sdk-error-resume', { serverUrl: lab.server.url });
    expect(summary.details.errorMessage).toMatch(/fail/);
    expect(summary.details.errorEventId).toEqual(expect.any(String));
    expect(summary.details.resumedWithErrorEventId).toBe(true);
    expect(summary.resumeStatuses[0]).toBe(200);
    // The server saw it too: a GET whose Last-Event-ID is the error event's id.
    const resumes = lab.resumesAtServer(summary.sessionId);
    expect(resumes.map((entry) => entry.lastEventId)).toContain(summary.details.errorEventId);
  });

  it('healthy: one result, one side effect, no resumption', async () => {
    const summary = await runScenario('healthy', { serverUrl: lab.server.url });
    expect(summary.terminalDeliveries).toBe(1);
    expect(summary.reconnects).toBe(0);
    expect(summary.resumeStatuses).toEqual([]);
    expect(summary.sideEffectCount).toBe(1);
    expect(lab.resumesAtServer(summary.sessionId)).toEqual([]);
  });

  it('every scenario against the lab server sends its MCP traffic through the injected fetch', async () => {
    for (const name of LAB_SERVER_SCENARIO_NAMES) {
      const urls: string[] = [];
      const counting: typeof fetch = (input, init) => {
        urls.push(String(input instanceof Request ? input.url : input));
        return fetch(input, init);
      };
      const summary = await runScenario(name, { serverUrl: lab.server.url, fetch: counting });
      expect(summary.scenario).toBe(name);
      expect(urls.length).toBeGreaterThan(0);
      expect(urls.every((url) => !url.includes('/control'))).toBe(true);
      // cross-session-store and cancellation use a second session.
      const details = summary.details as { sessionB?: string; transportClosed?: { sessionId?: string } };
      const sessions = [summary.sessionId, details.sessionB, details.transportClosed?.sessionId].filter(
        (id) => id !== undefined,
      );
      const atServer = () =>
        sessions.reduce((sum, id) => sum + lab.server.requestLog(id).filter((entry) => !entry.restore).length, 0);
      // A request the client aborted is logged once the server saw the connection close.
      // network-cut and others talk to their own proxy, which forwards to the server.
      await vi.waitFor(() => expect({ name, calls: urls.length }).toEqual({ name, calls: atServer() }), {
        timeout: 2000,
        interval: 20,
      });
    }
  }, 120_000);
});
