// More than one gateway: a real haproxy runs the shipped deploy/gateway/haproxy.cfg (server addresses and
// ports substituted, the balance rules as shipped) in front of two in-process gateway replicas, both in
// front of one MCP server, the replicas trusting haproxy's X-Forwarded-For (--trusted-proxies). Session
// era: seed-loop sessions through haproxy; every request that carries a session reaches one replica
// (haproxy's own log says which), the replica that owns a session reports its seed signature and the other
// reports nothing of it; with --enforce, each session's result arrives once and its resume is refused by
// its own replica. Requests without a session go by the client's address and Mcp-Name. 2026-07-28: a call
// whose stream broke and its re-issue (the real v2 SDK client and server, the lab's fault proxy cutting the
// call) meet on one replica, which reports exactly one finding; a replica restarted between the two
// forgets the first attempt, as the gateway README says.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, type RunningGateway } from '@resumewatch/gateway';
import {
  LAB_PROTOCOL_VERSION,
  connectSdkSession,
  runScenario,
  startFaultProxy,
  startLabServer,
  startModernLabServer,
  type FaultProxy,
  type LabServer,
  type ModernLabServer,
  type ScenarioSummary,
} from '@resumewatch/lab';
import { FindingKind, GuardAction, STATELESS_PROTOCOL_VERSION } from '@resumewatch/semconv';
import { MODERN_EXPECTED } from '../packages/detector/test/helpers/modern-expected.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HAPROXY_CONFIG,
  renderHaproxyConfig,
  startHaproxy,
  type HaproxyExchange,
  type RunningHaproxy,
} from './helpers/haproxy.js';
import { repoRoot } from './helpers/promql.js';
import { requireTools } from './helpers/required-tools.js';
import { freePort, waitFor } from './helpers/wait.js';

/** The shipped file's server names, in order. */
const REPLICAS = ['gateway-1', 'gateway-2'] as const;
/** Tool names of session-less calls: enough that the hash puts some on each replica. */
const NAMES = ['search', 'fetch', 'charge', 'refund', 'summarize', 'translate', 'lookup', 'notify'];
/** Where the replicas see haproxy's connections come from. */
const HAPROXY_ADDRESS = '127.0.0.1';
/** Short storm windows, so that the seed signature is reported within the test's waits. */
const STORM_WINDOW_MS = 2_000;
/** Seed-loop sessions per batch; batches run until each replica owns a session (at most MAX_BATCHES). */
const BATCH = 6;
const MAX_BATCHES = 4;

/** One session of a lab scenario run through haproxy. */
interface SessionRun {
  id: string;
  summary: ScenarioSummary;
}

interface Rig {
  lab: LabServer;
  replicas: Map<string, RunningGateway>;
  haproxy: RunningHaproxy;
  /** The MCP endpoint through haproxy. */
  mcpUrl: string;
}

async function startRig(enforce: boolean): Promise<Rig> {
  requireTools('haproxy');
  const lab = await startLabServer({ retryIntervalMs: 50 });
  const replicas = new Map<string, RunningGateway>();
  try {
    for (const name of REPLICAS) {
      replicas.set(
        name,
        await startGateway({
          upstream: lab.url,
          host: '127.0.0.1',
          port: 0,
          enforce,
          // As deploy/README.md runs them: haproxy's X-Forwarded-For names the client.
          trustedProxies: [HAPROXY_ADDRESS],
          detector: { config: { metricsPort: 0, stormWindowMs: STORM_WINDOW_MS }, output: null },
        }),
      );
    }
    const haproxy = await startHaproxy(
      await freePort(),
      REPLICAS.map((name) => ({
        name,
        port: replicas.get(name)!.port,
        checkPort: replicas.get(name)!.detector!.metricsPort,
      })),
    );
    return { lab, replicas, haproxy, mcpUrl: new URL(new URL(lab.url).pathname, haproxy.url).href };
  } catch (e) {
    await Promise.allSettled([...replicas.values()].map((g) => g.close()));
    await lab.close();
    throw e;
  }
}

async function stopRig(rig: Rig | undefined): Promise<void> {
  if (!rig) return;
  await rig.haproxy.close();
  await Promise.allSettled([...rig.replicas.values()].map((g) => g.close()));
  await rig.lab.close();
}

/**
 * The replica each session's requests went to, from haproxy's log: a session whose requests reached
 * two replicas fails here, naming them.
 */
