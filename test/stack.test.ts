// The docker-compose stack, checked without Docker: structure of docker-compose.yml (pinned images,
// ports, depends_on, mounts that exist), the Prometheus config with promtool, the Alertmanager config
// with amtool, the collector's routing to the detectors, and Grafana's provisioning.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { collectorRouting } from './helpers/collector-routing.js';
import { parseYaml, repoRoot, semconv } from './helpers/promql.js';
import { requireTools } from './helpers/required-tools.js';

type Dict = Record<string, unknown>;

interface Service {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  ports?: string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  volumes?: string[];
  environment?: Record<string, string>;
  network_mode?: string;
  healthcheck?: { test: string[] };
}

function load(path: string): Dict {
  return parseYaml(readFileSync(join(repoRoot, path), 'utf8'), { merge: true }) as Dict;
}

const compose = load('docker-compose.yml') as { services: Record<string, Service>; name?: string };
const services = compose.services;
const names = Object.keys(services);
const tmp = mkdtempSync(join(tmpdir(), 'resumewatch-stack-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function run(cmd: string, args: string[]): { status: number | null; output: string } {
  requireTools(cmd);
  const r = spawnSync(cmd, args, { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 });
  if (r.error) throw r.error;
  return { status: r.status, output: `${r.stdout}\n${r.stderr}` };
}

function commandOf(s: Service): string[] {
  return Array.isArray(s.command) ? s.command : String(s.command ?? '').split(/\s+/);
}

function deps(s: Service): string[] {
  return Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on ?? {});
}

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

