import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { runScenario } from '@resumewatch/lab';
import type { LabServer } from '@resumewatch/lab';
import {
  ATTR_MCP_EVENT_ID,
  ATTR_MCP_RESUME_LAST_EVENT_ID,
  ATTR_MCP_SESSION_ID,
  SPAN_REQUEST_TERMINAL,
  SPAN_STREAM_RESUME,
  TRACER_SCOPE,
} from '@resumewatch/semconv';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createIdRecorder } from '../src/id-policy.js';
import { ENV_ID_KEY, ENV_ID_POLICY, IdPolicyError, idOptionsFromEnv } from '../src/index.js';
import type { IdPolicyOptions } from '../src/index.js';
import { capturedFetch, captureSpans, IDLE, WAIT } from './helpers/spans.js';
import type { SpanCapture } from './helpers/spans.js';
import { IdLedger, hmacId, startIdLedgerLab } from './helpers/id-ledger.js';
import { startOtlpReceiver } from './helpers/otlp-receiver.js';
import type { ReceivedSpan } from './helpers/otlp-receiver.js';
import { startSdkServer } from './helpers/sdk-server.js';

const KEY = 'a key of the test, 32 bytes long';
const hmac = (id: string): string => hmacId(KEY, id);
const ID_ATTRIBUTES = [ATTR_MCP_SESSION_ID, ATTR_MCP_RESUME_LAST_EVENT_ID, ATTR_MCP_EVENT_ID];

describe('createIdRecorder', () => {
  it('is raw by default and takes the policy and key from the environment when the options leave them unset', () => {
    expect(createIdRecorder({}, {}).policy).toBe('raw');
    expect(createIdRecorder({}, { [ENV_ID_POLICY]: '' }).policy).toBe('raw');
    expect(createIdRecorder({}, { [ENV_ID_POLICY]: 'omit' }).policy).toBe('omit');
    const fromEnv = createIdRecorder({}, { [ENV_ID_POLICY]: 'HMAC', [ENV_ID_KEY]: KEY });
    expect(fromEnv.value(ATTR_MCP_SESSION_ID, 'abc')).toBe(hmac('abc'));
    // The options win over the environment.
    expect(createIdRecorder({ idPolicy: 'raw' }, { [ENV_ID_POLICY]: 'omit' }).policy).toBe('raw');
  });

  it('hashes (hmac) or drops (omit) exactly the three id attributes', () => {
    const attributes = () => ({
      [ATTR_MCP_SESSION_ID]: 's-1',
      [ATTR_MCP_RESUME_LAST_EVENT_ID]: 'e-1',
      [ATTR_MCP_EVENT_ID]: 'e-2',
      other: 'x',
    });
    const hashed = attributes();
    createIdRecorder({ idPolicy: 'hmac', idKey: KEY }, {}).recordIds(hashed);
    expect(hashed).toEqual({
      [ATTR_MCP_SESSION_ID]: hmac('s-1'),
      [ATTR_MCP_RESUME_LAST_EVENT_ID]: hmac('e-1'),
      [ATTR_MCP_EVENT_ID]: hmac('e-2'),
      other: 'x',
    });
    const omitted = attributes();
    createIdRecorder({ idPolicy: 'omit' }, {}).recordIds(omitted);
    expect(omitted).toEqual({ other: 'x' });
    // A key as bytes hashes as the same string would.
    expect(createIdRecorder({ idPolicy: 'hmac', idKey: Buffer.from(KEY) }, {}).value(ATTR_MCP_EVENT_ID, 'e-2')).toBe(
      hmac('e-2'),
    );
  });

  it('rejects an unknown policy and an hmac without a long enough key, in one line that never shows the key', () => {
    expect(() => createIdRecorder({}, { [ENV_ID_POLICY]: 'sha1' })).toThrow(
      new IdPolicyError('RESUMEWATCH_ID_POLICY="sha1" is not a policy (use raw, hmac or omit)'),
    );
    expect(() => createIdRecorder({ idPolicy: 'hash' as never }, {})).toThrow(
      new IdPolicyError('unknown idPolicy "hash" (use raw, hmac or omit)'),
    );
    expect(() => createIdRecorder({ idPolicy: 'hmac' }, {})).toThrow(
      new IdPolicyError(
        'idPolicy "hmac" needs a key of at least 16 bytes (option idKey or RESUMEWATCH_ID_KEY); none is set',
      ),
    );
    expect(() => createIdRecorder({ idPolicy: 'hmac', idKey: 'secret-7' }, {})).toThrow(
      new IdPolicyError(
        'idPolicy "hmac" needs a key of at least 16 bytes (option idKey or RESUMEWATCH_ID_KEY); it has 8',
      ),
    );
    expect(() => capturedFetch({ idPolicy: 'hmac', idKey: 'short' })).toThrow(IdPolicyError);
  });

  it('idOptionsFromEnv (the register entry): a bad setting warns once and omits ids instead of stopping the application', () => {
    const warnings: string[] = [];
    const warn = (message: string) => warnings.push(message);
    expect(idOptionsFromEnv({ [ENV_ID_POLICY]: 'hmac', [ENV_ID_KEY]: KEY }, warn)).toEqual({
      idPolicy: 'hmac',
      idKey: KEY,
    });
    expect(idOptionsFromEnv({}, warn)).toEqual({ idPolicy: 'raw' });
    expect(warnings).toEqual([]);
    expect(idOptionsFromEnv({ [ENV_ID_POLICY]: 'hmac', [ENV_ID_KEY]: 'too-short' }, warn)).toEqual({
      idPolicy: 'omit',
    });
    expect(warnings).toEqual([
      'resumewatch: idPolicy "hmac" needs a key of at least 16 bytes (option idKey or RESUMEWATCH_ID_KEY); it has 9; recording no ids (idPolicy "omit")',
    ]);
  });
});