function owners(exchanges: HaproxyExchange[]): Map<string, string> {
  const bySession = new Map<string, Set<string>>();
  for (const e of exchanges) {
    if (e.session === undefined) continue;
    const servers = bySession.get(e.session) ?? new Set<string>();
    servers.add(e.server);
    bySession.set(e.session, servers);
  }
  const out = new Map<string, string>();
  for (const [session, servers] of bySession) {
    expect([...servers], `the requests of session ${session}`).toHaveLength(1);
    out.set(session, [...servers][0]!);
  }
  return out;
}

/**
 * Seed-loop sessions through haproxy, in concurrent batches, until each replica owns at least one
 * session (the hash decides; MAX_BATCHES batches make a miss a 2^-23 chance). Resolves once haproxy has
 * logged every exchange of every session, resume GETs included.
 */
async function runSessions(rig: Rig, scenario: 'seed-loop' | 'sdk-error-resume' = 'seed-loop'): Promise<SessionRun[]> {
  const sessions: SessionRun[] = [];
  for (let batch = 0; batch < MAX_BATCHES; batch++) {
    const summaries = await Promise.all(
      Array.from({ length: BATCH }, () =>
        runScenario(scenario, { serverUrl: rig.mcpUrl, controlUrl: rig.lab.controlUrl, fetch: globalThis.fetch }),
      ),
    );
    for (const summary of summaries) {
      expect(summary.sessionId, summary.finding).toBeDefined();
      sessions.push({ id: summary.sessionId!, summary });
    }
    // Each resume (a GET with Last-Event-ID) is logged when its stream ends.
    await waitFor(
      () =>
        sessions.every(
          (s) =>
            rig.haproxy.exchanges().filter((e) => e.session === s.id && e.lastEventId !== undefined).length ===
            s.summary.resumeStatuses.length,
        ),
      "haproxy's log of every resume",
      10_000,
    );
    const owned = new Set(owners(rig.haproxy.exchanges()).values());
    if (REPLICAS.every((r) => owned.has(r))) break;
  }
  return sessions;
}

const findingsOf = (gateway: RunningGateway, session: string) =>
  gateway.detector!.findings().filter((f) => f.session_id === session);

