// More than one gateway: a real haproxy runs the shipped deploy/gateway/haproxy.cfg (server addresses and
// ports substituted, the balance rules as shipped) in front of two in-process gateway replicas, both in
// front of one lab server. Seed-loop sessions through haproxy: every request that carries a session
// reaches one replica (haproxy's own log says which), the replica that owns a session reports its seed
// signature and the other reports nothing of it; with --enforce, each session's result arrives once and
// its resume is refused by its own replica. Requests without a session (initialize, 2026-07-28-style
// requests) spread over both replicas.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, type RunningGateway } from '@resumewatch/gateway';
import {
  LAB_PROTOCOL_VERSION,
  runScenario,
  startLabServer,
  type LabServer,
  type ScenarioSummary,
} from '@resumewatch/lab';
import { FindingKind, GuardAction } from '@resumewatch/semconv';
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

describe('two gateway replicas behind haproxy (deploy/gateway/haproxy.cfg), balanced on Mcp-Session-Id', () => {
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
    expect(rest(shipped)).toEqual(expect.arrayContaining(['balance hdr(Mcp-Session-Id)', 'hash-type consistent']));
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

    it('spreads requests without a session over both replicas', { timeout: 30_000 }, async () => {
      const before = rig!.haproxy.exchanges().length;
      const exchangesBefore = new Map(REPLICAS.map((r) => [r, rig!.replicas.get(r)!.stats().exchanges]));
      const post = async (body: unknown, protocolVersion?: string) => {
        const res = await fetch(rig!.mcpUrl, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...(protocolVersion ? { 'mcp-protocol-version': protocolVersion } : {}),
          },
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
      // One after another: haproxy's round robin fallback alternates between the replicas.
      for (let id = 1; id <= 8; id++) await post(initialize(id));
      // A 2026-07-28 request names no session at all (the lab server, on 2025-11-25, refuses it: what
      // matters here is where haproxy sends it).
      for (let id = 1; id <= 8; id++) await post({ jsonrpc: '2.0', id, method: 'tools/list' }, '2026-07-28');
      const mine = await waitFor(() => {
        const lines = rig!.haproxy.exchanges().slice(before);
        return lines.length >= 16 && lines;
      }, 'haproxy to log the session-less requests');
      expect(mine.every((e) => e.session === undefined && e.method === 'POST')).toBe(true);
      const servers = (from: HaproxyExchange[]) => new Set(from.map((e) => e.server));
      expect(servers(mine.slice(0, 8))).toEqual(new Set(REPLICAS));
      expect(servers(mine.slice(8))).toEqual(new Set(REPLICAS));
      // And each replica saw some of them.
      for (const r of REPLICAS)
        expect(rig!.replicas.get(r)!.stats().exchanges).toBeGreaterThan(exchangesBefore.get(r)!);
    });
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
