import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_MCP_RESUME_EVIDENCE,
  ATTR_MCP_RESUME_OUTCOME,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_TERMINAL_OUTCOME,
  SPAN_REQUEST_TERMINAL,
  SPAN_STREAM_RESUME,
  TRACER_SCOPE,
} from '@resumewatch/semconv';
import { startLabServer } from '@resumewatch/lab';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startOtlpReceiver } from './helpers/otlp-receiver.js';
import type { ReceivedSpan } from './helpers/otlp-receiver.js';
import { startSdkServer } from './helpers/sdk-server.js';
import type { SdkServer } from './helpers/sdk-server.js';
import { WAIT } from './helpers/spans.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const registerEntry = fileURLToPath(new URL('../dist/register.js', import.meta.url));

let server: SdkServer;
beforeAll(async () => {
  server = await startSdkServer();
});
afterAll(async () => {
  await server.close();
});

interface Child {
  code: Promise<number | null>;
  signal: Promise<NodeJS.Signals | null>;
  stdout: () => string;
  stderr: () => string;
  kill(signal: NodeJS.Signals): void;
}

function runNode(args: string[], env: Record<string, string>): Child {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exit = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.on('exit', (code, signal) => resolve([code, signal])),
  );
  return {
    code: exit.then(([code]) => code),
    signal: exit.then(([, signal]) => signal),
    stdout: () => stdout,
    stderr: () => stderr,
    kill: (signal) => child.kill(signal),
  };
}

function expectClientSpans(spans: ReceivedSpan[]): void {
  const ours = spans.filter((s) => s.scope === TRACER_SCOPE);
  expect(ours.filter((s) => s.name === 'tools/call stream_progress')).toHaveLength(1);
  expect(ours.filter((s) => s.name === 'tools/call tool_error')).toHaveLength(1);
  expect(ours.filter((s) => s.name === 'initialize')).toHaveLength(2);
  const terminals = ours.filter((s) => s.name === SPAN_REQUEST_TERMINAL);
  // initialize and one call for each of v1 and v2.
  expect(terminals).toHaveLength(4);
  for (const t of terminals) expect(t.attributes[ATTR_MCP_TERMINAL_OUTCOME]).toBe('result');
  const call = ours.find((s) => s.name === 'tools/call stream_progress')!;
  expect(call.attributes[ATTR_GEN_AI_TOOL_NAME]).toBe('stream_progress');
  expect(call.attributes[ATTR_MCP_SESSION_ID]).toEqual(expect.any(String));
}

const otlpEnv = (endpoint: string) => ({
  MCP_URL: server.url,
  OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  OTEL_SERVICE_NAME: 'esm-app',
  OTEL_TRACES_EXPORTER: '',
  OTEL_BSP_SCHEDULE_DELAY: '100',
});

describe('McpResumeInstrumentation', () => {
  it('ESM: `node --import .../register app.mjs` exports the spans of unchanged SDK v1 and v2 code over OTLP/HTTP', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const child = runNode(['--import', registerEntry, fixture('esm-app.mjs')], otlpEnv(receiver.url));
      expect(await child.code, child.stderr()).toBe(0);
      expectClientSpans(receiver.spans);
      expect(new Set(receiver.spans.map((s) => s.service))).toEqual(new Set(['esm-app']));
    } finally {
      await receiver.close();
    }
  });

  it('register: a poll still held at process.exit() leaves as a poll, exported with the rest, and the exit is not held', async () => {
    const lab = await startLabServer();
    const receiver = await startOtlpReceiver();
    try {
      const child = runNode(['--import', registerEntry, fixture('held-poll-app.mjs')], {
        ...otlpEnv(receiver.url),
        MCP_URL: lab.url,
        OTEL_BSP_SCHEDULE_DELAY: '60000',
      });
      expect(await child.code, child.stderr()).toBe(0);
      expect(child.stdout()).toContain('poll 200 clean');
      // register leaves process.exit() as it is: the exit export runs at 'exit', the script stops at the call.
      expect(child.stdout()).not.toContain('ran past process.exit()');
      const resumes = receiver.spans.filter((s) => s.scope === TRACER_SCOPE && s.name === SPAN_STREAM_RESUME);
      expect(
        resumes.map((s) => [s.attributes[ATTR_MCP_RESUME_OUTCOME], s.attributes[ATTR_MCP_RESUME_EVIDENCE]]),
      ).toEqual([['poll', 'body_end']]);
    } finally {
      await Promise.allSettled([receiver.close(), lab.close()]);
    }
  });

  it('register flushes spans on SIGTERM and lets the process end as SIGTERM ends it', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const child = runNode(['--import', registerEntry, fixture('esm-app.mjs')], {
        ...otlpEnv(receiver.url),
        OTEL_BSP_SCHEDULE_DELAY: '60000',
        WAIT_FOR_SIGTERM: '1',
      });
      await vi.waitFor(() => expect(child.stdout(), 'the app to finish its calls').toContain('ready'), {
        ...WAIT,
        timeout: 20_000,
      });
      expect(receiver.spans).toHaveLength(0);
      child.kill('SIGTERM');
      expect(await child.signal).toBe('SIGTERM');
      expectClientSpans(receiver.spans);
    } finally {
      await receiver.close();
    }
  });

  it('CJS: patches the SDK loaded with require(), leaves a manual instrumentFetch alone, and stops on disable()', async () => {
    const child = runNode([fixture('cjs-app.mjs')], { MCP_URL: server.url });
    expect(await child.code, child.stderr()).toBe(0);
    const spans = child
      .stdout()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { name: string; scope: string; attributes: Record<string, unknown> });
    const count = (name: string) => spans.filter((s) => s.scope === TRACER_SCOPE && s.name === name).length;
    // v1, v2 and the manual client initialized under the instrumentation; the client after disable() did not.
    expect(count('initialize')).toBe(3);
    expect(count('tools/call stream_progress')).toBe(1);
    expect(count('tools/call tool_error')).toBe(1);
    // The manual client's fetch was already instrumented: one request span and one terminal, not two.
    expect(count('tools/call fail')).toBe(1);
    const errors = spans.filter(
      (s) => s.name === SPAN_REQUEST_TERMINAL && s.attributes[ATTR_MCP_TERMINAL_OUTCOME] === 'error',
    );
    expect(errors).toHaveLength(1);
    expect(count(SPAN_REQUEST_TERMINAL)).toBe(6);
  });
});