describe('docker-compose.yml', () => {
  it('has the services of the stack', () => {
    for (const s of [
      'otel-collector',
      'detector-1',
      'detector-2',
      'tempo',
      'prometheus',
      'alertmanager',
      'grafana',
      'lab-server',
      'gateway',
    ]) {
      expect(names).toContain(s);
    }
    const scenarios = names.filter((n) => n.startsWith('lab-')).map((n) => flag(commandOf(services[n]!), 'run'));
    for (const s of [
      'seed-loop',
      'per-stream-dedup',
      'network-cut',
      'server-restart',
      'cursor-evicted',
      'sdk-error-resume',
      'healthy',
      // The 2026-07-28 era: the v2 SDK client and its own v2 server in process.
      'modern-broken-reissue',
    ]) {
      expect(scenarios).toContain(s);
    }
  });

  it('pins every image to an explicit tag, never latest', () => {
    for (const [name, s] of Object.entries(services)) {
      expect(s.image, `${name} has an image`).toBeDefined();
      const m = /^(?:[a-z0-9.-]+(?::\d+)?\/)?[a-z0-9._/-]+:([A-Za-z0-9._-]+)$/.exec(s.image!);
      expect(m, `${name}: ${s.image} has a tag`).not.toBeNull();
      expect(m![1]).not.toBe('latest');
      expect(m![1], `${name}: ${s.image} is a version`).toMatch(/\d/);
    }
  });

  it('builds the resumewatch image from the Dockerfile at the root, node:20 based', () => {
    const built = Object.entries(services).filter(([, s]) => s.build);
    expect(built.length).toBeGreaterThan(0);
    for (const [, s] of built) {
      expect(s.build).toEqual({ context: '.', dockerfile: 'Dockerfile' });
      expect(s.image).toBe(built[0]![1].image);
    }
    const dockerfile = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
    const from = /^FROM\s+(\S+)/m.exec(dockerfile)?.[1];
    expect(from).toMatch(/^node:20\.\d+\.\d+/);
    expect(dockerfile).toMatch(/pnpm install --frozen-lockfile/);
    expect(dockerfile).toMatch(/tsc -b/);
    for (const [name, s] of Object.entries(services)) {
      if (s.image === built[0]![1].image) expect(s.build, `${name} builds the same image`).toBeDefined();
    }
  });

  it('publishes valid, distinct host ports', () => {
    const hostPorts = new Map<number, string>();
    for (const [name, s] of Object.entries(services)) {
      if (s.network_mode)
        expect(s.ports, `${name} shares a network namespace, it cannot publish ports`).toBeUndefined();
      for (const p of s.ports ?? []) {
        const m = /^(?:(\d+\.\d+\.\d+\.\d+):)?(\d+):(\d+)(?:\/(tcp|udp))?$/.exec(p);
        expect(m, `${name}: port ${p}`).not.toBeNull();
        const host = Number(m![2]);
        const container = Number(m![3]);
        for (const n of [host, container]) expect(n > 0 && n < 65536).toBe(true);
        expect(hostPorts.has(host), `host port ${host} of ${name} also used by ${hostPorts.get(host)}`).toBe(false);
        hostPorts.set(host, name);
      }
    }
    expect(hostPorts.get(3000)).toBe('grafana');
    expect(hostPorts.get(9090)).toBe('prometheus');
  });

  it('depends only on services that exist, without cycles', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const d of deps(s)) expect(names, `${name} depends on ${d}`).toContain(d);
      if (s.network_mode) {
        const m = /^service:(.+)$/.exec(s.network_mode);
        expect(m, `${name}: network_mode ${s.network_mode}`).not.toBeNull();
        expect(deps(s)).toContain(m![1]);
      }
    }
    const visiting = new Set<string>();
    const done = new Set<string>();
    const visit = (n: string): void => {
      if (done.has(n)) return;
      expect(visiting.has(n), `dependency cycle through ${n}`).toBe(false);
      visiting.add(n);
      for (const d of deps(services[n]!)) visit(d);
      visiting.delete(n);
      done.add(n);
    };
    names.forEach(visit);
  });

  it('mounts only paths that exist in the repository', () => {
    let mounts = 0;
    for (const [name, s] of Object.entries(services)) {
      for (const v of s.volumes ?? []) {
        const [source, target] = v.split(':');
        expect(target, `${name}: ${v}`).toMatch(/^\//);
        if (!source!.startsWith('.') && !isAbsolute(source!)) continue; // named volume
        expect(source!.startsWith('./'), `${name}: ${v} is relative to the repository`).toBe(true);
        expect(existsSync(join(repoRoot, source!)), `${name}: ${source} exists`).toBe(true);
        mounts++;
      }
    }
    expect(mounts).toBeGreaterThanOrEqual(8);
  });

  it('runs the detectors with the CLI flags and the lab through the instrumentation hook', () => {
    for (const d of ['detector-1', 'detector-2']) {
      const args = commandOf(services[d]!);
      expect(args.slice(0, 3)).toEqual(['node', 'packages/daemon/dist/cli.js', 'serve']);
      expect(flag(args, '--grpc-port')).toBe('4317');
      expect(flag(args, '--metrics-port')).toBe('9464');
      expect(flag(args, '--host')).toBe('0.0.0.0');
    }
    for (const name of names.filter((n) => n.startsWith('lab-'))) {
      const s = services[name]!;
      const args = commandOf(s);
      expect(flag(args, '--import'), name).toBe('/app/packages/instrumentation/dist/register.js');
      expect(existsSync(join(repoRoot, 'packages/instrumentation/src/register.ts'))).toBe(true);
      expect(s.environment?.OTEL_EXPORTER_OTLP_ENDPOINT, name).toBe('http://otel-collector:4318');
      expect(s.environment?.OTEL_SERVICE_NAME, name).toBe(name);
      // A client talks to the lab server whose network namespace it shares (lab-server-restart has its own);
      // a 2026-07-28 client's scenario starts its own v2 server in process, and instruments it through
      // the module RESUMEWATCH_LAB_V2_SERVER_HOOK names (register patches SDK 1.x servers only).
      const server = s.network_mode?.replace(/^service:/, '');
      if (flag(args, 'run')?.startsWith('modern-')) {
        expect(s.network_mode, name).toBeUndefined();
        expect(flag(args, '--server'), name).toBeUndefined();
        const hook = s.environment?.RESUMEWATCH_LAB_V2_SERVER_HOOK;
        expect(hook, name).toBe('/app/packages/instrumentation/dist/index.js');
        expect(existsSync(join(repoRoot, 'packages/instrumentation/src/index.ts'))).toBe(true);
      } else if (args.includes('run'))
        expect(flag(args, '--server'), name).toBe(
          `http://127.0.0.1:${flag(commandOf(services[server!]!), '--port')}/mcp`,
        );
    }
  });
});

