import { FindingKind, ROUTE_PAGE_DATA, ROUTE_PAGE_TIMELINE, TaskGone, TaskStatus } from '@resumewatch/semconv';
import type { Finding } from '@resumewatch/detector';
import { describe, expect, it } from 'vitest';
import { startServer } from '../src/index.js';
import type { PageData } from '../src/index.js';
import type { TimelineAnswer } from '../src/page/live-page.js';
import { recordTaskScenario } from './helpers/otlp-recording.js';
import { postBatch } from './helpers/serve-process.js';
import { waitFor } from '../../detector/test/helpers/wait.js';

// The page from real spans: the lab's task-result-after-expiry run once with the client's fetch and the
// SDK 1.x task server instrumented (the real OTLP/JSON exporter), its export requests sent to
// `resumewatch serve`, and the lost task result's timeline read from the live page's routes as the
// browser reads it (page-task-browser.test.ts draws the same data in Chromium from hand-made spans).

const TIMEOUT = 90_000;
const SERVICE = 'page.task-result-after-expiry';

async function json<T>(url: string): Promise<T> {
  const res = await fetch(url);
  expect(res.status, url).toBe(200);
  return (await res.json()) as T;
}

describe("the page's task timeline from a real task scenario's spans", () => {
  it(
    'task-result-after-expiry: the lost task result shows the creation, the poll ticks, the completion and the gone answer on one axis',
    { timeout: TIMEOUT },
    async () => {
      const batches = await recordTaskScenario('task-result-after-expiry', SERVICE);
      const serve = await startServer({ port: 0, grpcPort: false, metricsPort: 0, output: null, log: () => {} });
      try {
        for (const batch of batches) await postBatch(serve.httpPort, batch);
        const client = `${SERVICE}/client`;
        const lost = (): Finding | undefined =>
          serve.findings().find((f) => f.kind === FindingKind.LOST_TASK_RESULT && f.service === client);
        await waitFor(lost, 'the client side lost_task_result');
        expect(lost()).toMatchObject({ reason: 'gone' });

        const base = `http://127.0.0.1:${serve.metricsPort}`;
        const data = await json<PageData>(`${base}${ROUTE_PAGE_DATA}`);
        const at = data.findings.findIndex((f) => f.kind === FindingKind.LOST_TASK_RESULT && f.service === client);
        expect(at).toBeGreaterThanOrEqual(0);
        const key = data.request_keys[at]!;
        const answer = await json<TimelineAnswer>(`${base}${ROUTE_PAGE_TIMELINE}?key=${encodeURIComponent(key)}`);
        expect(answer.timeline).not.toBeNull();
        const tl = answer.timeline!;

        const of = (type: string) => tl.events.filter((e) => e.type === type);
        const [created] = of('created');
        const ticks = of('poll_tick');
        const [gone] = of('gone');
        expect(of('created')).toHaveLength(1);
        expect(of('gone')).toHaveLength(1);
        expect(of('delivered')).toHaveLength(0);
        // The scenario's one tasks/get (it said completed) is a tick; the tasks/result answered gone is the
        // client's last request for the task, after its ttl (1 s).
        expect(ticks.length).toBeGreaterThanOrEqual(1);
        expect(of('status_change').map((e) => e.short)).toContain(TaskStatus.COMPLETED);
        expect(gone!.what).toMatch(TaskGone.NOT_FOUND.replace('_', ' '));
        // One axis, in the order the wire showed: created, polled, then (after the ttl) told it is gone.
        expect(created!.start).toBeLessThan(ticks[0]!.start);
        expect(ticks.at(-1)!.start).toBeLessThan(gone!.start);
        const ttl = of('ttl');
        expect(ttl).toHaveLength(1);
        expect(ttl[0]!.start - created!.start).toBe(1_000);
        expect(ttl[0]!.start).toBeLessThanOrEqual(gone!.start);
        expect(tl.story).toMatch(/never reached it/);
      } finally {
        await serve.close();
      }
    },
  );
});
