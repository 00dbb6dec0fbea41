import { startFaultProxy } from '../fault-proxy.js';
import { startModernLabServer } from '../modern/server.js';
import type { ModernLabServer } from '../modern/server.js';
import { resolveOptions } from './options.js';
import type { ResolvedScenarioOptions, ScenarioOptions } from './options.js';
import { exchangeLines, protocolVersionsIn, settled } from './modern-facts.js';
import { connectSdkSession, resumesIn } from './sdk-clients.js';
import type { SdkClientKind, SdkSessionOptions } from './sdk-clients.js';
import type { ScenarioSummary } from './summary.js';

/** The call's request timeout: a client whose resume is answered 405 waits this long. */
const CALL_TIMEOUT_MS = 1500;

interface SessionClient {
  /** `sdk`: SDK 1.x; `sdk-v2 legacy`: the v2 client in the session era (its default negotiation). */
  label: string;
  kind: SdkClientKind;
  negotiation?: SdkSessionOptions['negotiation'];
}

const CLIENTS: SessionClient[] = [
  { label: 'sdk', kind: 'sdk' },
  { label: 'sdk-v2 legacy', kind: 'sdk-v2', negotiation: 'legacy' },
];

/**
 * One session-era client mid-call when its server is upgraded to 2026-07-28 only: the call's stream
 * is cut after its priming event and first progress update; before the client's resume leaves, the
 * server goes `modern-only` (its sessions dropped); the resume (GET with Last-Event-ID) is answered
 * 405. Then the application reconnects the same way, and the v2 client once more with `auto`.
 */
async function sessionClientAgainstUpgrade(
  client: SessionClient,
  server: ModernLabServer,
  options: ResolvedScenarioOptions,
) {
  await server.setEras('dual');
  const proxy = await startFaultProxy({ target: server.url });
  try {
    const session = await connectSdkSession(client.kind, proxy.url, options.fetch, `session-client-modern-server`, {
      ...(client.negotiation ? { negotiation: client.negotiation } : {}),
      // The deploy happens between the cut and the resume.
      beforeResume: () => server.setEras('modern-only'),
    });
    const key = `session-client-modern-server-${client.label}-${Date.now()}`;
    proxy.armCut({ method: 'POST', afterEvents: 2 });
    const outcome = await settled(
      session.callTool('charge', { key, workMs: 300 }, { timeout: CALL_TIMEOUT_MS, onprogress: () => undefined }),
    );
    const sessionEraVersion = session.protocolVersion();
    await session.close();
    // The application tries again the way it connected.
    const reconnect = await settled(
      connectSdkSession(client.kind, server.url, options.fetch, 'session-client-modern-server-again', {
        ...(client.negotiation ? { negotiation: client.negotiation } : {}),
      }).then((again) => again.close()),
    );
    return {
      client: client.label,
      protocolVersion: sessionEraVersion,
      resumeStatuses: resumesIn(session.log).map((entry) => entry.status),
      callOutcome: outcome,
      reconnect,
      sideEffects: server.sideEffectCount(key),
      protocolVersions: protocolVersionsIn(session.log),
      exchanges: exchangeLines(session.log),
      sdkErrors: session.errors,
    };
  } finally {
    await proxy.close();
  }
}

/**
 * session-client-modern-server: what session-era clients do against a server that speaks only
 * 2026-07-28. Each of SDK 1.x and the v2 client in the session era: its resume is answered 405, which
 * both SDKs take as "no stream here" and the call waits for its timeout; reconnecting the same way,
 * its initialize is refused (400, unsupported protocol version). The v2 client with `auto`
 * negotiation then connects in 2026-07-28.
 */
export async function runSessionClientModernServer(input: ScenarioOptions): Promise<ScenarioSummary> {
  const options = resolveOptions(input);
  const started = Date.now();
  const server = await startModernLabServer({ eras: 'dual', ...options.modernServer });
  try {
    const runs = [];
    for (const client of CLIENTS) runs.push(await sessionClientAgainstUpgrade(client, server, options));
    await server.setEras('modern-only');
    const modern = await connectSdkSession('sdk-v2', server.url, options.fetch, 'session-client-modern-server-auto', {
      negotiation: 'auto',
    });
    const modernOutcome = await settled(
      modern.callTool('charge', { key: `session-client-modern-server-auto-${started}`, workMs: 0 }),
    );
    const v2Auto = { client: 'sdk-v2 auto', protocolVersion: modern.protocolVersion(), callOutcome: modernOutcome };
    await modern.close();
    const resumeStatuses = runs.flatMap((run) =>
      run.resumeStatuses.flatMap((status) => (status === undefined ? [] : [status])),
    );
    return {
      scenario: 'session-client-modern-server',
      sessionId: undefined,
      terminalDeliveries: 0,
      distinctTerminalStreams: 0,
      reconnects: resumeStatuses.length,
      resumeStatuses,
      sideEffectCount: runs.reduce((n, run) => n + run.sideEffects, 0),
      finding: runs
        .map(
          (run) =>
            `${run.client}: resume ${run.resumeStatuses.join(', ') || '-'}, call ${run.callOutcome}, reconnect ${run.reconnect}`,
        )
        .concat(`sdk-v2 auto: ${v2Auto.protocolVersion ?? '-'}, call ${v2Auto.callOutcome}`)
        .join('; '),
      durationMs: Date.now() - started,
      details: {
        sessionClients: runs,
        v2Auto,
        serverExchanges: server.exchanges().map((e) => `${e.leg} ${e.method} ${e.protocolVersion ?? '-'} ${e.status}`),
      },
    };
  } finally {
    await server.close();
  }
}