describe('two gateway replicas behind haproxy (deploy/gateway/haproxy.cfg), sessions balanced on Mcp-Session-Id', () => {
  it('runs the shipped file with only the bind and server addresses changed', () => {
    const shipped = readFileSync(join(repoRoot, HAPROXY_CONFIG), 'utf8');
    const rendered = renderHaproxyConfig(
      shipped,
      1,
      REPLICAS.map((name, i) => ({ name, port: 2 + i, checkPort: 4 + i })),
    );
    const rest = (text: string) =>
      text
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => !/^(bind|server)\s/.test(line));
    expect(rest(rendered)).toEqual(rest(shipped));
    expect(rest(shipped)).toEqual(
      expect.arrayContaining([
        'http-request set-header X-Forwarded-For %[src]',
        'balance hash var(txn.route)',
        'hash-type consistent',
      ]),
    );
    expect(rendered).toMatch(/^\s*server gateway-2 127\.0\.0\.1:3 check port 5$/m);
  });

  describe('observing', () => {
    let rig: Rig | undefined;
    let sessions: SessionRun[] = [];
    beforeAll(async () => {
      rig = await startRig(false);
      sessions = await runSessions(rig);
    }, 60_000);
    afterAll(() => stopRig(rig));

    it('puts every request of a session on one replica, and each replica owns sessions', () => {
      const exchanges = rig!.haproxy.exchanges();
      const owner = owners(exchanges);
      for (const s of sessions) {
        expect(owner.get(s.id), `session ${s.id} went through haproxy`).toBeDefined();
        // Every exchange after the initialize carries the session: notifications/initialized, the
        // tools/call and its stream, the resumes with the stale cursor.
        const mine = exchanges.filter((e) => e.session === s.id);
        expect(mine.filter((e) => e.lastEventId !== undefined).length).toBe(s.summary.resumeStatuses.length);
        expect(mine.filter((e) => e.method === 'POST').length).toBeGreaterThanOrEqual(2);
      }
      expect(new Set(owner.values())).toEqual(new Set(REPLICAS));
    });

    it(
      'the seed loop ran, and the replica that owns each session reports its signature; the other reports nothing of it',
      { timeout: 30_000 },
      async () => {
        const owner = owners(rig!.haproxy.exchanges());
        for (const s of sessions) expect(s.summary.terminalDeliveries, s.summary.finding).toBeGreaterThan(1);
        await waitFor(
          () =>
            sessions.every((s) =>
              findingsOf(rig!.replicas.get(owner.get(s.id)!)!, s.id).some((f) => f.kind === FindingKind.SIGNATURE),
            ),
          'the seed signature of every session on its own replica',
          20_000,
        );
        for (const s of sessions) {
          const own = owner.get(s.id)!;
          const kinds = new Set(findingsOf(rig!.replicas.get(own)!, s.id).map((f) => f.kind));
          expect(kinds).toContain(FindingKind.DUPLICATE_TERMINAL);
          expect(kinds).toContain(FindingKind.RESUME_AFTER_TERMINAL);
          for (const other of REPLICAS.filter((r) => r !== own))
            expect(findingsOf(rig!.replicas.get(other)!, s.id), `${other} on ${s.id}`).toEqual([]);
        }
      },
    );

    it(
      "routes requests without a session by the client's address and Mcp-Name: one client's calls of one name meet, names spread",
      { timeout: 30_000 },
      async () => {
        const before = rig!.haproxy.exchanges().length;
        const exchangesBefore = new Map(REPLICAS.map((r) => [r, rig!.replicas.get(r)!.stats().exchanges]));
        const post = async (body: unknown, headers: Record<string, string> = {}) => {
          const res = await fetch(rig!.mcpUrl, {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
            body: JSON.stringify(body),
          });
          await res.arrayBuffer();
        };
        const initialize = (id: number) => ({
          jsonrpc: '2.0',
          id,
          method: 'initialize',
          params: {
            protocolVersion: LAB_PROTOCOL_VERSION,
            capabilities: {},
            clientInfo: { name: 'load-balancer-test', version: '0' },
          },
        });
        // An initialize names no session and no tool: the client's address alone is its key.
        for (let id = 1; id <= 4; id++) await post(initialize(id));
        // 2026-07-28 calls name no session, and name their tool in Mcp-Name (the lab server, on 2025-11-25,
        // refuses them: what matters here is where haproxy sends them). Each name twice, the second time
        // with another X-Forwarded-For of the client's own making: haproxy replaces it, the key is unmoved.
        let id = 0;
        for (const name of NAMES)
          for (const forged of ['', '198.51.100.7'])
            await post(
              { jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name, arguments: {} } },
              {
                'mcp-protocol-version': STATELESS_PROTOCOL_VERSION,
                'mcp-name': name,
                ...(forged ? { 'x-forwarded-for': forged } : {}),
              },
            );
        const mine = await waitFor(() => {
          const lines = rig!.haproxy.exchanges().slice(before);
          return lines.length >= 4 + 2 * NAMES.length && lines;
        }, 'haproxy to log the session-less requests');
        expect(mine.every((e) => e.session === undefined && e.method === 'POST')).toBe(true);
        const servers = (from: HaproxyExchange[]) => new Set(from.map((e) => e.server));
        expect(servers(mine.filter((e) => e.name === undefined)).size, 'the initializes').toBe(1);
        for (const name of NAMES) expect(servers(mine.filter((e) => e.name === name)).size, name).toBe(1);
        expect(servers(mine.filter((e) => e.name !== undefined))).toEqual(new Set(REPLICAS));
        // And each replica saw some of them.
        for (const r of REPLICAS)
          expect(rig!.replicas.get(r)!.stats().exchanges).toBeGreaterThan(exchangesBefore.get(r)!);
      },
    );
  });

  describe('enforcing', () => {
    let rig: Rig | undefined;
    let sessions: SessionRun[] = [];
    beforeAll(async () => {
      rig = await startRig(true);
      // Behind a proxy the gateway acts on a client's cursor only (haproxy marks each request with
      // X-Forwarded-For): the SDK 1.x client's resume from its error event names that event, which is proof.
      sessions = await runSessions(rig, 'sdk-error-resume');
    }, 60_000);
    afterAll(() => stopRig(rig));

    it('delivers each session its result once: its own replica refuses the resume (405)', async () => {
      const exchanges = rig!.haproxy.exchanges();
      const owner = owners(exchanges);
      expect(new Set(owner.values())).toEqual(new Set(REPLICAS));
      for (const s of sessions) {
        expect(s.summary.terminalDeliveries, s.summary.finding).toBe(1);
        expect(s.summary.resumeStatuses, s.summary.finding).toEqual([405]);
        const resumes = exchanges.filter((e) => e.session === s.id && e.lastEventId !== undefined);
        expect(resumes.map((e) => [e.method, e.status, e.server])).toEqual([['GET', 405, owner.get(s.id)]]);
      }
      // Each replica refused the resumes of the sessions it owns, and only those.
      for (const r of REPLICAS) {
        const owned = sessions.filter((s) => owner.get(s.id) === r).length;
        expect(rig!.replicas.get(r)!.counts().actions[GuardAction.RESUME_REFUSED] ?? 0, r).toBe(owned);
      }
    });

    it('no replica reports a duplicate or a resume after the terminal: the loop never started', async () => {
      await Promise.all([...rig!.replicas.values()].map((g) => g.flush()));
      for (const s of sessions)
        for (const g of rig!.replicas.values()) {
          const kinds = findingsOf(g, s.id).map((f) => f.kind);
          expect(kinds).not.toContain(FindingKind.DUPLICATE_TERMINAL);
          expect(kinds).not.toContain(FindingKind.SIGNATURE);
        }
    });
  });
});