// The lab over real HTTP; its stores record every event id they hand out and the session they serve.
let lab: LabServer;
let serverCapture: SpanCapture;
let serverIds: IdPolicyOptions = {};
const ledger = new IdLedger();
const { sessions, eventIds } = ledger;

beforeAll(async () => {
  serverCapture = captureSpans();
  lab = await startIdLedgerLab(ledger, () => ({ tracerProvider: serverCapture.provider, ids: serverIds }));
});
afterAll(async () => {
  await lab.close();
});
afterEach(() => {
  ledger.clear();
  serverCapture.reset();
});

/** Every raw id of the run found anywhere in the spans' attributes. */
function leaked(spans: ReadableSpan[]): string[] {
  return ledger.leaks(JSON.stringify(spans.map((s) => s.attributes)));
}

async function seedLoop(
  ids: IdPolicyOptions,
): Promise<{ client: ReadableSpan[]; server: ReadableSpan[]; sessionId: string }> {
  serverIds = ids;
  const { capture, fetch } = capturedFetch({ ...ids });
  const summary = await runScenario('seed-loop', { serverUrl: lab.url, fetch, maxReconnects: 10 });
  await vi.waitFor(
    () => expect([fetch.stats().openResumes, fetch.stats().pendingHttp], 'the resume spans to end').toEqual([0, 0]),
    WAIT,
  );
  expect(fetch.stats()).toEqual(IDLE);
  expect(sessions).toEqual(new Set([summary.sessionId]));
  expect(eventIds.size).toBeGreaterThan(2);
  return { client: capture.spans(), server: serverCapture.spans(), sessionId: summary.sessionId! };
}

