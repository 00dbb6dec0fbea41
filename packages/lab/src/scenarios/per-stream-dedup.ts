import { randomUUID } from 'node:crypto';
import { McpHttpSession, isResponseTo } from '../mcp-http-client.js';
import type { ScenarioOptions } from './options.js';
import { resolveOptions } from './options.js';
import { runSeedClient, seedLoopCounts } from './seed-client.js';
import type { TerminalDelivery } from './seed-client.js';
import type { ScenarioSummary } from './summary.js';

/** Dedups per stream: its table starts empty on every new stream, so a replayed result looks new. */
class PerStreamConsumer {
  private readonly seen = new Map<number, Set<string>>();

  isNew(delivery: TerminalDelivery): boolean {
    let table = this.seen.get(delivery.streamIndex);
    if (!table) {
      table = new Set();
      this.seen.set(delivery.streamIndex, table);
    }
    const key = delivery.eventId ?? '';
    if (table.has(key)) return false;
    table.add(key);
    return true;
  }
}

/** Dedups per (session, request): a replayed result is recognised. */
class PerRequestConsumer {
  private readonly seen = new Set<string>();

  constructor(private readonly sessionId: string) {}

  isNew(delivery: TerminalDelivery): boolean {
    const id = 'id' in delivery.message ? String(delivery.message.id) : '';
    const key = `${this.sessionId}\n${id}`;
    if (this.seen.has(key)) return false;
    this.seen.add(key);
    return true;
  }
}

/**
 * The seed loop with two consumers of the same deliveries. Each runs a side effect (a `side_effect`
 * charge on the server's ledger) for every result it considers new; the ledger's counts are the truth.
 */
export async function runPerStreamDedup(options: ScenarioOptions): Promise<ScenarioSummary> {
  const started = Date.now();
  const { serverUrl, fetch, maxReconnects } = resolveOptions(options);
  const session = await McpHttpSession.open(serverUrl, fetch, 'per-stream-dedup');
  const run = randomUUID();
  const keys = { perStream: `${run}:per-stream`, perRequest: `${run}:per-request` };
  const charged = { perStream: 0, perRequest: 0 };
  const perStream = new PerStreamConsumer();
  const perRequest = new PerRequestConsumer(session.sessionId);

  async function charge(consumer: keyof typeof keys): Promise<void> {
    const { call, read } = await session.callTool('side_effect', { key: keys[consumer] });
    const response = read.events.find((event) => isResponseTo(event.message, call.id))?.message;
    const count =
      response && 'result' in response
        ? (response.result as { structuredContent?: { count?: number } }).structuredContent?.count
        : undefined;
    if (typeof count !== 'number') throw new Error(`side_effect gave no count (status ${read.status})`);
    charged[consumer] = count;
  }

  const loop = await runSeedClient(session, {
    count: 3,
    delay: 5,
    maxReconnects,
    onTerminal: async (delivery) => {
      if (perStream.isNew(delivery)) await charge('perStream');
      if (perRequest.isNew(delivery)) await charge('perRequest');
    },
  });
  return {
    scenario: 'per-stream-dedup',
    sessionId: session.sessionId,
    ...seedLoopCounts(loop),
    sideEffectCount: charged.perStream,
    finding:
      `One request, ${loop.deliveries.length} deliveries of its result: the per-stream consumer charged ${charged.perStream} time(s), ` +
      `the per-(session, request) consumer ${charged.perRequest} time(s).`,
    durationMs: Date.now() - started,
    details: {
      requestId: loop.call.id,
      sideEffects: charged,
      ledgerKeys: keys,
      stoppedBecause: loop.stoppedBecause,
      resumeErrors: loop.resumeErrors,
    },
  };
}
