import fc from 'fast-check';

/**
 * A schedule: what one MCP client does through the gateway, step by step, and what the upstream
 * answers each step with. The generator (`scheduleArbitrary`) mixes the server's behaviours (progress,
 * results, replays of them, differing replays, batches, early ends, JSON or SSE, Content-Length or
 * chunked), cuts in both directions at byte offsets, and the client's connections (new, reused after a
 * whole response, pipelined).
 */

/** JSON-RPC ids: `1` and `"1"` are different requests. */
export type RequestId = number | string;
const REQUEST_IDS: readonly RequestId[] = [1, '1', 2, '2', 3, '3'];

/** A replayed result as the original (`same`), with its result's keys in another order, or with other content. */
export type Variant = 'same' | 'reordered' | 'other';

/** Where the upstream ends an SSE response cleanly: after every event, or early, before or after the result. */
export type Close = 'end' | 'before-result' | 'after-result';

/**
 * The connection a step's request goes on: a new one; the last one whose response was read whole
 * (keep-alive; a new one if there is none); or the previous step's, written with that step's request
 * before any of its response is read (pipelining).
 */
type Connection = 'new' | 'reuse' | 'pipeline';

/** The client reads the whole response, or `bytes` raw bytes of it and then destroys its socket, at once or once the gateway is done. */
type Read = 'all' | { bytes: number; close: 'at-once' | 'later' };

/** How a step's response travels. */
interface Delivery {
  conn: Connection;
  read: Read;
  /** The upstream's framing of the body: Content-Length or chunked. */
  framing: 'length' | 'chunked';
  /** The upstream writes the body in two writes, split at this byte. */
  split?: number;
  /** The upstream destroys its response after this many body bytes (when fewer than the body has). */
  cut?: number;
}

/**
 * A tools/call. SSE: a logical stream of [priming event], `progress[0]` progress events, the result (in
 * a batch after a replay of an earlier call's result when `foreign`), `progress[1]` progress events,
 * sent up to `close`. JSON: the result as the body.
 */
export interface CallStep extends Delivery {
  kind: 'call';
  id: RequestId;
  format: 'sse' | 'json';
  primed: boolean;
  progress: [before: number, after: number];
  /** The result event is a batch: [the result of the `of`-th earlier call (as `variant`), this call's result]. */
  foreign?: { of: number; variant: Variant };
  /**
   * The server gives each two events in a row one id (a coarse clock; issue 37): a cursor names the
   * earliest event that bears it. Set by the deterministic cases only (the generator's draws stay as they were).
   */
  repeatIds?: boolean;
  close: Close;
}

/** A GET with the Last-Event-ID the client holds for the `of`-th call's stream; the upstream replays what follows it. */
export interface ResumeStep extends Delivery {
  kind: 'resume';
  of: number;
  /** How the replayed results differ from the originals. */
  variant: Variant;
  close: Close;
}

/** A GET without Last-Event-ID: the upstream's listening stream replays results of earlier calls and a notification. */
export interface ListenStep extends Delivery {
  kind: 'listen';
  replays: number[];
  /** One event holding every replay and the notification, instead of one event each. */
  batched: boolean;
  variant: Variant;
}

export type Step = CallStep | ResumeStep | ListenStep;

const variant = fc.constantFrom<Variant>('same', 'reordered', 'other');
const close = fc.constantFrom<Close>('end', 'before-result', 'after-result');

const delivery = {
  conn: fc.oneof(
    { withCrossShrink: true },
    { weight: 2, arbitrary: fc.constant<Connection>('new') },
    { weight: 2, arbitrary: fc.constant<Connection>('reuse') },
    { weight: 1, arbitrary: fc.constant<Connection>('pipeline') },
  ),
  read: fc.oneof(
    { withCrossShrink: true },
    { weight: 3, arbitrary: fc.constant<Read>('all') },
    {
      weight: 2,
      arbitrary: fc.record({ bytes: fc.integer({ min: 150, max: 700 }), close: fc.constantFrom('at-once', 'later') }),
    },
  ),
  framing: fc.constantFrom<'length' | 'chunked'>('chunked', 'length'),
  split: fc.integer({ min: 1, max: 300 }),
  cut: fc.integer({ min: 0, max: 400 }),
};
const deliveryKeys = ['conn', 'read', 'framing'] as const;

