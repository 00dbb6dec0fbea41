import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FindingKind, TaskGone, TaskLostReason, TaskStatus } from '@resumewatch/semconv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Detector, type SpanRecord } from '@resumewatch/detector';
import { startServer, type RunningServer } from '../src/index.js';
import { decodeState, encodeState } from '../src/doors/state-file.js';
import { otlpJson } from '../../detector/test/helpers/otlp.js';
import { createTask, getTask, taskResult } from '../../detector/test/helpers/task-spans.js';

const QUIET = { port: 0, grpcPort: false as const, metricsPort: 0, output: null, log: () => undefined };
const SERVICE = 'svc-tasks';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'resumewatch-tasks-state-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function send(server: RunningServer, spans: SpanRecord[]): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${server.httpPort}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(otlpJson(spans, SERVICE)),
  });
  expect(res.status).toBe(200);
}

/** A task created and completed before the restart; after it, its result is asked for once it has expired. */
function lostAcrossRestart(taskId: string): { before: SpanRecord[]; after: SpanRecord[] } {
  const t = Date.now() - 120_000;
  return {
    before: [
      createTask(t, taskId, { ttl: 60_000, service: SERVICE }),
      getTask(t + 1_000, taskId, { status: TaskStatus.COMPLETED, service: SERVICE }),
    ],
    after: [taskResult(t + 90_000, taskId, { gone: TaskGone.EXPIRED, service: SERVICE })],
  };
}

describe('tasks across a restart of serve (--state-file)', () => {
  it('keeps the task records: a result asked for after expiry, after the restart, is still a lost task result', async () => {
    const file = join(dir, 'tasks.state');
    const { before, after } = lostAcrossRestart('kept');
    const a = await startServer({ ...QUIET, stateFile: file });
    await send(a, before);
    expect(a.findings()).toEqual([]);
    await a.close();
    const b = await startServer({ ...QUIET, stateFile: file });
    await send(b, after);
    expect(b.findings()).toMatchObject([
      { kind: FindingKind.LOST_TASK_RESULT, reason: TaskLostReason.GONE, task_id: 'kept', service: SERVICE },
    ]);
    await b.close();
  });

  it('without the state file the task is unknown after the restart: no finding (the loss the file prevents)', async () => {
    const { before, after } = lostAcrossRestart('forgotten');
    const a = await startServer(QUIET);
    await send(a, before);
    await a.close();
    const b = await startServer(QUIET);
    await send(b, after);
    expect(b.findings()).toEqual([]);
    await b.close();
  });

  it('the state file holds the tasks section whole (typed arrays, NaN for what is not known)', () => {
    const d = new Detector();
    for (const s of [...lostAcrossRestart('file').before, getTask(Date.now(), 'file', { service: SERVICE })])
      d.ingest(s);
    const state = d.exportState();
    expect(state.tasks!.taskIds).toEqual(['file']);
    const back = decodeState(encodeState(state));
    expect(back).toEqual(state);
    const restored = new Detector();
    restored.importState(back);
    expect(restored.taskTimeline(SERVICE, 'file')).toEqual(d.taskTimeline(SERVICE, 'file'));
  });
});
