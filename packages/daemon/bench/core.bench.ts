/**
 * The detector core alone, in this process: spans per second of Detector.ingest on mostly healthy
 * traffic (the test workload, 1 request in 100 failing; and 1 in 10), two workloads alternated on one
 * detector sized for one, so that every round evicts the other's states as a long-running receiver
 * does; and heap per tracked request at 1,000,000 tracked (after GC, a 36-character session id each,
 * the span-id dedupe set included).
 */
import { randomUUID } from 'node:crypto';
import { Detector, type SpanRecord } from '@resumewatch/detector';
import * as S from '@resumewatch/semconv';
import { arg, figure, heapNow, median, range, SMOKE } from '../../../bench/harness.js';
import { workload } from '../../detector/test/helpers/workload.js';

const REQUESTS = arg('requests', 100_000, 500);
const ROUNDS = arg('rounds', 10, 2);
const TRACKED = arg('tracked', 1_000_000, 2_000);

/**
 * `dictionary`: the same spans with null-prototype attribute records, as a door may build them (one hash
 * probe a lookup, against megamorphic lookups in the `{}` records the doors build today).
 */
const dictionaryOf = (spans: SpanRecord[]): SpanRecord[] =>
  spans.map((x) => ({
    ...x,
    attributes: Object.assign(Object.create(null) as SpanRecord['attributes'], x.attributes),
  }));
// The heap probe first, in a block of its own: nothing of the rate rounds is alive on either side of it.
{
  const before = (await heapNow()).heap;
  const d = new Detector({ maxRequests: TRACKED });
  const attributes: Record<string, string | number> = {};
  const s: SpanRecord = {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: '',
    name: S.SPAN_REQUEST_TERMINAL,
    kind: 1,
    startTimeUnixMs: 0,
    endTimeUnixMs: 0,
    attributes,
    service: 'bench',
  };
  for (let i = 0; i < TRACKED; i++) {
    attributes[S.ATTR_MCP_SESSION_ID] = randomUUID();
    attributes[S.ATTR_JSONRPC_REQUEST_ID] = i & 7;
    attributes[S.ATTR_MCP_STREAM_ID] = `stream-${i}`;
    s.spanId = i.toString(16).padStart(16, '0');
    s.startTimeUnixMs = s.endTimeUnixMs = 1_700_000_000_000 + i;
    d.ingest(s);
  }
  const perRequest = ((await heapNow()).heap - before) / d.stats().tracked;
  figure({
    id: 'core-heap-per-request',
    what: `heap per tracked request at ${d.stats().tracked} tracked`,
    target: { text: '≤ 200 bytes', bound: 200, dir: '<=', on: 'ours' },
    ours: { value: perRequest, unit: 'bytes' },
    heldBy: "the request table's columns and the session id strings",
    note: 'heap (code space left out) + array buffers after GC, a distinct 36-character session id per request, span-id dedupe set included',
  });
}
for (const [failEvery, dictionary] of [
  [100, false],
  [10, false],
  [100, true],
] as const) {
  let w = [workload(REQUESTS, 'a', failEvery), workload(REQUESTS, 'b', failEvery)];
  if (dictionary) w = w.map(dictionaryOf);
  let findings = 0;
  // In smoke mode the rounds are small enough for the dedupe set to remember every span: shrink it.
  const d = new Detector({
    maxRequests: REQUESTS,
    onFinding: () => findings++,
    ...(SMOKE ? { dedupeCapacity: 64 } : {}),
  });
  const rates: number[] = [];
  for (let round = -4; round < ROUNDS; round++) {
    const spans = w[round & 1]!;
    const start = process.hrtime.bigint();
    for (let i = 0; i < spans.length; i++) d.ingest(spans[i]!);
    if (round >= 0) rates.push(spans.length / (Number(process.hrtime.bigint() - start) / 1e9));
  }
  figure({
    id: `core-1-in-${failEvery}${dictionary ? '-dictionary' : ''}`,
    what: `the detector core, 1 request in ${failEvery} failing${dictionary ? ', null-prototype attribute records' : ''}: spans per second (median of rounds)`,
    ...(failEvery === 100 && !dictionary
      ? { target: { text: '≥ 2 M spans/s', bound: 2e6, dir: '>=' as const, on: 'ours' as const } }
      : {}),
    ours: { value: median(rates), unit: 'spans/s', range: range(rates) },
    heldBy:
      "ids as strings: the span id's hex parse (about 500 instructions a span) and the stream id's FNV, whose values state files keep; a new request's row in a full table (about 700 each); docs/performance.md",
    note: `${w[0]!.length} spans a round, ${findings} findings in all, every round evicts the previous one's ${REQUESTS} states`,
  });
}
