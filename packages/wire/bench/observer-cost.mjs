/**
 * The wire observer's own cost on a client's SSE path, counted in instructions (stable on a loaded
 * machine, unlike time): a fetch wrapped by a WireObserver with one deciding listener (as
 * instrumentFetch and guardedFetch have) against the same fetch unwrapped, over an in-process
 * upstream that answers each tools/call with `progress` progress events (each with an SDK-style
 * event-store id) and the result, in 15.7 KB chunks as the SDK's server writes them over loopback.
 * No network, no SDK: what is left is the observer's work per event and per request.
 *
 * Run it twice under callgrind with two call counts; the difference over the difference of events is
 * the cost per event (warm: compilation falls in the first calls of both):
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/observer-cost.mjs wire 10 1000
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/observer-cost.mjs wire 40 1000
 *   (and `bare` for the same without the observer; `wire 100 0` and `wire 400 0` for a request's own cost)
 *
 * Without valgrind it prints CPU ns per event, which this shared machine scatters widely.
 * WIRE=<path to an index.js> compares another build of the package (e.g. a copy of an older dist).
 */
import { fileURLToPath } from 'node:url';
import { progressUpstream } from './progress-upstream.mjs';

const WIRE = process.env.WIRE ?? fileURLToPath(new URL('../dist/index.js', import.meta.url));
const { WireObserver } = await import(WIRE);
const variant = process.argv[2] ?? 'wire';
const CALLS = Number(process.argv[3] ?? 200);
const PROGRESS = Number(process.argv[4] ?? 1000);
const WARM = Number(process.env.WARM ?? 20);
const { upstream, call: callThrough } = progressUpstream(PROGRESS);

const fetch =
  variant === 'wire'
    ? new WireObserver().addListener({ onEvent: () => undefined, eventsWanted: 'deciding' }).wrap(upstream)
    : upstream;

const call = () => callThrough(fetch);

for (let i = 0; i < WARM; i++) await call();
const start = process.cpuUsage();
for (let i = 0; i < CALLS; i++) await call();
const used = process.cpuUsage(start);
const events = CALLS * (PROGRESS + 2);
console.log(
  `${variant}: ${events} events, ${(((used.user + used.system) * 1000) / events).toFixed(0)} ns CPU per event`,
);
