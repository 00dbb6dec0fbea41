// The packages as a user gets them: every publishable package packs (`pnpm pack`, as `pnpm pack:all`
// does) into a tarball with a complete package.json, and the tarballs install with plain npm into a
// fresh folder outside the workspace, next to the MCP SDK and the OpenTelemetry SDK that `register`
// starts. There an unmodified SDK application runs under `node --import
// @resumewatch/instrumentation/register` against the installed lab server and exports to the installed
// `resumewatch serve`, which reports the finding.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, semconv } from './helpers/promql.js';
import { freePort, waitFor } from './helpers/wait.js';

interface Manifest {
  name: string;
  private?: boolean;
  license?: string;
  repository?: { type?: string; url?: string; directory?: string };
  engines?: { node?: string };
  exports?: Record<string, Record<string, string>>;
  bin?: Record<string, string>;
  files?: string[];
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

const packageDirs = readdirSync(join(repoRoot, 'packages')).filter((dir) => {
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'packages', dir, 'package.json'), 'utf8')) as Manifest;
  return manifest.private !== true;
});

const work = mkdtempSync(join(tmpdir(), 'resumewatch-packaging-'));
const packs = join(work, 'packs');
const app = join(work, 'app');
const procs: ChildProcess[] = [];
// Removing the installed app (its node_modules) took over vitest's 30 s hook limit on a loaded machine.
afterAll(() => {
  for (const p of procs) p.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
}, 180_000);

function run(cmd: string, args: string[], cwd: string, timeout = 180_000, env: Record<string, string> = {}): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout, env: { ...process.env, ...env } });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

const tarballs = new Map<
  string,
  { manifest: Manifest; files: Set<string>; path: string; read(file: string): string }
>();

