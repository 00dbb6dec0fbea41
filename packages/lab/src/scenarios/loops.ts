// The loop scenarios of issue 39, each with its healthy twin, on the real SDK 1.x client and servers:
// a client that keeps calling with a session id the server refused (404 from an SDK 1.x server that
// forgot its sessions, as a restart does; 400 from server-everything), and a client that keeps
// re-opening the GET listening stream of a server that offers none (405) or closes it at once.
import { setTimeout as sleep } from 'node:timers/promises';
import { RecentList } from '@resumewatch/bounded';
import { HEADER_PROTOCOL_VERSION, HEADER_SESSION_ID, headerValue } from '@resumewatch/wire';
import { startEverythingServer } from '../everything-server.js';
import { LOOP_TOOL, startLoopServer } from '../loops/loop-server.js';
import type { LoopServer, LoopServerOptions, LoopServerRequest } from '../loops/loop-server.js';
import type { FetchLike } from '../mcp-http-client.js';
import { resolveOptions } from './options.js';
import type { ResolvedScenarioOptions, ScenarioOptions } from './options.js';
import { waitUntil } from './sdk-clients.js';
import { LOOP_SCENARIO_EXPECTED_FINDINGS } from './summary.js';
import type { LoopScenarioName, ScenarioSummary } from './summary.js';

/** One HTTP request the scenario's client sent (through the front, when there is one) and the status it got. */
export interface LoopClientRequest {
  at: number;
  method: string;
  sessionId: string | undefined;
  status: number | undefined;
}

/** The SDK 1.x client, connected, with everything it sent recorded. */
interface LoopClient {
  client: {
    callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
    close(): Promise<void>;
  };
  transport: { readonly sessionId: string | undefined; readonly protocolVersion: string | undefined };
}

interface Rig {
  /** The URL the client talks to: the front's, or the server's. */
  url: string;
  /** The scenario's own server (undefined against server-everything). */
  server: LoopServer | undefined;
  options: ResolvedScenarioOptions;
  /** Every request any client of the run sent, and what came back (bounded). */
  log: RecentList<LoopClientRequest>;
  fetch: FetchLike;
  connect(reconnection?: ReconnectionOptions): Promise<LoopClient>;
}

interface ReconnectionOptions {
  initialReconnectionDelay: number;
  maxReconnectionDelay: number;
  reconnectionDelayGrowFactor: number;
  maxRetries: number;
}

interface Outcome {
  sessionId?: string;
  /** Tool results the client received. */
  results: number;
  finding: string;
  details: Record<string, unknown>;
}

/** The refused calls of the loops: enough for any threshold the detector takes by default (5), still seconds. */
const LOOP_REQUESTS = 10;

function recordingFetch(inner: FetchLike, log: RecentList<LoopClientRequest>): FetchLike {
  return async (input, init) => {
    const headers = init?.headers ?? (input instanceof Request ? input.headers : undefined);
    const entry: LoopClientRequest = {
      at: Date.now(),
      method: init?.method ?? (input instanceof Request ? input.method : 'GET'),
      sessionId: headerValue(headers as RequestInit['headers'], HEADER_SESSION_ID),
      status: undefined,
    };
    log.push(entry);
    const response = await inner(input, init);
    entry.status = response.status;
    return response;
  };
}

/** Starts the server (own or server-everything) and the front, runs `body`, closes everything. */
async function withRig(
  scenario: LoopScenarioName,
  input: ScenarioOptions,
  server: LoopServerOptions | 'everything',
  body: (rig: Rig) => Promise<Outcome>,
): Promise<ScenarioSummary> {
  const options = resolveOptions(input);
  const started = Date.now();
  const own = server === 'everything' ? undefined : await startLoopServer(server);
  const everything = server === 'everything' ? await startEverythingServer() : undefined;
  const serverUrl = own?.url ?? everything!.url;
  let front: { url: string; close(): Promise<void> } | undefined;
  const clients: LoopClient[] = [];
  try {
    front = options.loops.front ? await options.loops.front(serverUrl) : undefined;
    const url = front?.url ?? serverUrl;
    const log = new RecentList<LoopClientRequest>(5000);
    const fetch = recordingFetch(options.fetch, log);
    const connect = async (reconnection?: ReconnectionOptions): Promise<LoopClient> => {
      const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
        import('@modelcontextprotocol/sdk/client/index.js'),
        import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
      ]);
      const client = new Client({ name: `resumewatch-lab-${scenario}`, version: '0.1.0' });
      // The SDK reports a refused GET through onerror; the scenario reads the wire instead.
      client.onerror = () => undefined;
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        fetch,
        ...(reconnection ? { reconnectionOptions: reconnection } : {}),
      });
      await client.connect(transport);
      const connected = { client, transport };
      clients.push(connected);
      return connected;
    };
    const outcome = await body({ url, server: own, options, log, fetch, connect });
    const requests = log.toArray();
    return {
      scenario,
      sessionId: outcome.sessionId,
      terminalDeliveries: outcome.results,
      distinctTerminalStreams: outcome.results,
      reconnects: Math.max(0, requests.filter((request) => request.method === 'GET').length - 1),
      resumeStatuses: [],
      finding: outcome.finding,
      expectedFindings: [...LOOP_SCENARIO_EXPECTED_FINDINGS[scenario]],
      durationMs: Date.now() - started,
      details: {
        client: 'sdk',
        clientRequests: requests,
        clientStatuses: statusCounts(requests),
        ...(own ? { serverRequests: own.requests(), serverStatuses: statusCounts(own.requests()) } : {}),
        ...outcome.details,
      },
    };
  } finally {
    for (const { client } of clients) await client.close().catch(() => undefined);
    await front?.close();
    await own?.close();
    await everything?.stop();
  }
}