const call: fc.Arbitrary<Step> = fc.record(
  {
    kind: fc.constant('call' as const),
    id: fc.constantFrom(...REQUEST_IDS),
    format: fc.oneof(
      { withCrossShrink: true },
      { weight: 4, arbitrary: fc.constant('sse' as const) },
      { weight: 1, arbitrary: fc.constant('json' as const) },
    ),
    primed: fc.boolean(),
    progress: fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 1 })),
    foreign: fc.record({ of: fc.nat({ max: 5 }), variant }),
    close,
    ...delivery,
  },
  { requiredKeys: ['kind', 'id', 'format', 'primed', 'progress', 'close', ...deliveryKeys] },
);

const resume: fc.Arbitrary<Step> = fc.record(
  { kind: fc.constant('resume' as const), of: fc.nat({ max: 5 }), variant, close, ...delivery },
  { requiredKeys: ['kind', 'of', 'variant', 'close', ...deliveryKeys] },
);

const listen: fc.Arbitrary<Step> = fc.record(
  {
    kind: fc.constant('listen' as const),
    replays: fc.array(fc.nat({ max: 5 }), { minLength: 1, maxLength: 2 }),
    batched: fc.boolean(),
    variant,
    ...delivery,
  },
  { requiredKeys: ['kind', 'replays', 'batched', 'variant', ...deliveryKeys] },
);

/** A handful of steps; each call's id distinct from the others' (the next unused one of REQUEST_IDS). */
export const scheduleArbitrary: fc.Arbitrary<Step[]> = fc
  .array(
    fc.oneof(
      { withCrossShrink: true },
      { weight: 3, arbitrary: call },
      { weight: 3, arbitrary: resume },
      { weight: 1, arbitrary: listen },
    ),
    {
      minLength: 1,
      maxLength: 6,
    },
  )
  .map(distinctIds);

function distinctIds(steps: Step[]): Step[] {
  const used = new Set<RequestId>();
  return steps.map((step) => {
    if (step.kind !== 'call') return step;
    let at = REQUEST_IDS.indexOf(step.id);
    while (used.has(REQUEST_IDS[at]!)) at = (at + 1) % REQUEST_IDS.length;
    used.add(REQUEST_IDS[at]!);
    return REQUEST_IDS[at] === step.id ? step : { ...step, id: REQUEST_IDS[at]! };
  });
}

/** One line per step, for a failure's report. */
export function describeSchedule(steps: readonly Step[]): string {
  return steps.map((step, n) => `  #${n} ${describeStep(step)}`).join('\n');
}

function describeStep(step: Step): string {
  let what: string;
  if (step.kind === 'call') {
    what =
      step.format === 'json'
        ? `call id ${JSON.stringify(step.id)} → JSON`
        : `call id ${JSON.stringify(step.id)} → SSE${step.primed ? ' primed' : ''} progress ${step.progress[0]}+${step.progress[1]}` +
          `${step.foreign ? `, result batched after an earlier call's (pick ${step.foreign.of}, ${step.foreign.variant})` : ''}` +
          `${step.repeatIds ? ', ids in pairs' : ''}, close ${step.close}`;
  } else if (step.kind === 'resume') {
    what = `resume a call's stream (pick ${step.of}) → replay ${step.variant}, close ${step.close}`;
  } else {
    what = `listen → replays of calls (picks ${step.replays.join(', ')}, ${step.variant})${step.batched ? ' in one batch' : ''}`;
  }
  const read = step.read === 'all' ? 'read all' : `read ${step.read.bytes} bytes, close ${step.read.close}`;
  const upstream = [
    step.framing,
    step.split !== undefined ? `split@${step.split}` : '',
    step.cut !== undefined ? `cut@${step.cut}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return `${what} | conn ${step.conn}, ${read} | upstream ${upstream}`;
}