describe('id policy on the spans of the seed loop (client instrumentFetch, server instrumentEventStore and instrumentServerTransport)', () => {
  it('raw: the ids as sent (the baseline the other policies are checked against)', async () => {
    const { client, server, sessionId } = await seedLoop({ idPolicy: 'raw' });
    expect(leaked(client)).toContain(sessionId);
    expect(leaked(server)).toContain(sessionId);
    const resumes = client.filter((s) => s.name === SPAN_STREAM_RESUME);
    expect(resumes.length).toBeGreaterThan(1);
    for (const r of resumes) expect(eventIds).toContain(r.attributes[ATTR_MCP_RESUME_LAST_EVENT_ID]);
  });

  it('hmac: no raw session or event id on any span; each id is its keyed hash, so cursors still match the events they name', async () => {
    const { client, server, sessionId } = await seedLoop({ idPolicy: 'hmac', idKey: KEY });
    expect(leaked(client)).toEqual([]);
    expect(leaked(server)).toEqual([]);
    for (const span of [...client, ...server]) {
      const session = span.attributes[ATTR_MCP_SESSION_ID];
      if (session !== undefined) expect(session, span.name).toBe(hmac(sessionId));
    }
    // Every span but the initialize request's own (whose session id comes with its response) carries the session.
    expect(client.filter((s) => s.attributes[ATTR_MCP_SESSION_ID] === undefined).map((s) => s.name)).toEqual(
      client
        .filter((s) => s.name === 'initialize' && s.attributes[ATTR_MCP_SESSION_ID] === undefined)
        .map((s) => s.name),
    );
    const hashedEvents = new Map([...eventIds].map((id) => [hmac(id), id]));
    const terminals = client.filter(
      (s) => s.name === SPAN_REQUEST_TERMINAL && s.attributes[ATTR_MCP_EVENT_ID] !== undefined,
    );
    expect(terminals.length).toBeGreaterThan(1);
    for (const t of terminals) expect(hashedEvents.has(t.attributes[ATTR_MCP_EVENT_ID] as string)).toBe(true);
    const resumes = [...client, ...server].filter((s) => s.name === SPAN_STREAM_RESUME);
    expect(resumes.length).toBeGreaterThan(2);
    for (const r of resumes)
      expect(hashedEvents.has(r.attributes[ATTR_MCP_RESUME_LAST_EVENT_ID] as string), r.name).toBe(true);
  });

  it('omit: none of the three id attributes on any span', async () => {
    const { client, server } = await seedLoop({ idPolicy: 'omit' });
    expect(client.length).toBeGreaterThan(5);
    expect(server.length).toBeGreaterThan(2);
    for (const span of [...client, ...server])
      for (const key of ID_ATTRIBUTES) expect(span.attributes[key], `${span.name} ${key}`).toBeUndefined();
    expect(leaked([...client, ...server])).toEqual([]);
  });
});

describe('register reads the id policy from the environment', () => {
  const registerEntry = fileURLToPath(new URL('../dist/register.js', import.meta.url));
  const app = fileURLToPath(new URL('./fixtures/esm-app.mjs', import.meta.url));

  async function runApp(env: Record<string, string>): Promise<{ spans: ReceivedSpan[]; stderr: string }> {
    const receiver = await startOtlpReceiver();
    const server = await startSdkServer();
    try {
      const child = spawn(process.execPath, ['--import', registerEntry, app], {
        env: {
          ...process.env,
          MCP_URL: server.url,
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_TRACES_EXPORTER: '',
          OTEL_BSP_SCHEDULE_DELAY: '100',
          ...env,
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code, stderr).toBe(0);
      return { spans: receiver.spans.filter((s) => s.scope === TRACER_SCOPE), stderr };
    } finally {
      await Promise.all([receiver.close(), server.close()]);
    }
  }

  // Two child processes one after the other, each loading the OpenTelemetry SDK: a loaded machine once
  // took 30 s over both.
  it(
    'RESUMEWATCH_ID_POLICY=hmac with RESUMEWATCH_ID_KEY: every session id is a 32-hex keyed hash; a bad key warns and omits ids',
    { timeout: 90_000 },
    async () => {
      const hashed = await runApp({ [ENV_ID_POLICY]: 'hmac', [ENV_ID_KEY]: KEY });
      const sessions = new Set(
        hashed.spans.map((s) => s.attributes[ATTR_MCP_SESSION_ID]).filter((v) => v !== undefined),
      );
      // One v1 and one v2 session.
      expect(sessions.size).toBe(2);
      for (const s of sessions) expect(s).toMatch(/^[0-9a-f]{32}$/);

      const bad = await runApp({ [ENV_ID_POLICY]: 'hmac', [ENV_ID_KEY]: 'short' });
      expect(bad.spans.length).toBe(hashed.spans.length);
      for (const span of bad.spans) for (const key of ID_ATTRIBUTES) expect(span.attributes[key]).toBeUndefined();
      expect(bad.stderr).toContain(
        'ResumewatchConfigWarning: resumewatch: idPolicy "hmac" needs a key of at least 16 bytes',
      );
      expect(bad.stderr).not.toContain('short');
    },
  );
});
