import { unexpectedErrorLine, type DetectorMetrics } from '@resumewatch/daemon';
import {
  GATEWAY_METRICS,
  LABEL_ACTION,
  LABEL_METHOD,
  LABEL_PROOF,
  LABEL_REASON,
  LABEL_STATUS_CLASS,
  METRIC_GATEWAY_EXCHANGES_TOTAL,
  LABEL_KIND,
  METRIC_GATEWAY_GUARD_ACTIONS_TOTAL,
  METRIC_GATEWAY_HELD_BYTES,
  METRIC_GATEWAY_LATE_UPSTREAM_ERRORS_TOTAL,
  METRIC_GATEWAY_SSE_HEARTBEATS_TOTAL,
  METRIC_GATEWAY_OBSERVATION_FAILURES_TOTAL,
  METRIC_GATEWAY_UNACCEPTED_SESSIONS,
  METRIC_GATEWAY_UNACCEPTED_SESSION_EVICTIONS_TOTAL,
  METRIC_GATEWAY_UNKEPT_IDS_TOTAL,
  METRIC_GATEWAY_TASK_HANDLES_REPEATED_TOTAL,
  METRIC_GATEWAY_OPEN_EXCHANGES,
  METRIC_GATEWAY_REFUSALS_TOTAL,
  METRIC_GATEWAY_UNPARSED_TOTAL,
  UnparsedKind,
  type GatewayRefusal,
  type GuardAction,
  type GuardProof,
} from '@resumewatch/semconv';
import type { ObservationStats } from './observation.js';
import { RateLimitedLog } from './error-log.js';

/** What the counts read of the observation at scrape time. */
type HeldStats = Pick<
  ObservationStats,
  | 'heldBytes'
  | 'unparsedJsonBodies'
  | 'oversizedEvents'
  | 'unreadEncodedBodies'
  | 'unacceptedSessions'
  | 'unacceptedEvictions'
  | 'unkeptIds'
>;

/** The HTTP methods MCP uses; any other is counted as `other` (a label set a client cannot grow). */
const METHODS = new Set(['GET', 'POST', 'DELETE', 'HEAD', 'OPTIONS']);

/**
 * The gateway's own counts, plain numbers on the data path, read by the metrics at scrape time
 * (`DetectorMetrics.addCollected`), next to the detector's on the same /metrics.
 */
export class GatewayCounts {
  /** Exchanges open now (waiting for the upstream, or streaming a body). */
  open = 0;
  private readonly exchanges = new Map<string, number>();
  private readonly refusals = new Map<GatewayRefusal, number>();
  /** By action and the proof it rests on, `${action}\n${proof}`. */
  private readonly actions = new Map<string, number>();
  /** Request batches forwarded unobserved (over --max-batch-messages), their responses with them. */
  private unobservedBatches = 0;
  /** Upstream errors after their exchange's response was over or had already failed. */
  private lateUpstreamErrors = 0;
  /** SSE comments written to keep a quiet stream alive (--sse-heartbeat). */
  private heartbeats = 0;
  /** Bodies whose observation threw, each stood aside (`observationFailed`). */
  observationFailures = 0;
  /** At most five lines a minute, then one with how many more (every failure counted). */
  private readonly failureLines = new RateLimitedLog(
    (line) => process.stderr.write(line),
    'observation failure lines',
    5,
  );
  /** The observation whose held bytes and unparsed bodies the metrics read (set once it is made). */
  private observation: { stats(): HeldStats } | undefined = undefined;

  observe(observation: { stats(): HeldStats }): void {
    this.observation = observation;
  }

  /** With --enforce, the calls answered with a kept task handle (task-handles.ts). */
  private taskHandles: { readonly repeated: number; readonly size: number } | undefined = undefined;

  repeatsFrom(handles: { readonly repeated: number; readonly size: number }): void {
    this.taskHandles = handles;
  }

  opened(): void {
    this.open++;
  }

  closed(): void {
    this.open--;
  }

  exchangeEnded(method: string, status: number | undefined): void {
    const key = `${METHODS.has(method) ? method : 'other'}\n${status === undefined ? 'none' : `${Math.floor(status / 100)}xx`}`;
    this.exchanges.set(key, (this.exchanges.get(key) ?? 0) + 1);
  }

  unobservedBatch(): void {
    this.unobservedBatches++;
  }

  readonly heartbeat = (): void => {
    this.heartbeats++;
  };

  lateUpstreamError(): void {
    this.lateUpstreamErrors++;
  }

  refused(reason: GatewayRefusal): void {
    this.refusals.set(reason, (this.refusals.get(reason) ?? 0) + 1);
  }

  /**
   * Observing a body threw (a defect): the body stood aside, passed on unobserved. Counted, and one line
   * on stderr at most five a minute; never throws.
   */
  observationFailed(error: unknown): void {
    this.observationFailures++;
    try {
      this.failureLines.line(
        `resumewatch gateway: observation failed, the body passed through unobserved: ${unexpectedErrorLine(error)}\n`,
      );
    } catch {
      // stderr is gone: the count stands.
    }
  }

