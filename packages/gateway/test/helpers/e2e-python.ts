import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// The Python MCP SDK (mcp 2.3.0), installed offline from ../shared/wheels (beside the clone, see its
// README) into a virtual environment kept in the system's temp folder between runs: the first install
// takes 30 to 60 s on a loaded machine, later runs reuse it. Built in a private folder and renamed into
// place, so two runs at once never use a half-installed one.

const HERE = dirname(fileURLToPath(import.meta.url));
const WHEELS = resolve(HERE, '../../../../../shared/wheels/python-mcp-2.3.0');
const PYTHON_PEER = join(HERE, 'python', 'e2e_peer.py');
const VENV = join(tmpdir(), 'resumewatch-gateway-e2e-python-mcp-2.3.0');
const venvPython = (venv: string): string => join(venv, 'bin', 'python');

/** Why the Python SDK cannot run here (one line), or undefined when it can. Cheap: installs nothing. */
export function pythonUnavailable(): string | undefined {
  if (!existsSync(WHEELS)) return `no ${WHEELS} (the offline wheels of mcp 2.3.0 are on the team's machines and in CI)`;
  if (existsSync(venvPython(VENV))) return undefined;
  const probe = spawnSync('python3', ['-c', 'import venv, ensurepip'], { encoding: 'utf8', timeout: 20_000 });
  if (probe.error) return `python3 cannot run (${probe.error.message})`;
  if (probe.status !== 0) return `python3 -m venv is unavailable (${probe.stderr.trim().split('\n').at(-1)})`;
  return undefined;
}

/** The virtual environment's python, with mcp 2.3.0 installed (installs it the first time). */
export function pythonWithMcp(): string {
  if (existsSync(venvPython(VENV))) return venvPython(VENV);
  const building = mkdtempSync(`${VENV}-building-`);
  try {
    const run = (cmd: string, args: string[]): void => {
      const r = spawnSync(cmd, args, {
        encoding: 'utf8',
        timeout: 150_000,
        env: { ...process.env, PIP_CONFIG_FILE: '/dev/null', PIP_DISABLE_PIP_VERSION_CHECK: '1' },
      });
      if (r.status !== 0)
        throw new Error(`${cmd} ${args.join(' ')} failed: ${r.error?.message ?? r.stderr.slice(-500)}`);
    };
    run('python3', ['-m', 'venv', building]);
    run(venvPython(building), ['-m', 'pip', 'install', '-q', '--no-index', '--find-links', WHEELS, 'mcp==2.3.0']);
    // A venv's scripts name its folder: it is used from where it was built, then published by a rename.
    try {
      renameSync(building, VENV);
    } catch {
      // Another run published one first.
      rmSync(building, { recursive: true, force: true });
    }
  } catch (error) {
    rmSync(building, { recursive: true, force: true });
    throw error;
  }
  return venvPython(VENV);
}

export interface PythonServer {
  url: string;
  child: ChildProcess;
  stop(): void;
}

/**
 * Starts a Python MCP server (the peer script's, or `script` with `args`); resolves with its MCP
 * endpoint once it printed `listening <port>`.
 */
export function startPythonServer(
  python: string,
  script: string = PYTHON_PEER,
  args: readonly string[] = ['server'],
): Promise<PythonServer> {
  const child = spawn(python, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => fail(new Error(`the Python SDK server did not listen within 20 s: ${output.slice(-500)}`)),
      20_000,
    );
    function fail(error: Error): void {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    }
    child.once('exit', (code) => fail(new Error(`the Python SDK server exited (${code}): ${output.slice(-500)}`)));
    child.stderr!.on('data', (chunk: Buffer) => void (output = (output + chunk.toString('utf8')).slice(-8192)));
    child.stdout!.on('data', (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-8192);
      const port = /listening (\d+)/.exec(output)?.[1];
      if (port === undefined) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolve({ url: `http://127.0.0.1:${port}/mcp`, child, stop: () => void child.kill('SIGTERM') });
    });
  });
}

interface PythonClientRun {
  texts: string[];
  progress: number[];
  protocolVersion: string | null;
}

/** Runs the peer script's client against `url` (`legacy`: sessions; `auto`: 2026-07-28 where spoken; `lab`: a lab server's tools). */
export function runPythonClient(
  python: string,
  url: string,
  mode: 'legacy' | 'auto',
  options: { lab?: boolean } = {},
): Promise<PythonClientRun> {
  const child = spawn(python, [PYTHON_PEER, 'client', url, mode, ...(options.lab ? ['lab'] : [])], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => void (stdout += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => void (stderr = (stderr + chunk.toString('utf8')).slice(-4096)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const line = stdout.trim().split('\n').at(-1) ?? '';
      if (code === 0 && line.startsWith('{')) resolve(JSON.parse(line) as PythonClientRun);
      else reject(new Error(`the Python SDK client exited (${code}): ${stderr.slice(-1000)}`));
    });
  });
}