/** The v2 lab server (2026-07-28 only), the fault proxy in front of it, two replicas and haproxy. */
interface ModernRig {
  server: ModernLabServer;
  proxy: FaultProxy;
  replicas: Map<string, RunningGateway>;
  haproxy: RunningHaproxy;
  mcpUrl: string;
}

/** Short enough that a re-issue whose first attempt's fate is unknown is reported within the test. */
const REISSUE_SETTLE_MS = 500;

/** A replica in front of the fault proxy; `at`: the ports of a replica it replaces (a restart). */
function startModernReplica(upstream: string, at?: RunningGateway): Promise<RunningGateway> {
  return startGateway({
    upstream,
    host: '127.0.0.1',
    port: at?.port ?? 0,
    trustedProxies: [HAPROXY_ADDRESS],
    detector: {
      config: { metricsPort: at?.detector!.metricsPort ?? 0, reissueSettleMs: REISSUE_SETTLE_MS },
      output: null,
    },
  });
}

async function startModernRig(): Promise<ModernRig> {
  requireTools('haproxy');
  const server = await startModernLabServer({ eras: 'modern-only' });
  const proxy = await startFaultProxy({ target: server.url });
  const replicas = new Map<string, RunningGateway>();
  try {
    for (const name of REPLICAS) replicas.set(name, await startModernReplica(proxy.url));
    const haproxy = await startHaproxy(
      await freePort(),
      REPLICAS.map((name) => ({
        name,
        port: replicas.get(name)!.port,
        checkPort: replicas.get(name)!.detector!.metricsPort,
      })),
    );
    return { server, proxy, replicas, haproxy, mcpUrl: new URL(new URL(proxy.url).pathname, haproxy.url).href };
  } catch (e) {
    await Promise.allSettled([...replicas.values()].map((g) => g.close()));
    await proxy.close();
    await server.close();
    throw e;
  }
}

async function stopModernRig(rig: ModernRig | undefined): Promise<void> {
  if (!rig) return;
  await rig.haproxy.close();
  await Promise.allSettled([...rig.replicas.values()].map((g) => g.close()));
  await rig.proxy.close();
  await rig.server.close();
}

/** A fetch that sends every request with this X-Forwarded-For: a client naming another address. */
const forging =
  (address: string): typeof fetch =>
  (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('x-forwarded-for', address);
    return fetch(input, { ...init, headers });
  };

/** The replica haproxy sent the `tools/call` POSTs of `tool` to, in the order they ended. */
const callsOf = (rig: ModernRig, tool: string): string[] =>
  rig.haproxy
    .exchanges()
    .filter((e) => e.method === 'POST' && e.name === tool)
    .map((e) => e.server);

/** Every re-issue finding of the replicas (and of `retired` ones, stopped since) that ended at or after `since`. */
const reissueFindings = (rig: ModernRig, since = 0, retired: RunningGateway[] = []) =>
  [
    ...REPLICAS.map((r) => ({ replica: r, gateway: rig.replicas.get(r)! })),
    ...retired.map((g) => ({ replica: 'retired', gateway: g })),
  ].flatMap(({ replica, gateway }) =>
    gateway
      .detector!.findings()
      .filter(
        (f) =>
          (f.kind === FindingKind.POSSIBLE_DUPLICATE_EXECUTION || f.kind === FindingKind.DUPLICATE_EXECUTION) &&
          f.last_time_unix_ms >= since,
      )
      .map((f) => ({ replica, finding: f })),
  );

/**
 * modern-broken-reissue through haproxy: the v2 client calls `tool`, the fault proxy cuts the call's
 * stream after its first event, `tool` runs on, the application re-issues the call. The first attempt
 * and the re-issue each forge another X-Forwarded-For. `between` runs after the break (the first
 * attempt's exchange logged by haproxy, its work done on the server) and before the re-issue.
 */