describe('the gateway service', () => {
  const gateway = services.gateway!;
  const args = commandOf(gateway);

  it('runs the built CLI in front of the lab server, listening on all interfaces, exporting no OTLP', () => {
    expect(args.slice(0, 3)).toEqual(['node', 'packages/daemon/dist/cli.js', 'gateway']);
    expect(flag(args, '--host')).toBe('0.0.0.0');
    const upstream = new URL(flag(args, '--upstream')!);
    expect(upstream.hostname).toBe('lab-server');
    expect(upstream.port).toBe(flag(commandOf(services['lab-server']!), '--port'));
    expect(upstream.pathname).toBe('/mcp');
    expect(deps(gateway)).toContain('lab-server');
    // Its built-in detector reports; the collector's detectors must not see its spans a second time.
    expect(gateway.environment?.OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    expect(gateway.environment?.OTEL_SERVICE_NAME).toBe('gateway');
    const port = flag(args, '--port')!;
    const metricsPort = flag(args, '--metrics-port')!;
    expect(port).not.toBe(metricsPort);
    expect(gateway.ports).toEqual([`${port}:${port}`, `${metricsPort}:${metricsPort}`]);
    expect(gateway.healthcheck?.test.join(' ')).toContain(`http://127.0.0.1:${metricsPort}/healthz`);
  });

  it('has a plain lab client (no hook, no exporter) whose server is the gateway', () => {
    const clients = names.filter((n) => {
      const server = flag(commandOf(services[n]!), '--server');
      return server !== undefined && new URL(server).hostname === 'gateway';
    });
    expect(clients.length).toBeGreaterThan(0);
    for (const name of clients) {
      const s = services[name]!;
      expect(commandOf(s), name).not.toContain('--import');
      expect(s.environment?.OTEL_EXPORTER_OTLP_ENDPOINT, name).toBeUndefined();
      expect(flag(commandOf(s), '--server')).toBe(`http://gateway:${flag(args, '--port')}/mcp`);
      expect(deps(s), name).toContain('gateway');
    }
  });
});

describe('deploy/collector', () => {
  const config = load('deploy/collector/config.yaml') as {
    receivers: { otlp: { protocols: { grpc: { endpoint: string }; http: { endpoint: string } } } };
    exporters: Record<string, Dict>;
    service: { pipelines: Record<string, { receivers: string[]; exporters: string[]; processors?: string[] }> };
  };

  it('uses the contrib distribution (load-balancing exporter) at a version that routes on attributes', () => {
    const tag = /:(\d+)\.(\d+)\.(\d+)$/.exec(services['otel-collector']!.image!)!;
    expect(services['otel-collector']!.image).toMatch(/^otel\/opentelemetry-collector-contrib:/);
    expect(Number(tag[1]) > 0 || Number(tag[2]) >= 124).toBe(true);
  });

  it('receives OTLP on 4317 and 4318 and feeds both detectors, sessions keyed by session, the rest by name, and Tempo', () => {
    expect(config.receivers.otlp.protocols.grpc.endpoint).toBe('0.0.0.0:4317');
    expect(config.receivers.otlp.protocols.http.endpoint).toBe('0.0.0.0:4318');
    const routing = collectorRouting(config as unknown as Record<string, unknown>);
    expect(routing.sessionAttribute).toBe(semconv.ATTR_MCP_SESSION_ID);
    expect(routing.sessions.attributes).toEqual([semconv.ATTR_MCP_SESSION_ID]);
    // The name of the work, which a 2026-07-28 re-issue and its first attempt's spans all carry.
    expect(routing.stateless.attributes).toEqual([
      semconv.ATTR_GEN_AI_TOOL_NAME,
      semconv.ATTR_GEN_AI_PROMPT_NAME,
      semconv.ATTR_MCP_RESOURCE_URI,
    ]);
    for (const lb of [routing.sessions, routing.stateless]) {
      expect(lb.hostnames.slice().sort()).toEqual(['detector-1:4317', 'detector-2:4317']);
      for (const h of lb.hostnames) {
        const service = services[h.split(':')[0]!]!;
        expect(flag(commandOf(service), '--grpc-port')).toBe(h.split(':')[1]);
      }
    }
    const [tempoName, tempo] = Object.entries(config.exporters).find(([k]) => k.startsWith('otlp'))! as [
      string,
      { endpoint: string },
    ];
    expect(tempo.endpoint).toBe('tempo:4317');
    const traces = config.service.pipelines.traces!;
    expect(traces.receivers).toEqual(['otlp']);
    expect(traces.exporters.slice().sort()).toEqual([routing.connector, tempoName].sort());
  });
});

describe('deploy/prometheus and deploy/alertmanager', () => {
  it('passes promtool check config, with the rule files it mounts', () => {
    const prom = services.prometheus!;
    const rulesMount = prom.volumes!.find((v) => v.startsWith('./alerts/rules:'))!;
    const inContainer = rulesMount.split(':')[1]!;
    const text = readFileSync(join(repoRoot, 'deploy/prometheus/prometheus.yml'), 'utf8');
    expect(text).toContain(`${inContainer}/*.yaml`);
    const copy = join(tmp, 'prometheus.yml');
    writeFileSync(copy, text.split(inContainer).join(join(repoRoot, 'alerts/rules')));
    const r = run('promtool', ['check', 'config', copy]);
    expect(r.status, r.output).toBe(0);
    const ruleFiles = readdirSync(join(repoRoot, 'alerts/rules')).filter((f) => f.endsWith('.yaml'));
    expect(r.output).toContain(`SUCCESS: ${ruleFiles.length} rule files found`);
    expect(prom.command).toContain('--enable-feature=exemplar-storage');
  });

  it('scrapes both detectors and the gateway in the job the rules expect and alerts to the alertmanager service', () => {
    const cfg = load('deploy/prometheus/prometheus.yml') as {
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
      alerting: { alertmanagers: { static_configs: { targets: string[] }[] }[] };
    };
    const job = cfg.scrape_configs.find((j) => j.job_name === 'resumewatch-detector')!;
    const targets = job.static_configs.flatMap((c) => c.targets).sort();
    expect(targets).toEqual(['detector-1:9464', 'detector-2:9464', 'gateway:9466']);
    for (const t of targets)
      expect(flag(commandOf(services[t.split(':')[0]!]!), '--metrics-port')).toBe(t.split(':')[1]);
    const rules = readFileSync(join(repoRoot, 'alerts/rules/detector.yaml'), 'utf8');
    expect(rules).toContain(`job="${job.job_name}"`);
    expect(cfg.alerting.alertmanagers[0]!.static_configs[0]!.targets).toEqual(['alertmanager:9093']);
  });

  it('passes amtool check-config', () => {
    const r = run('amtool', ['check-config', join(repoRoot, 'deploy/alertmanager/alertmanager.yml')]);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toMatch(/SUCCESS/);
  });
});

describe('deploy/grafana and deploy/tempo', () => {
  it('provisions Prometheus with exemplars linked to Tempo by trace_id', () => {
    const ds = load('deploy/grafana/provisioning/datasources/datasources.yaml') as {
      datasources: {
        uid: string;
        type: string;
        url: string;
        jsonData?: { exemplarTraceIdDestinations?: { name: string; datasourceUid: string }[] };
      }[];
    };
    const prom = ds.datasources.find((d) => d.type === 'prometheus')!;
    const tempo = ds.datasources.find((d) => d.type === 'tempo')!;
    expect(prom.uid).toBe('prometheus'); // the default of the dashboards' datasource variable
    expect(prom.url).toBe('http://prometheus:9090');
    expect(tempo.url).toBe('http://tempo:3200');
    expect(prom.jsonData?.exemplarTraceIdDestinations).toEqual([
      { name: semconv.EXEMPLAR_TRACE_ID, datasourceUid: tempo.uid },
    ]);
  });

  it('loads the generated dashboards from where compose mounts them', () => {
    const p = load('deploy/grafana/provisioning/dashboards/dashboards.yaml') as {
      providers: { options: { path: string } }[];
    };
    const mount = services.grafana!.volumes!.find((v) => v.startsWith('./dashboards/generated:'))!;
    expect(mount.split(':')[1]).toBe(p.providers[0]!.options.path);
    const home = services.grafana!.environment!.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH!;
    expect(existsSync(join(repoRoot, 'dashboards/generated', home.slice(p.providers[0]!.options.path.length)))).toBe(
      true,
    );
  });

  it('has Tempo listen for OTLP/gRPC on all interfaces and serve its API on 3200', () => {
    const t = load('deploy/tempo/tempo.yaml') as {
      server: { http_listen_port: number };
      distributor: { receivers: { otlp: { protocols: { grpc: { endpoint: string } } } } };
    };
    expect(t.server.http_listen_port).toBe(3200);
    expect(t.distributor.receivers.otlp.protocols.grpc.endpoint).toBe('0.0.0.0:4317');
  });
});
