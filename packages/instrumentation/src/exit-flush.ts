/**
 * `process.exit()` ends a process without `beforeExit`, and an 'exit' listener may only do synchronous
 * work, so a CLI that exits that way (as most do) would lose the spans still in the batch processor.
 * `process.exit` is left as it is: at 'exit', the batch processor's queue is handed, synchronously, to
 * the exporter wrapper below, which keeps the spans instead of sending them; a short-lived child
 * process (exit-export.ts) then exports them with an exporter of the same configuration (the child's
 * environment is this process's), and the exiting process waits for it (spawnSync, bounded).
 *
 * A batch whose export was under way goes to the child too (its request is cut with the process). What
 * an exit this way cannot keep: resume spans still open (their verdict would have come from the wire),
 * and spans of a resource whose detected attributes never settled (register settles them at start).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SpanContext } from '@opentelemetry/api';
import type { tracing } from '@opentelemetry/sdk-node';

type SpanExporter = tracing.SpanExporter;
type ReadableSpan = tracing.ReadableSpan;
type ExportDone = Parameters<SpanExporter['export']>[1];

/** The exporter's `ExportResultCode.SUCCESS` (of @opentelemetry/core, not a dependency of this package). */
const SUCCESS = 0;

/** The child that exports the spans an exiting process hands it. */
const EXPORT_CHILD = fileURLToPath(new URL('./exit-export.js', import.meta.url));

/** A ReadableSpan as JSON: what the OTLP serializer reads of it, `spanContext()` as its value, the resource as an index. */
type SpanJson = Omit<ReadableSpan, 'spanContext' | 'resource' | 'ended'> & {
  spanContext: SpanContext;
  /** Index into `ExitBatch.resources`. */
  resource: number;
};

/** What the exiting process writes to the child's stdin. */
export interface ExitBatch {
  resources: { attributes: ReadableSpan['resource']['attributes']; schemaUrl: string | undefined }[];
  spans: SpanJson[];
}

/** The exporter the SDK's batch processor is given: the real one, until the process exits. */
export class ExitSafeExporter implements SpanExporter {
  /** Set at 'exit': the batches handed over from then on are kept here, not sent. */
  private kept: ReadableSpan[] | undefined;
  /**
   * Batches whose export is under way: an exit cuts their request (a SIGTERM handler's exit during the
   * flush, say), so they go to the child too; one that had reached the collector arrives twice.
   */
  private readonly sending = new Set<ReadableSpan[]>();

  constructor(private readonly inner: SpanExporter) {}

  export(spans: ReadableSpan[], done: ExportDone): void {
    if (this.kept !== undefined) {
      this.kept.push(...spans);
      return done({ code: SUCCESS });
    }
    this.sending.add(spans);
    this.inner.export(spans, (result) => {
      this.sending.delete(spans);
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }

  /**
   * The spans `flush` hands over synchronously: the batch processor's forceFlush gives the exporter
   * its queue before it waits on anything (resources with attributes still pending excepted).
   */
  takeAtExit(flush: () => void): ReadableSpan[] {
    const kept: ReadableSpan[] = [];
    for (const batch of this.sending) kept.push(...batch);
    this.kept = kept;
    flush();
    return kept;
  }
}

export interface ExitExportOptions {
  /** Longest the exiting process waits for the child's export. Default 10000 ms. */
  maxWaitMs?: number;
}

/**
 * At 'exit': `beforeFlush` (held polls leave as polls), then the batch processor's queue, through
 * `exporter`, to the child. Nothing happens when the queue is empty (a process that recorded nothing,
 * or whose spans were flushed at `beforeExit` or a signal).
 */
export function exportAtExit(
  exporter: ExitSafeExporter,
  flush: () => void,
  beforeFlush: () => void,
  options: ExitExportOptions = {},
): void {
  process.once('exit', () => {
    beforeFlush();
    const spans = exporter.takeAtExit(flush);
    if (spans.length === 0) return;
    spawnSync(process.execPath, [EXPORT_CHILD], {
      input: JSON.stringify(batchOf(spans)),
      timeout: options.maxWaitMs ?? 10_000,
      stdio: ['pipe', 'ignore', 'inherit'],
    });
  });
}

function batchOf(spans: ReadableSpan[]): ExitBatch {
  const resources = new Map<ReadableSpan['resource'], number>();
  const batch: ExitBatch = { resources: [], spans: [] };
  for (const span of spans) {
    let resource = resources.get(span.resource);
    if (resource === undefined) {
      resource = batch.resources.length;
      resources.set(span.resource, resource);
      batch.resources.push({ attributes: span.resource.attributes, schemaUrl: span.resource.schemaUrl });
    }
    batch.spans.push({
      name: span.name,
      kind: span.kind,
      spanContext: span.spanContext(),
      parentSpanContext: span.parentSpanContext,
      startTime: span.startTime,
      endTime: span.endTime,
      duration: span.duration,
      status: span.status,
      attributes: span.attributes,
      links: span.links,
      events: span.events,
      droppedAttributesCount: span.droppedAttributesCount,
      droppedEventsCount: span.droppedEventsCount,
      droppedLinksCount: span.droppedLinksCount,
      instrumentationScope: span.instrumentationScope,
      resource,
    });
  }
  return batch;
}
