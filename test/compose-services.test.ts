// The compose stack's lab services, proven without Docker: every lab service of docker-compose.yml runs
// here with its own command and environment (container paths, hosts and ports rewritten, durations
// shortened), all at once against the lab servers they share a network with, as in the stack, and exports, in place of the
// collector, straight over OTLP to in-process detectors (`startServer`, one per detector service of the
// compose file; the collector's routing is checked by stack.test.ts). Each client service must show
// the findings the detector README's scenario table promises for its scenario, lab-healthy and
// lab-network-cut none; the lab servers, run under the same hook, report their server side. The gateway
// service runs the built CLI (`resumewatch gateway`) in front of its lab server, and its client, a plain
// lab client (no hook) through it, must show on the gateway's /findings what the table promises.
// A 2026-07-28 lab client starts its own v2 server in process (no lab server): its client and server
// spans both export, and it must show what the detector README's era table promises for client and
// server spans together.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../packages/daemon/src/index.js';
import type { RunningServer } from '../packages/daemon/src/index.js';
import type { Finding } from '../packages/detector/src/index.js';
import { V2_SERVER_SCENARIO_NAMES } from '../packages/lab/src/index.js';
import { parseYaml, repoRoot, semconv } from './helpers/promql.js';
import { waitFor } from './helpers/wait.js';

interface Service {
  command?: string[];
  environment?: Record<string, string>;
  network_mode?: string;
}

/** How long each lab service runs here (300 s in the stack). */
const DURATION_S = '8';
/** The stack's storm window is 60 s; W passes quickly here so that storms end before the checks. */
const STORM_WINDOW_MS = 3_000;
/** How long the lab clients may take to run and end, together, on a loaded machine. */
const CLIENTS_LIMIT_MS = 180_000;
const CONTAINER_ROOT = '/app/';

