// The one configuration of the generated monitoring artifacts (dashboards/generated/*.json,
// alerts/rules/*.yaml and the runbook links of the promtool cases), in the manner of a monitoring
// mixin's `_config`: the selectors, and every threshold, `for:` duration and window of every rule, next
// to each other. Change a value here and run `pnpm --filter @resumewatch/dashboards generate`.

/** A Prometheus duration as the rules write it: a whole number and one unit, e.g. `10m`. */
export type Duration = `${number}${'s' | 'm' | 'h' | 'd'}`;

/** An alert that fires when its value stays above `threshold` for `for`. */
interface ThresholdAlert {
  threshold: number;
  for: Duration;
}

/** An alert on a condition without a number to tune (a target down, no target at all). */
interface ConditionAlert {
  for: Duration;
}

/** An alert that reads its own range vector, not a shared recording rule. */
interface WindowedAlert extends ThresholdAlert {
  /** The range of its rate() or increase(), and of the recording rule it reads, if any. */
  window: Duration;
}

export interface MonitoringConfig {
  /**
   * PromQL label matchers that select the detectors' scrape targets, without braces. Used by every
   * alert and panel that reads the detectors themselves (`up`, spans received, detection lag).
   */
  detectorSelector: string;
  /**
   * Where docs/runbooks.md is served; each alert's `runbook_url` is this plus `#<alert name in lower
   * case>`, and the overview dashboard links to it.
   */
  runbookBaseUrl: string;
  /**
   * The window of the `:increase<window>` recording rules of findings, standing findings, duplicate
   * terminals and server defects: the failure alerts and the overview's "last <window>" stats count
   * events over it, so one event keeps its alert firing this long.
   */
  findingsWindow: Duration;
  /**
   * The range of the `:rate<window>` recording rules (spans received and invalid, read by the detector
   * alerts; findings, resume outcomes and reattach acceptance) and of the gateway's upstream-failure rate.
   */
  rateWindow: Duration;
  /** The window of the storms-ended recording rule (`:increase<window>`, by `ended_by`); no alert reads it. */
  stormsEndedWindow: Duration;
  /**
   * Per alert (the key is its name): the value its expression compares with (`> threshold`; in the
   * unit of that expression, said per alert below), its `for:`, and its window where it has its own.
   */
  alerts: {
    /** Threshold: duplicate terminal events per service over `findingsWindow`. */
    McpDuplicateTerminalDelivered: ThresholdAlert;
    /** Threshold: full-signature findings per service over `findingsWindow`. */
    McpResumeLoopSignature: ThresholdAlert;
    /** Threshold: storms detected over `findingsWindow`, and storms in progress, per service. */
    McpReconnectStorm: ThresholdAlert;
    /** Threshold: resume-after-terminal findings per service over `findingsWindow`. */
    McpResumeAfterTerminal: ThresholdAlert;
    /** Threshold: standing ambiguous-empty-replay findings per service over `findingsWindow`. */
    McpAmbiguousEmptyReplay: ThresholdAlert;
    /** Threshold: standing cursor-lost findings per service over `findingsWindow`. */
    McpResumeCursorLost: ThresholdAlert;
    /** Threshold: completed-after-cancellation findings per service over `findingsWindow`. */
    McpCompletedAfterCancellation: ThresholdAlert;
    /** Threshold: duplicate-execution findings (2026-07-28 era) per service over `findingsWindow`. */
    McpDuplicateExecution: ThresholdAlert;
    /** Threshold: possible-duplicate-execution findings (2026-07-28 era) per service over `findingsWindow`. */
    McpPossibleDuplicateExecution: ThresholdAlert;
    /**
     * Threshold: the share (0 to 1) of a service's MCP requests over `findingsWindow` that lost their
     * result (standing lost_result findings / requests).
     */
    McpResultsLost: ThresholdAlert;
    /**
     * Threshold: duplicate-task findings (a task-augmented call re-issued, tied by its idempotency key) per
     * service over `findingsWindow`.
     */
    McpDuplicateTask: ThresholdAlert;
    /**
     * Threshold: possible-duplicate-task findings (tied by client, method, name and arguments) per service
     * over `findingsWindow`.
     */
    McpPossibleDuplicateTask: ThresholdAlert;
    /** Threshold: standing lost-task-result findings (net of retractions) per service over `findingsWindow`. */
    McpTaskResultLost: ThresholdAlert;
    /** Threshold: task-poll-storm findings per service over `findingsWindow`. */
    McpTaskPollStorm: ThresholdAlert;
    /** Threshold: dead-session-loop findings per service over `findingsWindow`. */
    McpDeadSessionLoop: ThresholdAlert;
    /** Threshold: listening-stream-loop findings per service over `findingsWindow`. */
    McpListeningStreamLoop: ThresholdAlert;
    /** Threshold: conflicting terminals per MCP server over `findingsWindow`. */
    McpServerConflictingTerminal: ThresholdAlert;
    /** Threshold: foreign replays per MCP server over `findingsWindow`. */
    McpServerForeignReplay: ThresholdAlert;
    ResumewatchDetectorDown: ConditionAlert;
    ResumewatchDetectorAbsent: ConditionAlert;
    /** Threshold: spans per second over `rateWindow`; a replica up and at or below it fires. */
    ResumewatchDetectorNoSpans: ThresholdAlert;
    /** Threshold: the share (0 to 1) of received spans that are invalid, over `rateWindow`. */
    ResumewatchDetectorRejectingSpans: ThresholdAlert;
    /** Threshold: request states evicted at the cap per replica over `window`. */
    ResumewatchDetectorEvictingState: WindowedAlert;
    /** Threshold: task records dropped at the per-service cap, per replica over `window`. */
    ResumewatchDetectorEvictingTasks: WindowedAlert;
    /** Threshold: seconds of the `quantile` of detection lag over `window`, per job. */
    ResumewatchDetectionLagHigh: WindowedAlert & { quantile: number };
    /** Threshold: 502/504 answered per second per gateway replica over `rateWindow`. */
    ResumewatchGatewayUpstreamFailing: ThresholdAlert;
    /** Threshold: 503 answered at `--max-streams` per gateway replica over `window`. */
    ResumewatchGatewayAtStreamLimit: WindowedAlert;
    /** Threshold: connections closed unanswered at `--max-connections` per gateway replica over `window`. */
    ResumewatchGatewayAtConnectionLimit: WindowedAlert;
    /** Threshold: exchanges the gateway failed itself (502 `internal_error`) per replica over `window`. */
    ResumewatchGatewayInternalError: WindowedAlert;
    /** Threshold: 408 answered (headers or body not in time) per second per gateway replica over `rateWindow`. */
    ResumewatchGatewayClientTimeouts: ThresholdAlert;
    /** Threshold: the share (0 to 1) of a service's MCP operations that failed (`error_type` set), over `window`. */
    McpServerErrorRatioHigh: WindowedAlert;
    /** Threshold: seconds of the `quantile` of the duration of a service's operations of one method, over `window`. */
    McpServerLatencyHigh: WindowedAlert & { quantile: number };
  };
}