/** Requests per `METHOD status`, e.g. `{ "POST 404": 10, "GET 405": 1 }`. */
function statusCounts(requests: ReadonlyArray<{ method: string; status: number | undefined }>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { method, status } of requests) {
    const key = `${method} ${status ?? '-'}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** Calls the tool; the HTTP status of a refusal is on the wire (the log), the error's message is kept. */
async function call(session: LoopClient, text: string): Promise<{ ok: boolean; text?: string; error?: string }> {
  try {
    const result = (await session.client.callTool({ name: LOOP_TOOL, arguments: { text } })) as {
      content?: Array<{ text?: string }>;
    };
    return { ok: true, text: result.content?.[0]?.text };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message.slice(0, 200) : String(error) };
  }
}

const STATEFUL: LoopServerOptions = { sessions: true, get: '405' };

/**
 * dead-session-loop: the SDK 1.x client calls once; the server forgets its sessions (a restart); the
 * client, which keeps the id it was given (SDK 1.x does not drop it on a 404), calls again and again:
 * each call answered 404, no new initialize between.
 */
export function runDeadSessionLoop(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig('dead-session-loop', input, STATEFUL, async ({ server, connect }) => {
    const session = await connect();
    const first = await call(session, 'before');
    const deadId = session.transport.sessionId;
    await server!.forgetSessions();
    const refused = [];
    for (let i = 0; i < LOOP_REQUESTS; i++) refused.push(await call(session, `after ${i}`));
    return {
      sessionId: deadId,
      results: (first.ok ? 1 : 0) + refused.filter((attempt) => attempt.ok).length,
      finding: `The server forgot session ${deadId}; the client called ${refused.length} more time(s) with it, ${refused.filter((attempt) => !attempt.ok).length} refused, and never initialized anew.`,
      details: { deadSessionId: deadId, firstCall: first, refusedCalls: refused },
    };
  });
}

/** dead-session-reinit: as the loop, but after one 404 the client connects (initializes) anew and its call succeeds. */
export function runDeadSessionReinit(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig('dead-session-reinit', input, STATEFUL, async ({ server, connect }) => {
    const session = await connect();
    const first = await call(session, 'before');
    const deadId = session.transport.sessionId;
    await server!.forgetSessions();
    const refused = await call(session, 'after');
    await session.client.close();
    const renewed = await connect();
    const again = await call(renewed, 'after reinitialize');
    const newId = renewed.transport.sessionId;
    return {
      sessionId: newId,
      results: (first.ok ? 1 : 0) + (again.ok ? 1 : 0),
      finding: `The server forgot session ${deadId}; after one refused call the client initialized session ${newId} and its call came back: ${again.text ?? again.error}.`,
      details: {
        deadSessionId: deadId,
        newSessionId: newId,
        firstCall: first,
        refusedCall: refused,
        callAfterReinit: again,
      },
    };
  });
}

/**
 * dead-session-loop-400: against server-everything, which answers 400 to an unknown session id. The
 * session is ended by a DELETE sent beside the client (as an operator or an idle timeout ends it; the
 * SDK client itself would drop the id after its own DELETE); the client keeps calling with it.
 */
export function runDeadSessionLoop400(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig('dead-session-loop-400', input, 'everything', async ({ url, fetch, connect }) => {
    const session = await connect();
    let first: { ok: boolean; text?: string; error?: string };
    try {
      const result = (await session.client.callTool({ name: 'echo', arguments: { message: 'before' } })) as {
        content?: Array<{ text?: string }>;
      };
      first = { ok: true, text: result.content?.[0]?.text };
    } catch (error) {
      first = { ok: false, error: String(error).slice(0, 200) };
    }
    const deadId = session.transport.sessionId!;
    const deleted = await fetch(url, {
      method: 'DELETE',
      headers: { [HEADER_SESSION_ID]: deadId, [HEADER_PROTOCOL_VERSION]: session.transport.protocolVersion ?? '' },
    });
    await deleted.body?.cancel();
    const refused = [];
    for (let i = 0; i < LOOP_REQUESTS; i++) {
      try {
        await session.client.callTool({ name: 'echo', arguments: { message: `after ${i}` } });
        refused.push({ ok: true });
      } catch (error) {
        refused.push({ ok: false, error: String(error).slice(0, 200) });
      }
    }
    return {
      sessionId: deadId,
      results: (first.ok ? 1 : 0) + refused.filter((attempt) => attempt.ok).length,
      finding: `server-everything ended session ${deadId} (DELETE ${deleted.status}); the client called ${refused.length} more time(s) with it and never initialized anew.`,
      details: { deadSessionId: deadId, deleteStatus: deleted.status, firstCall: first, refusedCalls: refused },
    };
  });
}

const GETS = (log: RecentList<LoopClientRequest>): LoopClientRequest[] =>
  log.toArray().filter((request) => request.method === 'GET');
const SERVER_GETS = (server: LoopServer): LoopServerRequest[] =>
  server.requests().filter((request) => request.method === 'GET' && request.status !== undefined);

/**
 * listening-stream-loop: a stateless SDK 1.x server, which offers no listening stream (GET answered
 * 405, as the SDK's stateless example does). The SDK 1.x client takes its 405 and stops; then the
 * client opens the GET again and again, at once, as the field's clients do (a raw loop).
 */
export function runListeningStreamLoop(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig('listening-stream-loop', input, { sessions: false, get: '405' }, async (rig) => {
    const session = await rig.connect();
    await waitUntil(() => GETS(rig.log).some((request) => request.status !== undefined), 5_000);
    const statuses: number[] = [];
    for (let i = 0; i < LOOP_REQUESTS; i++) {
      const response = await rig.fetch(rig.url, {
        method: 'GET',
        headers: {
          accept: 'text/event-stream',
          [HEADER_PROTOCOL_VERSION]: session.transport.protocolVersion ?? '',
        },
      });
      await response.body?.cancel();
      statuses.push(response.status);
    }
    const gets = GETS(rig.log).length;
    return {
      results: 0,
      finding: `The server offers no listening stream; the client opened it ${gets} time(s): ${statuses.filter((status) => status === 405).length + 1} answered 405.`,
      details: { loopStatuses: statuses, getsSent: gets },
    };
  });
}

/** Runs the SDK 1.x client until the server has received `count` GETs (bounded), then stops it. */
async function reconnectingClient(rig: Rig, count: number, reconnection?: ReconnectionOptions): Promise<Outcome> {
  const session = await rig.connect(reconnection);
  const reached = await waitUntil(() => SERVER_GETS(rig.server!).length >= count, 10_000);
  await session.client.close();
  const gets = SERVER_GETS(rig.server!);
  return {
    results: 0,
    finding: '',
    details: {
      reached,
      getsReceived: gets.length,
      /** The gaps between consecutive GETs as the server received them, ms. */
      gapsMs: gets.slice(1).map((request, i) => request.at - gets[i]!.at),
    },
  };
}

/**
 * listening-stream-loop-closed: the server answers each GET 200 and closes the event stream at once,
 * with no event; the SDK 1.x client re-opens it each time (its retry count starts over after a clean
 * close). Its reconnection delay is set short (20 ms), as a client that re-opens at once.
 */
export async function runListeningStreamLoopClosed(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig('listening-stream-loop-closed', input, { sessions: false, get: 'close' }, async (rig) => {
    const outcome = await reconnectingClient(rig, LOOP_REQUESTS, {
      initialReconnectionDelay: 20,
      maxReconnectionDelay: 20,
      reconnectionDelayGrowFactor: 1,
      maxRetries: 2,
    });
    return {
      ...outcome,
      finding: `The server closed each listening stream at once with no event; the SDK 1.x client re-opened it: ${String(outcome.details.getsReceived)} GETs.`,
    };
  });
}

/**
 * listening-stream-retry-pace: the server writes one priming event with `retry: <ms>` (200 by default)
 * and closes; the SDK 1.x client (default reconnection options) waits that long before each re-open.
 */
export function runListeningStreamRetryPace(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig('listening-stream-retry-pace', input, { sessions: false, get: 'retry' }, async (rig) => {
    // As many re-opens as the loop makes: more than the detector's threshold, so only the pace tells them apart.
    const outcome = await reconnectingClient(rig, LOOP_REQUESTS);
    return {
      ...outcome,
      finding: `The server announced retry: ${rig.server!.retryMs} ms and closed each listening stream; the client re-opened it at that pace: ${String(outcome.details.getsReceived)} GETs.`,
      details: { ...outcome.details, retryMs: rig.server!.retryMs },
    };
  });
}

/** listening-stream-stops: the SDK 1.x client takes one 405 to its GET and opens none again; its call succeeds. */
export function runListeningStreamStops(input: ScenarioOptions): Promise<ScenarioSummary> {
  return withRig('listening-stream-stops', input, { sessions: false, get: '405' }, async (rig) => {
    const session = await rig.connect();
    await waitUntil(() => SERVER_GETS(rig.server!).length >= 1, 5_000);
    const answer = await call(session, 'still here');
    // Long enough for any re-open the client had scheduled (its default delay is 1 s; it schedules none).
    await sleep(1_200);
    const gets = SERVER_GETS(rig.server!).length;
    return {
      results: answer.ok ? 1 : 0,
      finding: `The server answered the listening stream 405; the client opened it ${gets} time(s) and its call came back: ${answer.text ?? answer.error}.`,
      details: { getsReceived: gets, call: answer },
    };
  });
}
