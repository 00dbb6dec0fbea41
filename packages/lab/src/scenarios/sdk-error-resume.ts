import type { ScenarioOptions } from './options.js';
import { resolveOptions } from './options.js';
import { recordingFetch } from './recording-fetch.js';
import type { RecordedRequest } from './recording-fetch.js';
import type { ScenarioSummary } from './summary.js';
import { sleep } from './wire-helpers.js';

const WAIT_FOR_RESUME_MS = 10_000;
const QUIET_MS = 800;
const SETTLE_CAP_MS = 5_000;

/**
 * The unmodified SDK client (`Client` + `StreamableHTTPClientTransport`) calls the `fail` tool. Its
 * stream ends with a JSON-RPC error response; the SDK only counts a *result* as "response received",
 * so it treats the close as a drop and resumes with the error event's id as Last-Event-ID.
 * A recording fetch (which alters nothing) captures what it sends afterwards.
 */
export async function runSdkErrorResume(options: ScenarioOptions): Promise<ScenarioSummary> {
  const started = Date.now();
  const { serverUrl, fetch } = resolveOptions(options);
  // Loaded on demand: importing the lab must not load the SDK client (and its eventsource-parser)
  // for consumers that never run this scenario.
  const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]);
  const log: RecordedRequest[] = [];
  const transport = new StreamableHTTPClientTransport(new URL(serverUrl), { fetch: recordingFetch(fetch, log) });
  const client = new Client({ name: 'resumewatch-lab-sdk-error-resume', version: '0.1.0' });
  const sdkErrors: string[] = [];
  client.onerror = (error) => {
    if (sdkErrors.length < 50) sdkErrors.push(error.message);
  };
  await client.connect(transport);
  let errorMessage: string | undefined;
  try {
    await client.callTool({ name: 'fail', arguments: {} });
  } catch (error) {
    errorMessage = error instanceof Error ? error.message : String(error);
  }
  const failPost = log.find((entry) => entry.rpc === 'tools/call fail');
  const errorEventId = failPost?.errorResponses.find((response) => response.rpcId === failPost.rpcId)?.eventId;
  const after = (): RecordedRequest[] => (failPost ? log.slice(failPost.seq + 1) : []);

  const deadline = Date.now() + WAIT_FOR_RESUME_MS;
  while (Date.now() < deadline && !after().some((entry) => entry.method === 'GET' && entry.lastEventId !== undefined))
    await sleep(25);
  // Then let the SDK finish what it does next, until it has been quiet for a while.
  const settleEnd = Date.now() + SETTLE_CAP_MS;
  let seen = log.length;
  let quietSince = Date.now();
  while (Date.now() < settleEnd && Date.now() - quietSince < QUIET_MS) {
    await sleep(50);
    if (log.length !== seen) {
      seen = log.length;
      quietSince = Date.now();
    }
  }
  const sessionId = transport.sessionId;
  await transport.terminateSession().catch(() => undefined);
  await client.close();

  const followUps = after().filter((entry) => entry.method === 'GET');
  const resumes = followUps.filter((entry) => entry.lastEventId !== undefined);
  const deliveries = log.flatMap((entry) =>
    entry.errorResponses
      .filter((response) => failPost !== undefined && response.rpcId === failPost.rpcId)
      .map(() => entry.seq),
  );
  const resumedWithErrorId = errorEventId !== undefined && resumes.some((entry) => entry.lastEventId === errorEventId);
  return {
    scenario: 'sdk-error-resume',
    sessionId,
    terminalDeliveries: deliveries.length,
    distinctTerminalStreams: new Set(deliveries).size,
    reconnects: followUps.length,
    resumeStatuses: resumes.map((entry) => entry.status ?? 0),
    finding: resumedWithErrorId
      ? `After the JSON-RPC error response the unmodified SDK client sent GET with Last-Event-ID = the error event's id (${errorEventId}), then ${followUps.length - resumes.length} plain GET(s): ` +
        followUps.map((entry) => `${entry.lastEventId ? 'resume' : 'GET'} ${entry.status ?? '?'}`).join(', ') +
        '.'
      : `The SDK client did not resume with the error event's id; follow-up GETs: ${followUps.length}.`,
    durationMs: Date.now() - started,
    details: {
      errorMessage,
      errorEventId,
      resumedWithErrorEventId: resumedWithErrorId,
      requestsAfterError: after().map((entry) => ({
        method: entry.method,
        rpc: entry.rpc,
        lastEventId: entry.lastEventId,
        status: entry.status,
        events: entry.eventIds.length,
      })),
      sdkErrors,
    },
  };
}