  guardAction(action: GuardAction, proof: GuardProof): void {
    const key = `${action}\n${proof}`;
    this.actions.set(key, (this.actions.get(key) ?? 0) + 1);
  }

  /** What has been counted of each (for tests and stats): `actions` by action, `proofs` by action and proof. */
  snapshot(): {
    open: number;
    unobservedBatches: number;
    lateUpstreamErrors: number;
    heartbeats: number;
    observationFailures: number;
    taskHandlesRepeated: number;
    /** Task handles kept now (--enforce). */
    taskHandles: number;
    refusals: Partial<Record<GatewayRefusal, number>>;
    actions: Partial<Record<GuardAction, number>>;
    proofs: Partial<Record<GuardAction, Partial<Record<GuardProof, number>>>>;
  } {
    const actions: Partial<Record<GuardAction, number>> = {};
    const proofs: Partial<Record<GuardAction, Partial<Record<GuardProof, number>>>> = {};
    for (const [key, n] of this.actions) {
      const [action, proof] = key.split('\n') as [GuardAction, GuardProof];
      actions[action] = (actions[action] ?? 0) + n;
      (proofs[action] ??= {})[proof] = n;
    }
    return {
      open: this.open,
      unobservedBatches: this.unobservedBatches,
      lateUpstreamErrors: this.lateUpstreamErrors,
      heartbeats: this.heartbeats,
      observationFailures: this.observationFailures,
      taskHandlesRepeated: this.taskHandles?.repeated ?? 0,
      taskHandles: this.taskHandles?.size ?? 0,
      refusals: Object.fromEntries(this.refusals),
      actions,
      proofs,
    };
  }

  /** Adds the gateway's metrics to the detector's registries. */
  register(metrics: DetectorMetrics): void {
    const reads: Record<string, () => Iterable<readonly [Record<string, string>, number]>> = {
      [METRIC_GATEWAY_EXCHANGES_TOTAL]: () =>
        [...this.exchanges].map(([key, n]) => {
          const [method, statusClass] = key.split('\n') as [string, string];
          return [{ [LABEL_METHOD]: method, [LABEL_STATUS_CLASS]: statusClass }, n] as const;
        }),
      [METRIC_GATEWAY_OPEN_EXCHANGES]: () => [[{}, this.open]],
      [METRIC_GATEWAY_REFUSALS_TOTAL]: () => [...this.refusals].map(([r, n]) => [{ [LABEL_REASON]: r }, n] as const),
      [METRIC_GATEWAY_GUARD_ACTIONS_TOTAL]: () =>
        [...this.actions].map(([key, n]) => {
          const [action, proof] = key.split('\n') as [string, string];
          return [{ [LABEL_ACTION]: action, [LABEL_PROOF]: proof }, n] as const;
        }),
      [METRIC_GATEWAY_LATE_UPSTREAM_ERRORS_TOTAL]: () => [[{}, this.lateUpstreamErrors]],
      [METRIC_GATEWAY_SSE_HEARTBEATS_TOTAL]: () => [[{}, this.heartbeats]],
      [METRIC_GATEWAY_OBSERVATION_FAILURES_TOTAL]: () => [[{}, this.observationFailures]],
      [METRIC_GATEWAY_HELD_BYTES]: () => [[{}, this.observation?.stats().heldBytes ?? 0]],
      [METRIC_GATEWAY_UNACCEPTED_SESSIONS]: () => [[{}, this.observation?.stats().unacceptedSessions ?? 0]],
      [METRIC_GATEWAY_UNACCEPTED_SESSION_EVICTIONS_TOTAL]: () => [
        [{}, this.observation?.stats().unacceptedEvictions ?? 0],
      ],
      [METRIC_GATEWAY_UNKEPT_IDS_TOTAL]: () => [[{}, this.observation?.stats().unkeptIds ?? 0]],
      [METRIC_GATEWAY_TASK_HANDLES_REPEATED_TOTAL]: () => [[{}, this.taskHandles?.repeated ?? 0]],
      [METRIC_GATEWAY_UNPARSED_TOTAL]: () => {
        const stats = this.observation?.stats();
        return [
          [{ [LABEL_KIND]: UnparsedKind.JSON_BODY }, stats?.unparsedJsonBodies ?? 0],
          [{ [LABEL_KIND]: UnparsedKind.SSE_EVENT }, stats?.oversizedEvents ?? 0],
          [{ [LABEL_KIND]: UnparsedKind.REQUEST_BATCH }, this.unobservedBatches],
          [{ [LABEL_KIND]: UnparsedKind.ENCODED_BODY }, stats?.unreadEncodedBodies ?? 0],
        ];
      },
    };
    for (const d of GATEWAY_METRICS) metrics.addCollected(d, reads[d.name]!);
  }
}