const compose = parseYaml(readFileSync(join(repoRoot, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const services = compose.services;
const isLab = (n: string, sub: string) => n.startsWith('lab-') && (services[n]!.command ?? []).includes(sub);
const labServers = Object.keys(services).filter((n) => isLab(n, 'server'));
const labClients = Object.keys(services).filter((n) => isLab(n, 'run'));
const scenarioOf = (client: string): string => flag(services[client]!.command ?? [], 'run')!;
/** The 2026-07-28 lab clients: their scenario starts its own v2 server in process. */
const modernClients = labClients.filter((n) => (V2_SERVER_SCENARIO_NAMES as readonly string[]).includes(scenarioOf(n)));
const sessionClients = labClients.filter((n) => !modernClients.includes(n));
/** The lab server a client service talks to: the one whose network namespace it shares. */
const serverOf = (client: string): string => services[client]!.network_mode!.replace(/^service:/, '');
const detectorNames = Object.keys(services).filter((n) => n.startsWith('detector-'));
/** The gateway services: the built CLI's `gateway` command. */
const gatewayNames = Object.keys(services).filter((n) => (services[n]!.command ?? [])[2] === 'gateway');
/** Lab clients through a gateway: `run` with a gateway service as --server (no hook: the gateway observes). */
const gatewayClients = Object.keys(services).filter((n) => {
  const server = flag(services[n]!.command ?? [], '--server');
  return (
    (services[n]!.command ?? []).includes('run') &&
    server !== undefined &&
    gatewayNames.includes(new URL(server).hostname)
  );
});
const kinds = new Set<string>(semconv.FINDING_KINDS);

/**
 * A table of the detector README: scenario → the finding kinds of its second column. "On the lab, end
 * to end" (`| scenario | client spans |`): the lab clients are what the register hook instruments, the
 * lab server's spans are checked apart. "The 2026-07-28 era on the lab" (`| era scenario | client and
 * server spans |`): the scenario's in-process v2 server exports with its client.
 */
function promisedFindings(header = '| scenario | client spans |'): Map<string, string[]> {
  const readme = readFileSync(join(repoRoot, 'packages/detector/README.md'), 'utf8');
  expect(readme, `the detector README has the table ${header}`).toContain(header);
  const table = readme.slice(readme.indexOf(header));
  const lines = table.split('\n');
  const end = lines.findIndex((line) => !line.startsWith('|'));
  const rows = lines.slice(2, end);
  const promised = new Map<string, string[]>();
  for (const row of rows) {
    const [scenarioCell, clientCell] = row
      .split('|')
      .slice(1, 3)
      .map((c) => c.trim());
    const ticked = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    const scenarios = scenarioCell!.startsWith('healthy') ? ['healthy'] : ticked(scenarioCell!);
    const expected = ticked(clientCell!).filter((k) => kinds.has(k));
    for (const s of scenarios) promised.set(s, expected);
  }
  return promised;
}

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

/** A compose command and environment, as they run on this machine. */
function localise(
  service: Service,
  labPort: number,
  otlpEndpoint: string,
): { args: string[]; env: Record<string, string> } {
  const command = service.command ?? [];
  expect(command[0]).toBe('node');
  const args = command.slice(1).map((arg, i, all) => {
    const previous = all[i - 1];
    if (previous === '--duration') return DURATION_S;
    if (previous === '--host') return '127.0.0.1';
    if (previous === '--port') return String(labPort);
    return arg
      .replace(CONTAINER_ROOT, `${repoRoot}/`)
      .replace(/^http:\/\/127\.0\.0\.1:8080\//, `http://127.0.0.1:${labPort}/`);
  });
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(service.environment ?? {}))
    env[name] = String(value).replace(CONTAINER_ROOT, `${repoRoot}/`);
  env.OTEL_EXPORTER_OTLP_ENDPOINT = otlpEndpoint;
  return { args, env };
}

/** A compose URL (`http://<service>:<port>/…`) pointed at where that service listens here. */
function localUrl(url: string, listening: Map<string, number>): string {
  const u = new URL(url);
  const port = listening.get(`${u.hostname}:${u.port}`);
  expect(port, `${url} names a service that runs here`).toBeDefined();
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.href;
}

/** A gateway service's command as it runs here: its upstream, listeners and the storm window rewritten. */
function localiseGateway(
  service: Service,
  listening: Map<string, number>,
  port: number,
  metricsPort: number,
): { args: string[]; env: Record<string, string> } {
  const command = service.command ?? [];
  expect(command.slice(0, 3)).toEqual(['node', 'packages/daemon/dist/cli.js', 'gateway']);
  const args = command.slice(1).map((arg, i, all) => {
    const previous = all[i - 1];
    if (previous === '--host') return '127.0.0.1';
    if (previous === '--port') return String(port);
    if (previous === '--metrics-port') return String(metricsPort);
    if (previous === '--upstream') return localUrl(arg, listening);
    return arg;
  });
  return { args, env: { ...(service.environment ?? {}), RESUMEWATCH_STORM_WINDOW: `${STORM_WINDOW_MS}ms` } };
}

/** A plain lab client's command as it runs here: its --server (a gateway) rewritten, its duration shortened. */
function localiseGatewayClient(service: Service, listening: Map<string, number>): string[] {
  return (service.command ?? []).slice(1).map((arg, i, all) => {
    const previous = all[i - 1];
    if (previous === '--duration') return DURATION_S;
    if (previous === '--server') return localUrl(arg, listening);
    return arg;
  });
}

interface Proc {
  name: string;
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

const procs: Proc[] = [];
function start(name: string, args: string[], env: Record<string, string>): Proc {
  // The image's WORKDIR is the repository's root: relative paths of the commands resolve there.
  const child = spawn(process.execPath, args, {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const proc = { name, child, output: () => output, exited };
  procs.push(proc);
  return proc;
}

/**
 * The port a process reports it listens on, read from its output once the whole line is there. Each
 * service listens on port 0 and says where: a port found free and handed over later could be taken
 * meanwhile (every test file and every outgoing connection on the machine draws from the same range).
 */
async function reportedPort(proc: Proc, line: RegExp, what: string): Promise<number> {
  const match = await waitFor(
    () => line.exec(proc.output()) ?? undefined,
    `${proc.name} to report ${what}`,
    60_000,
  ).catch((error: unknown) => {
    throw new Error(`${String(error)}; its output: ${proc.output().slice(-2000)}`);
  });
  return Number(match[1]);
}

const procByName = (name: string): Proc | undefined => procs.find((p) => p.name === name);

const detectors: RunningServer[] = [];
let restartingDetector: RunningServer;
const findingsOf = (service: string): Finding[] =>
  detectors.flatMap((d) => d.findings()).filter((f) => f.service === service);
const kindsOf = (service: string): string[] => [...new Set(findingsOf(service).map((f) => f.kind))].sort();

afterAll(async () => {
  for (const p of procs) p.child.kill('SIGKILL');
  await Promise.allSettled([...detectors, restartingDetector].filter(Boolean).map((d) => d.close()));
});

describe('the lab services of docker-compose.yml, run locally', () => {
  const promised = promisedFindings();
  const promisedModern = promisedFindings('| era scenario | client and server spans |');
  const endpoints: string[] = [];
  const labServerProcs = new Map<string, Proc>();
  /** Each gateway service's /metrics port here. */
  const gatewayMetrics = new Map<string, number>();
  const gatewayProcs = new Map<string, Proc>();

  beforeAll(async () => {
    for (const _ of detectorNames) {
      detectors.push(
        await startServer({ port: 0, grpcPort: false, metricsPort: 0, output: null, stormWindowMs: STORM_WINDOW_MS }),
      );
    }
    for (const d of detectors) endpoints.push(`http://127.0.0.1:${d.httpPort}`);
    const labPorts = new Map<string, number>();
    restartingDetector = await startServer({
      port: 0,
      grpcPort: false,
      metricsPort: 0,
      output: null,
      stormWindowMs: STORM_WINDOW_MS,
    });
    for (const name of labServers) {
      const endpoint =
        name === 'lab-server-restarting' ? `http://127.0.0.1:${restartingDetector.httpPort}` : endpoints[0]!;
      const server = localise(services[name]!, 0, endpoint);
      labServerProcs.set(name, start(name, server.args, server.env));
    }
    for (const [name, proc] of labServerProcs)
      labPorts.set(name, await reportedPort(proc, /MCP\s+http:\/\/127\.0\.0\.1:(\d+)\/mcp\n/, 'its MCP port'));
    // Where each service the commands name (`http://<service>:<port>`) listens here.
    const listening = new Map<string, number>();
    for (const [name, port] of labPorts)
      listening.set(`${name}:${flag(services[name]!.command ?? [], '--port')}`, port);
    for (const name of gatewayNames) {
      const { args, env } = localiseGateway(services[name]!, listening, 0, 0);
      const proc = start(name, args, env);
      gatewayProcs.set(name, proc);
      // One line says both, once both listen: `gateway on http://127.0.0.1:P/… metrics on http://…:M/metrics`.
      const line = /gateway on http:\/\/127\.0\.0\.1:(\d+).*metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics\n/;
      const port = await reportedPort(proc, line, 'its ports');
      gatewayMetrics.set(name, Number(line.exec(proc.output())![2]));
      listening.set(`${name}:${flag(services[name]!.command ?? [], '--port')}`, port);
    }
    for (const name of gatewayClients) start(name, localiseGatewayClient(services[name]!, listening), {});
    // The collector spreads sessions over the detectors; here each client service exports to one of them.
    labClients.forEach((name, i) => {
      // A 2026-07-28 client names no lab server: its scenario starts its own (the port is not used).
      const labPort = modernClients.includes(name) ? 0 : labPorts.get(serverOf(name))!;
      const { args, env } = localise(services[name]!, labPort, endpoints[i % endpoints.length]!);
      start(name, args, env);
    });
    // Each runs DURATION_S, then flushes; a client that does not end in time is named.
    const clients = procs.filter((p) => labClients.includes(p.name) || gatewayClients.includes(p.name));
    // A limit, not an expectation: about 10 s on a quiet machine, for a dozen processes on 2 cores.
    await waitFor(
      () => clients.every((p) => p.child.exitCode !== null || p.child.signalCode !== null),
      'the lab clients to end',
      CLIENTS_LIMIT_MS,
    ).catch(() => {
      const running = clients.filter((p) => p.child.exitCode === null).map((p) => p.name);
      throw new Error(`still running after ${CLIENTS_LIMIT_MS / 1000} s: ${running.join(', ')}`);
    });
  }, CLIENTS_LIMIT_MS + 120_000);

  it('the compose file has detectors, a lab server and a client service for every scenario of the table', () => {
    expect(detectorNames.length).toBeGreaterThan(0);
    const scenarios = sessionClients.map(scenarioOf);
    expect([...scenarios].sort()).toEqual([...promised.keys()].sort());
    expect(labServers).toContain('lab-server');
    for (const name of labClients) expect(services[name]!.command).toContain('--import');
  });

  it('has a 2026-07-28 lab client of the era table, on its own v2 server with both sides instrumented', () => {
    expect(modernClients.length).toBeGreaterThan(0);
    for (const name of modernClients) {
      expect(promisedModern.has(scenarioOf(name)), `${name}: ${scenarioOf(name)} is in the era table`).toBe(true);
      const service = services[name]!;
      // No lab server to name or share a network with: the scenario starts its v2 server in process.
      expect(flag(service.command ?? [], '--server'), name).toBeUndefined();
      expect(service.network_mode, name).toBeUndefined();
      // register instruments the client; the in-process v2 server gets instrumentMcpServer from this module.
      expect(service.environment?.RESUMEWATCH_LAB_V2_SERVER_HOOK, name).toBe(
        `${CONTAINER_ROOT}packages/instrumentation/dist/index.js`,
      );
    }
  });

  it('every lab client service ran its command to the end under the register hook', () => {
    for (const p of procs.filter((q) => labClients.includes(q.name))) {
      expect(p.child.exitCode, `${p.name}: ${p.output()}`).toBe(0);
    }
  });

  it('has a gateway service in front of a lab server, and a plain lab client through it', () => {
    expect(gatewayNames.length).toBeGreaterThan(0);
    expect(gatewayClients.length).toBeGreaterThan(0);
    // Every service that runs a lab scenario is proven here: a lab client or a gateway's client.
    const runners = Object.keys(services).filter((n) => (services[n]!.command ?? []).includes('run'));
    expect([...runners].sort()).toEqual([...labClients, ...gatewayClients].sort());
    for (const name of gatewayNames) {
      const upstream = new URL(flag(services[name]!.command ?? [], '--upstream')!);
      expect(labServers).toContain(upstream.hostname);
      expect(upstream.port).toBe(flag(services[upstream.hostname]!.command ?? [], '--port'));
    }
    for (const name of gatewayClients) {
      // No hook and no exporter: the gateway is the client's only observer.
      expect(services[name]!.command, name).not.toContain('--import');
      expect(services[name]!.environment?.OTEL_EXPORTER_OTLP_ENDPOINT, name).toBeUndefined();
      const server = new URL(flag(services[name]!.command ?? [], '--server')!);
      expect(server.port).toBe(flag(services[server.hostname]!.command ?? [], '--port'));
    }
  });

  it('every client of a gateway ran its command to the end', () => {
    for (const p of procs.filter((q) => gatewayClients.includes(q.name))) {
      expect(p.child.exitCode, `${p.name}: ${p.output()}`).toBe(0);
    }
  });

  it(
    "each gateway's /findings shows what the table promises for its client's scenario, under the gateway's service.name",
    { timeout: 180_000 },
    async () => {
      for (const name of gatewayNames) {
        const clients = gatewayClients.filter(
          (c) => new URL(flag(services[c]!.command ?? [], '--server')!).hostname === name,
        );
        const expected = [
          ...new Set(clients.flatMap((c) => promised.get(flag(services[c]!.command ?? [], 'run')!)!)),
        ].sort();
        expect(expected.length, `${name}'s clients run scenarios with findings`).toBeGreaterThan(0);
        const service = services[name]!.environment?.OTEL_SERVICE_NAME;
        expect(service, `${name} names its spans`).toBeDefined();
        const findingsUrl = `http://127.0.0.1:${gatewayMetrics.get(name)}/findings`;
        const kinds = async (): Promise<string[]> => {
          const findings = (await (await fetch(findingsUrl)).json()) as Finding[];
          return [...new Set(findings.filter((f) => f.service === service).map((f) => f.kind))].sort();
        };
        await waitFor(
          async () => {
            const seen = await kinds();
            return expected.every((k) => seen.includes(k));
          },
          `${name}'s findings on ${findingsUrl}`,
          60_000,
        );
        // A storm still open when its window passes yields a late signature: wait until the gateway's
        // detector has no storm open (its /metrics), rather than for a time, then compare exactly. Its
        // client has ended, so no attempt can open another.
        const metricsUrl = `http://127.0.0.1:${gatewayMetrics.get(name)}/metrics`;
        const openStorms = new RegExp(
          `^${semconv.METRIC_RECONNECT_STORMS_ACTIVE}\\{${semconv.LABEL_SERVICE}="${service}"\\} ([0-9.]+)$`,
          'm',
        );
        await waitFor(
          async () => {
            const match = openStorms.exec(await (await fetch(metricsUrl)).text());
            return match !== null && Number(match[1]) === 0;
          },
          `no storm open in ${name}'s detector (${metricsUrl})`,
          60_000,
        );
        expect(await kinds(), `${name}: ${gatewayProcs.get(name)!.output().slice(-2000)}`).toEqual(expected);
      }
    },
  );

  it('the gateway services stop cleanly on SIGTERM', { timeout: 30_000 }, async () => {
    for (const [name, proc] of gatewayProcs) {
      proc.child.kill('SIGTERM');
      expect(await proc.exited, `${name}: ${proc.output().slice(-2000)}`).toBe(0);
    }
  });

  it(
    'each lab client service shows the findings its scenario promises, lab-healthy and lab-network-cut none',
    { timeout: 180_000 },
    async () => {
      const expected = new Map(
        labClients.map((n) => [n, [...(promised.get(scenarioOf(n)) ?? promisedModern.get(scenarioOf(n))!)].sort()]),
      );
      expect(expected.get('lab-healthy')).toEqual([]);
      expect(expected.get('lab-network-cut')).toEqual([]);
      // Findings arrive as the spans are exported and as storm windows pass.
      const missing = (): string[] =>
        labClients.flatMap((n) =>
          expected
            .get(n)!
            .filter((k) => !kindsOf(n).includes(k))
            .map((k) => `${n}: ${k}`),
        );
      await waitFor(() => missing().length === 0, 'every promised finding', 60_000).catch((error: unknown) => {
        const short = labClients.filter((n) => expected.get(n)!.some((k) => !kindsOf(n).includes(k)));
        const seen = short.map(
          (n) => `${n} has ${kindsOf(n).join(', ') || 'none'}: ${procByName(n)?.output().slice(-1500)}`,
        );
        throw new Error(`${String(error)}; missing ${missing().join(', ')}; ${seen.join('; ')}`);
      });
      // A storm still open when its window passes yields a late signature. Every client has ended and its
      // spans are in (an exporter's request is answered once its spans are ingested): the detectors'
      // clocks move past W at once rather than the test waiting W, then the comparison is exact.
      for (const d of detectors) d.detector.advance(Date.now() + STORM_WINDOW_MS + 1);
      const actual = new Map(labClients.map((n) => [n, kindsOf(n)]));
      expect(actual).toEqual(expected);
    },
  );

  it("the 2026-07-28 client's re-issue is a duplicate_execution, and its exchanges count in the stateless era", () => {
    for (const name of modernClients.filter((n) => scenarioOf(n) === 'modern-broken-reissue')) {
      // The first attempt's fate comes from the in-process server's span, in the same trace: both sides exported.
      expect(kindsOf(name), name).toContain(semconv.FindingKind.DUPLICATE_EXECUTION);
      expect(kindsOf(name), name).not.toContain(semconv.FindingKind.POSSIBLE_DUPLICATE_EXECUTION);
    }
    // Only the 2026-07-28 clients speak without sessions: what the era share panels read.
    const stateless = detectors.reduce((n, d) => n + d.metrics.eraCounts()[semconv.ProtocolEra.STATELESS], 0);
    expect(stateless).toBeGreaterThan(0);
  });

  it(
    'the lab server reports its replays and requests (instrumentEventStore, instrumentServerTransport)',
    { timeout: 30_000 },
    async () => {
      const labServer = labServerProcs.get('lab-server')!;
      labServer.child.kill('SIGTERM');
      expect(await labServer.exited, labServer.output()).toBe(0);
      // Server spans alone carry the seed pattern and resumes after a terminal (detector README); the
      // failed resumptions of unfinished requests need the client's spans.
      const seedKinds = [semconv.FindingKind.DUPLICATE_TERMINAL, semconv.FindingKind.RESUME_AFTER_TERMINAL];
      await waitFor(() => seedKinds.every((k) => kindsOf('lab-server').includes(k)), 'the lab server findings', 15_000);
      expect(kindsOf('lab-server')).not.toContain(semconv.FindingKind.AMBIGUOUS_EMPTY_REPLAY);
      expect(kindsOf('lab-server')).not.toContain(semconv.FindingKind.CURSOR_LOST);
      // server-restart's server spans alone show nothing (the table's third column), though they arrived:
      // this server exports to a detector of its own, whose span count says so.
      const restarting = labServerProcs.get('lab-server-restarting')!;
      restarting.child.kill('SIGTERM');
      expect(await restarting.exited, restarting.output()).toBe(0);
      await waitFor(
        () => restartingDetector.detector.stats().spans.accepted > 0,
        'the restarting lab server spans',
        15_000,
      );
      expect(restartingDetector.findings()).toEqual([]);
      expect(kindsOf('lab-server-restarting')).toEqual([]);
    },
  );
});