/**
 * The defaults work for a user who copies the files as they are: deploy/prometheus/prometheus.yml
 * scrapes the detectors as job `resumewatch-detector`, and the runbooks travel with the rules as
 * `docs/runbooks.md` (a link relative to the root of the copied files, since resumewatch has no
 * published address). A deployment that serves the runbooks sets `runbookBaseUrl` to their address,
 * e.g. `https://git.example.com/acme/resumewatch/blob/main/docs/runbooks.md`.
 *
 * A failure threshold of 0 means "any": each of those events is a wrong result or a lost request that
 * someone has to look at; `for:` then only waits for the series to be evaluated more than once.
 */
const DEFAULT_CONFIG: MonitoringConfig = {
  detectorSelector: 'job="resumewatch-detector"',
  runbookBaseUrl: 'docs/runbooks.md',
  // Outlasts every failure `for:` so one event still fires, a burst does not flap, and a retraction has time to land.
  findingsWindow: '10m',
  // The usual mixin range: many scrapes at the shipped 5s interval, so one missed scrape does not move the ratio.
  rateWindow: '5m',
  // Storms end rarely; an hour shows how they end (evicted, quiet, ...), not the end of a single one.
  stormsEndedWindow: '1h',
  alerts: {
    McpDuplicateTerminalDelivered: {
      // Any duplicate: each one may have run a side effect twice.
      threshold: 0,
      // Pages fast: a duplicate is already harm done, and 1m rides out one odd evaluation.
      for: '1m',
    },
    McpResumeLoopSignature: {
      // Any signature: the detector only reports it when both halves of the loop are proven.
      threshold: 0,
      // Pages fast: the loop may still be running and replaying results.
      for: '1m',
    },
    McpReconnectStorm: {
      // Any storm: the detector already requires --storm-threshold attempts within its window for one.
      threshold: 0,
      // A storm that ends by itself within 2m (the server evicts the cursor) is not worth a ticket.
      for: '2m',
    },
    McpResumeAfterTerminal: {
      // Any: resuming a finished request can only replay its result.
      threshold: 0,
      // A ticket, not a page: a single client bug shows up again; 5m filters one-off noise.
      for: '5m',
    },
    McpAmbiguousEmptyReplay: {
      // Any standing finding: a request lost without the client knowing.
      threshold: 0,
      // Leaves the retraction (a late continuation or terminal) time to arrive before firing.
      for: '5m',
    },
    McpResumeCursorLost: {
      // Any standing finding: the request's remaining events are gone.
      threshold: 0,
      // Leaves the retraction (a late continuation or terminal) time to arrive before firing.
      for: '5m',
    },
    McpCompletedAfterCancellation: {
      // Any: each one is a call the application was told failed while it ran to completion.
      threshold: 0,
      // A ticket, not a page: the harm (a retry running it twice) is the application's next move; 5m filters noise.
      for: '5m',
    },
    McpDuplicateExecution: {
      // Any: each one is a side effect that ran twice, the era's duplicate terminal.
      threshold: 0,
      // Pages fast, as a duplicate terminal does: the harm is done, and 1m rides out one odd evaluation.
      for: '1m',
    },
    McpPossibleDuplicateExecution: {
      // Any: a re-issue whose first attempt may have run; the detector already waited --reissue-settle for its fate.
      threshold: 0,
      // A ticket, not a page: the harm is not proven (the server may have stopped); 5m filters one-off noise.
      for: '5m',
    },
    McpResultsLost: {
      // Any: each lost result is a call that failed the application while nothing on the wire looked
      // wrong. A service that tolerates a share of them raises it (0.01: one request in a hundred).
      threshold: 0,
      // A ticket after 5m: leaves a late result or a re-issue (the retractions) time to arrive.
      for: '5m',
    },
    McpDuplicateTask: {
      // Any: the idempotency key proves one piece of work now runs as two tasks.
      threshold: 0,
      // Pages fast, as a duplicate execution does: the second task is already running.
      for: '1m',
    },
    McpPossibleDuplicateTask: {
      // Any: a re-issue with the first attempt's task alive on the server; without a key it may be intended.
      threshold: 0,
      // A ticket, not a page: not proven the same work; 5m filters one-off noise.
      for: '5m',
    },
    McpTaskResultLost: {
      // Any standing finding: a task finished and its outcome never reached its client.
      threshold: 0,
      // Leaves the retraction (the outcome delivered after all, through a late fetch) time to arrive.
      for: '5m',
    },
    McpTaskPollStorm: {
      // Any: the detector already requires --task-poll-storm-threshold early polls (or --task-polls-after-gone) of one task.
      threshold: 0,
      // Reported once per task: a ticket after 2m, as a reconnect storm.
      for: '2m',
    },
    McpDeadSessionLoop: {
      // Any: the detector already requires --session-loop-threshold refused requests on one session id.
      threshold: 0,
      // Reported once per session and episode: a ticket after 2m, as a poll storm.
      for: '2m',
    },
    McpListeningStreamLoop: {
      // Any: the detector already requires --listening-loop-threshold re-opens after a 405 or an empty stream.
      threshold: 0,
      for: '2m',
    },
    McpServerConflictingTerminal: {
      // Any: a result from another request or session, possibly a data leak.
      threshold: 0,
      // Pages fast: the application may already hold the wrong result.
      for: '1m',
    },
    McpServerForeignReplay: {
      // Any: the transport forbids replay across streams.
      threshold: 0,
      // A ticket: the guard absorbs it for guarded clients; 5m filters one-off noise.
      for: '5m',
    },
    ResumewatchDetectorDown: {
      // Rides out a restart or a rolling deploy (a few scrapes) before paging.
      for: '3m',
    },
    ResumewatchDetectorAbsent: {
      // Service discovery may take a few minutes after a deploy before a target appears.
      for: '5m',
    },
    ResumewatchDetectorNoSpans: {
      // Silent means no span at all: any span proves the pipeline reaches the replica.
      threshold: 0,
      // Quiet hours of an idle service are normal; 10m of nothing on a replica that is up is not.
      for: '10m',
    },
    ResumewatchDetectorRejectingSpans: {
      // 1% of malformed spans already hides findings; below it a few odd producers are tolerated.
      threshold: 0.01,
      // A misbehaving producer must persist, not burst once.
      for: '10m',
    },
    ResumewatchDetectorEvictingState: {
      // Any eviction at the cap means a finding may be missed.
      threshold: 0,
      // Equal to its `for:`: a replica that keeps evicting within every window of it fires.
      window: '10m',
      // A short burst at the cap after a restart is tolerated; a sustained one is not.
      for: '10m',
    },
    ResumewatchDetectorEvictingTasks: {
      // Any task record dropped at the cap: that task's lost result or poll storm can no longer be told.
      threshold: 0,
      // Equal to its `for:`, as the request-state evictions.
      window: '10m',
      // A short burst of task creations is tolerated; a sustained one is not.
      for: '10m',
    },
    ResumewatchDetectionLagHigh: {
      // 30s late findings mean the alerts fire later than their own `for:` suggests.
      threshold: 30,
      // The tail, where a batching or saturation problem shows first.
      quantile: 0.99,
      // Enough findings in the window for a stable tail estimate.
      window: '10m',
      // Lag spikes with load; only a lasting one is a problem.
      for: '15m',
    },
    ResumewatchGatewayUpstreamFailing: {
      // Any 502/504 the gateway answered itself: its MCP server failed it.
      threshold: 0,
      // Pages after 5m: an upstream restart should be over by then.
      for: '5m',
    },
    ResumewatchGatewayAtStreamLimit: {
      // Any 503 at --max-streams: clients waited.
      threshold: 0,
      // Counted like the findings, so one refusal keeps the alert up for a while.
      window: '10m',
      // A ticket after 5m: a short peak at the limit is what --max-streams is for.
      for: '5m',
    },
    ResumewatchGatewayAtConnectionLimit: {
      // Any connection closed at --max-connections: its client got no answer at all.
      threshold: 0,
      // Counted like the stream limit's, so one refusal keeps the alert up for a while.
      window: '10m',
      // A ticket after 5m, as the stream limit: a short peak is what the cap is for.
      for: '5m',
    },
    ResumewatchGatewayInternalError: {
      // Any: an internal error is a defect of the gateway, and each one failed a client's exchange.
      threshold: 0,
      // Long enough that one error keeps the alert up until someone reads the stderr line.
      window: '10m',
      // At once: nothing retries it away.
      for: '1m',
    },
    ResumewatchGatewayClientTimeouts: {
      // A few 408s are clients on poor networks; 0.2/s (12 a minute) sustained is a broken path in front of
      // the gateway, or connections held open on purpose (slowloris).
      threshold: 0.2,
      // A ticket after 15m: only a lasting rate is more than noise.
      for: '15m',
    },
    McpServerErrorRatioHigh: {
      // 5% of operations failing is far above a healthy server's noise, and well below an outage.
      threshold: 0.05,
      // The usual mixin range: enough requests in it that one failure of a quiet service weighs little.
      window: '5m',
      // Pages after 10m: a lasting error rate, not a deploy's or an upstream restart's blip.
      for: '10m',
    },
    McpServerLatencyHigh: {
      // 10 s in the tail: an interactive client has given up waiting; long-running tools may need more.
      threshold: 10,
      // The tail, where a saturated server or a slow dependency shows first.
      quantile: 0.99,
      // Enough operations in the window for a stable tail estimate.
      window: '10m',
      // A ticket after 15m: latency spikes with load; only a lasting one is a problem.
      for: '15m',
    },
  },
};

/** The configuration the generator writes the committed files with. */
export const config: MonitoringConfig = DEFAULT_CONFIG;

/** The runbook link of an alert: its section of docs/runbooks.md (GitHub-style anchor of the heading). */
export function runbookUrl(alertName: string, base: string = config.runbookBaseUrl): string {
  return `${base}#${alertName.toLowerCase()}`;
}

const UNIT_WORDS = { s: 'second', m: 'minute', h: 'hour', d: 'day' } as const;

/** A duration as the annotations spell it for a reader: `10m` → `10 minutes`, `1h` → `1 hour`. */
export function spelled(duration: Duration): string {
  const n = Number(duration.slice(0, -1));
  const unit = UNIT_WORDS[duration.slice(-1) as keyof typeof UNIT_WORDS];
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}