beforeAll(() => {
  // The command of the root script pack:all, with another destination.
  const script = (
    JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  ).scripts['pack:all']!;
  expect(script).toContain('pack --pack-destination');
  run(
    'pnpm',
    ['-r', '--filter', './packages/*', '--filter', '!@resumewatch/demo', 'pack', '--pack-destination', packs],
    repoRoot,
  );
  for (const file of readdirSync(packs)) {
    const path = join(packs, file);
    const read = (inner: string) => run('tar', ['-xzOf', path, `package/${inner}`], work);
    const files = new Set(
      run('tar', ['-tzf', path], work)
        .trim()
        .split('\n')
        .map((f) => f.replace(/^package\//, '')),
    );
    const manifest = JSON.parse(read('package.json')) as Manifest;
    tarballs.set(manifest.name, { manifest, files, path, read });
  }
}, 180_000);

describe('pnpm pack of every publishable package', () => {
  it('gives one tarball per publishable package', () => {
    const names = packageDirs.map(
      (dir) => (JSON.parse(readFileSync(join(repoRoot, 'packages', dir, 'package.json'), 'utf8')) as Manifest).name,
    );
    expect([...tarballs.keys()].sort()).toEqual(names.sort());
    expect(names).toEqual(
      expect.arrayContaining([
        '@resumewatch/instrumentation',
        '@resumewatch/detector',
        '@resumewatch/daemon',
        '@resumewatch/lab',
        '@resumewatch/guard',
      ]),
    );
  });

  it('has no workspace: ranges, and its license, repository, engines and files', () => {
    for (const [name, { manifest, files, read }] of tarballs) {
      expect(read('package.json'), name).not.toContain('workspace:');
      expect(manifest.license, name).toBe('Apache-2.0');
      expect(files.has('LICENSE'), name).toBe(true);
      expect(read('LICENSE'), name).toContain('Apache License');
      expect(manifest.repository?.url, name).toMatch(/^git\+https:\/\/.+\.git$/);
      expect(manifest.repository?.directory, name).toBe(`packages/${name.replace('@resumewatch/', '')}`);
      expect(manifest.engines?.node, name).toBe('>=20.6.0');
      expect(manifest.files, name).toContain('dist');
      expect(files.has('README.md'), name).toBe(true);
    }
  });

  it('points every export, type and bin at a file in the tarball, without the workspace source condition', () => {
    for (const [name, { manifest, files, read }] of tarballs) {
      expect(Object.keys(manifest.exports ?? {}).length, name).toBeGreaterThan(0);
      for (const [entry, conditions] of Object.entries(manifest.exports!)) {
        expect(Object.keys(conditions), `${name} ${entry}`).toEqual(['types', 'default']);
        for (const target of Object.values(conditions))
          expect(files.has(target.replace(/^\.\//, '')), `${name} ${entry} ${target}`).toBe(true);
      }
      for (const [bin, target] of Object.entries(manifest.bin ?? {})) {
        expect(read(target.replace(/^\.\//, '')).startsWith('#!/usr/bin/env node\n'), `${name} bin ${bin}`).toBe(true);
      }
    }
    expect(tarballs.get('@resumewatch/daemon')!.manifest.bin).toEqual({ resumewatch: './dist/cli.js' });
    expect(tarballs.get('@resumewatch/detector')!.manifest.bin).toBeUndefined();
    expect(tarballs.get('@resumewatch/lab')!.manifest.bin).toEqual({ 'resumewatch-lab': './dist/cli.js' });
    expect(tarballs.get('@resumewatch/gateway')!.manifest.bin).toEqual({ 'resumewatch-gateway': './dist/bin.js' });
    expect(Object.keys(tarballs.get('@resumewatch/instrumentation')!.manifest.exports!)).toEqual(['.', './register']);
    // serve's gRPC door is its own (node:http2): grpc-js is only the tests' client, never installed for users.
    for (const [name, { manifest }] of tarballs)
      expect(Object.keys(manifest.dependencies ?? {}), name).not.toContain('@grpc/grpc-js');
  });

  it('publishes types of the public API only: no @internal member in a declaration file', () => {
    for (const [name, { files, read }] of tarballs) {
      const declarations = [...files].filter((f) => f.startsWith('dist/') && f.endsWith('.d.ts'));
      expect(declarations.length, name).toBeGreaterThan(0);
      for (const file of declarations) expect(read(file), `${name} ${file}`).not.toContain('@internal');
    }
  });

  it('takes OpenTelemetry as ranges, and the API (one per application) as a peer', () => {
    for (const [name, { manifest }] of tarballs) {
      for (const [dep, range] of Object.entries(manifest.dependencies ?? {})) {
        if (!dep.startsWith('@opentelemetry/')) continue;
        expect(dep, name).not.toBe('@opentelemetry/api');
        expect(range, `${name} ${dep}`).toMatch(/^\^\d/);
      }
    }
    // The library uses the application's SDK; only `register` brings one in, from optional peers.
    const instrumentation = tarballs.get('@resumewatch/instrumentation')!.manifest;
    expect(instrumentation.peerDependencies).toEqual({
      '@opentelemetry/api': '^1.9.0',
      '@opentelemetry/exporter-trace-otlp-http': '^0.223.0',
      '@opentelemetry/sdk-node': '^0.223.0',
    });
    expect(instrumentation.peerDependenciesMeta).toEqual({
      '@opentelemetry/exporter-trace-otlp-http': { optional: true },
      '@opentelemetry/sdk-node': { optional: true },
    });
    expect(Object.keys(instrumentation.dependencies ?? {}).filter((dep) => dep.startsWith('@opentelemetry/'))).toEqual([
      '@opentelemetry/instrumentation',
    ]);
  });
});

describe('the CLIs from a clone (root scripts, as the README shows them)', () => {
  it(
    'pnpm resumewatch, pnpm lab and pnpm lab:instrumented run the built CLIs with their arguments',
    { timeout: 120_000 },
    () => {
      expect(run('pnpm', ['resumewatch', '--help'], repoRoot)).toContain('resumewatch serve');
      expect(run('pnpm', ['gateway', '--help'], repoRoot)).toContain('--upstream');
      expect(run('pnpm', ['lab', 'scenarios'], repoRoot).trim().split('\n')).toContain('seed-loop');
      // Spans go nowhere here (nothing listens on port 9), not to whatever listens on 4318 on this machine.
      const output = run('pnpm', ['lab:instrumented', 'run', 'healthy', '--json'], repoRoot, 120_000, {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
      });
      const summary = JSON.parse(output) as { scenario: string };
      expect(summary.scenario).toBe('healthy');
    },
  );
});

const answers = (url: string) => async () =>
  (await fetch(url).then(
    () => true,
    () => false,
  )) || undefined;

function start(
  bin: string,
  args: string[],
  env: Record<string, string> = {},
): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [bin, ...args], {
    cwd: app,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  procs.push(child);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  return { child, output: () => output, exited: new Promise((resolve) => child.on('exit', resolve)) };
}

// An application that knows nothing of resumewatch: the SDK client calls a tool that fails. The SDK
// then resumes the finished request's stream from the error's event id (DEVELOPERS.md).
const APP = `
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
const client = new Client({ name: 'my-app', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(process.env.MCP_URL)));
await client.callTool({ name: 'fail', arguments: {} }).catch((error) => console.log('tool failed:', error.message));
await new Promise((resolve) => setTimeout(resolve, 1500));
await client.close();
`;

describe('installed with npm outside the workspace', () => {
  it(
    "the detector library alone (SpanProcessor, core, decoders) brings none of the daemon's dependencies",
    { timeout: 200_000 },
    () => {
      const lib = join(work, 'library-app');
      mkdirSync(lib);
      writeFileSync(join(lib, 'package.json'), JSON.stringify({ name: 'library-app', private: true, type: 'module' }));
      // The detector and the workspace packages it depends on, as tarballs: what npm would fetch.
      const needed = [
        '@resumewatch/detector',
        ...Object.keys(tarballs.get('@resumewatch/detector')!.manifest.dependencies ?? {}),
      ];
      run(
        'npm',
        ['install', '--no-audit', '--no-fund', '--loglevel=error', ...needed.map((n) => tarballs.get(n)!.path)],
        lib,
        150_000,
      );
      const tree = run('npm', ['ls', '--all', '--parseable'], lib);
      for (const daemonDependency of ['prom-client', '@opentelemetry/sdk-trace-base'])
        expect(tree, daemonDependency).not.toContain(`node_modules/${daemonDependency}`);
      const loaded = run(
        process.execPath,
        [
          '-e',
          "import('@resumewatch/detector').then((m) => console.log(typeof m.ResumewatchSpanProcessor, typeof m.Detector, typeof m.decodeProtobufRequest))",
        ],
        lib,
      );
      expect(loaded.trim()).toBe('function function function');
    },
  );

  it(
    'an unmodified SDK app under --import @resumewatch/instrumentation/register reports to the installed resumewatch serve',
    { timeout: 240_000 },
    async () => {
      mkdirSync(app);
      writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'my-app', private: true, type: 'module' }));
      writeFileSync(join(app, 'app.mjs'), APP);
      const files = [...tarballs.values()].map((t) => t.path);
      run(
        'npm',
        [
          'install',
          '--no-audit',
          '--no-fund',
          '--loglevel=error',
          ...files,
          '@modelcontextprotocol/sdk@1.32.2',
          // What `register` starts (optional peers of the instrumentation): the application installs them.
          '@opentelemetry/sdk-node@^0.223.0',
          '@opentelemetry/exporter-trace-otlp-http@^0.223.0',
        ],
        app,
        200_000,
      );

      const [otlpPort, metricsPort, labPort] = [await freePort(), await freePort(), await freePort()];
      const serve = start(join(app, 'node_modules/.bin/resumewatch'), [
        'serve',
        '--port',
        String(otlpPort),
        '--grpc-port',
        'off',
        '--metrics-port',
        String(metricsPort),
      ]);
      const lab = start(join(app, 'node_modules/.bin/resumewatch-lab'), [
        'server',
        '--port',
        String(labPort),
        '--retry-ms',
        '50',
      ]);
      await waitFor(answers(`http://127.0.0.1:${metricsPort}/healthz`), `resumewatch serve: ${serve.output()}`);
      await waitFor(answers(`http://127.0.0.1:${labPort}/mcp`), `the lab server: ${lab.output()}`);

      const instrumented = spawn(process.execPath, ['--import', '@resumewatch/instrumentation/register', 'app.mjs'], {
        cwd: app,
        env: {
          ...process.env,
          MCP_URL: `http://127.0.0.1:${labPort}/mcp`,
          OTEL_SERVICE_NAME: 'my-app',
          OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlpPort}`,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      procs.push(instrumented);
      let output = '';
      instrumented.stdout.on('data', (d: Buffer) => (output += d.toString()));
      instrumented.stderr.on('data', (d: Buffer) => (output += d.toString()));
      expect(await new Promise((resolve) => instrumented.on('exit', resolve)), output).toBe(0);
      expect(output).toContain('tool failed:');

      const findings = await waitFor(async () => {
        const list = (await (await fetch(`http://127.0.0.1:${metricsPort}/findings`)).json()) as {
          kind: string;
          service: string;
        }[];
        return list.some((f) => f.kind === semconv.FindingKind.RESUME_AFTER_TERMINAL) ? list : undefined;
      }, 'the finding of the SDK app');
      expect(new Set(findings.map((f) => f.service))).toEqual(new Set(['my-app']));

      // The same app, not instrumented, through the installed `resumewatch gateway` in front of the lab
      // server: the gateway's own detector sees the SDK's resume after the error.
      const [gatewayPort, gatewayMetricsPort] = [await freePort(), await freePort()];
      const gateway = start(join(app, 'node_modules/.bin/resumewatch'), [
        'gateway',
        '--upstream',
        `http://127.0.0.1:${labPort}/mcp`,
        '--port',
        String(gatewayPort),
        '--metrics-port',
        String(gatewayMetricsPort),
      ]);
      await waitFor(
        answers(`http://127.0.0.1:${gatewayMetricsPort}/healthz`),
        `resumewatch gateway: ${gateway.output()}`,
      );
      const plain = spawn(process.execPath, ['app.mjs'], {
        cwd: app,
        env: { ...process.env, MCP_URL: `http://127.0.0.1:${gatewayPort}/mcp` },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      procs.push(plain);
      let plainOutput = '';
      plain.stdout.on('data', (d: Buffer) => (plainOutput += d.toString()));
      plain.stderr.on('data', (d: Buffer) => (plainOutput += d.toString()));
      expect(await new Promise((resolve) => plain.on('exit', resolve)), plainOutput).toBe(0);
      expect(plainOutput).toContain('tool failed:');
      await waitFor(async () => {
        const list = (await (await fetch(`http://127.0.0.1:${gatewayMetricsPort}/findings`)).json()) as {
          kind: string;
        }[];
        return list.some((f) => f.kind === semconv.FindingKind.RESUME_AFTER_TERMINAL) || undefined;
      }, `the gateway's finding: ${gateway.output()}`);
    },
  );
});