async function brokenCallAndReissue(
  rig: ModernRig,
  tool: 'charge' | 'charge_once',
  between?: (replica: string) => Promise<void>,
): Promise<{ key: string; replica: string }> {
  const args = { key: `fleet-${tool}-${Date.now()}`, workMs: 300 };
  const session = async (address: string) =>
    connectSdkSession('sdk-v2', rig.mcpUrl, forging(address), `fleet-${tool}`, { negotiation: 'auto' });
  const logged = callsOf(rig, tool).length;
  const first = await session('198.51.100.1');
  rig.proxy.armCut({ method: 'POST', afterEvents: 1 });
  await first.callTool(tool, args, { timeout: 2_000, onprogress: () => undefined }).catch(() => undefined);
  await first.close();
  const replica = await waitFor(() => callsOf(rig, tool)[logged], `haproxy's log of the broken ${tool} call`);
  await waitFor(
    () => rig.server.executions().some((e) => e.key === args.key),
    'the first attempt to finish on the server',
  );
  await between?.(replica);
  const again = await session('203.0.113.9');
  await again.callTool(tool, args, { onprogress: () => undefined });
  await again.close();
  expect(rig.server.sideEffectCount(args.key), 'the side effect ran twice').toBe(2);
  // haproxy logs an exchange when it ends, a moment after the client has read it.
  await waitFor(() => callsOf(rig, tool).length >= logged + 2, `haproxy's log of the re-issued ${tool} call`);
  return { key: args.key, replica };
}

describe('2026-07-28 behind haproxy: a broken call and its re-issue meet on one replica', () => {
  let rig: ModernRig | undefined;
  beforeAll(async () => {
    rig = await startModernRig();
  }, 30_000);
  afterAll(() => stopModernRig(rig));

  it(
    'each pair reaches one replica, which reports exactly one finding of it, the one the README table says; the other none',
    { timeout: 60_000 },
    async () => {
      const pairs = [];
      for (const tool of ['charge', 'charge_once'] as const)
        pairs.push({ tool, ...(await brokenCallAndReissue(rig!, tool)) });
      for (const { tool, replica } of pairs) expect(callsOf(rig!, tool), tool).toEqual([replica, replica]);
      // The hash of (address, name) put the two tools on different replicas: each replica caught its own pair.
      expect(new Set(pairs.map((p) => p.replica))).toEqual(new Set(REPLICAS));
      // Past the re-issue's settle time, each replica has said all it will say of its pairs.
      const found = await waitFor(() => {
        const all = reissueFindings(rig!);
        return all.length >= pairs.length && all;
      }, 'a finding of each pair');
      for (const g of rig!.replicas.values()) {
        await g.flush();
        g.detector!.detector.advance(Date.now() + REISSUE_SETTLE_MS + 1);
      }
      expect(reissueFindings(rig!)).toEqual(found);
      expect(found.map((f) => f.finding.kind)).toEqual(
        pairs.map(() => MODERN_EXPECTED['modern-broken-reissue'].gateway![0]),
      );
      expect(found.map((f) => f.replica).sort()).toEqual(pairs.map((p) => p.replica).sort());
      // Two first attempts, two re-issues, each re-issue tied to its own first attempt.
      expect(new Set(found.map((f) => f.finding.first_trace_id)).size).toBe(2);
    },
  );

  it(
    'the replica holding the first attempt restarts before the re-issue: nothing is reported of the pair, as the gateway README says',
    { timeout: 60_000 },
    async () => {
      const since = Date.now();
      const retired: RunningGateway[] = [];
      const { replica } = await brokenCallAndReissue(rig!, 'charge', async (holder) => {
        // Stopped and started again on the same ports, within haproxy's health check: no other replica takes its keys.
        const old = rig!.replicas.get(holder)!;
        await old.close();
        retired.push(old);
        rig!.replicas.set(holder, await startModernReplica(rig!.proxy.url, old));
      });
      // The re-issue reached the restarted replica, which never saw the first attempt.
      expect(callsOf(rig!, 'charge').slice(-2)).toEqual([replica, replica]);
      const restarted = rig!.replicas.get(replica)!;
      await waitFor(() => restarted.stats().exchanges >= 1, 'the re-issue on the restarted replica');
      for (const g of rig!.replicas.values()) {
        await g.flush();
        g.detector!.detector.advance(Date.now() + REISSUE_SETTLE_MS + 1);
      }
      expect(reissueFindings(rig!, since, retired)).toEqual([]);
    },
  );
});
