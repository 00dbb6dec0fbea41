/**
 * How the ids that can act as credentials are recorded on spans: the session id ATTR_MCP_SESSION_ID
 * (an `Mcp-Session-Id` lets whoever holds it act in the session) and the cursors
 * ATTR_MCP_RESUME_LAST_EVENT_ID and ATTR_MCP_EVENT_ID (event ids of many servers embed stream or
 * session ids), and the task id ATTR_MCP_TASK_ID (whoever holds it can read the task's result).
 *
 * - `raw` (the semantic conventions' choice, the default): the ids as sent.
 * - `hmac`: HMAC-SHA256 of the id under a key, truncated to 128 bits, hex (32 characters). One id always
 *   maps to one value under one key, so the detector still groups by session and matches a cursor to the
 *   event it names; processes that must correlate (client and server, detector replicas) share the key.
 *   Without the key the value cannot be turned back into the id, nor checked against a guessed one.
 * - `omit`: the attributes are not recorded; findings that need a session (all but a few) are lost.
 *
 * The policy is applied by wrapping the tracer (`withIdPolicy`), so every span of this package goes
 * through it whichever code path sets the attribute: at start, or later with setAttribute(s).
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { Attributes, AttributeValue, Context, Span, SpanOptions, Tracer } from '@opentelemetry/api';
import { ATTR_MCP_EVENT_ID, ATTR_MCP_RESUME_LAST_EVENT_ID, ATTR_MCP_SESSION_ID, ATTR_MCP_TASK_ID } from './semconv.js';
import type { TracerSource } from './tracer-source.js';
import { isRecordTracer, type RecordTracer } from './record-tracer.js';
import type { IdPolicy, IdPolicyOptions } from './types.js';

const ID_POLICIES: readonly IdPolicy[] = ['raw', 'hmac', 'omit'];

/** Environment variables the policy is read from when the options leave it unset. */
export const ENV_ID_POLICY = 'RESUMEWATCH_ID_POLICY';
export const ENV_ID_KEY = 'RESUMEWATCH_ID_KEY';

/** Shortest accepted HMAC key, in bytes: a short key can be found by trying keys against a known id. */
const MIN_ID_KEY_BYTES = 16;

/** The attributes the policy applies to. */
const ID_ATTRIBUTES: ReadonlySet<string> = new Set([
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_RESUME_LAST_EVENT_ID,
  ATTR_MCP_EVENT_ID,
  // A task id lets whoever holds it read the task's result (2025-11-25: bound to the session only if the server does).
  ATTR_MCP_TASK_ID,
]);

/** Bad id options: the message says which and how to fix it, and never carries the key. */
export class IdPolicyError extends Error {
  override readonly name = 'IdPolicyError';
}

/** How ids are recorded, resolved once per instrumented fetch, store or transport. */
export interface IdRecorder {
  readonly policy: IdPolicy;
  /** Rewrites (hmac) or removes (omit) the id attributes in place; nothing under raw. */
  recordIds(attributes: Attributes): void;
  /** The recorded value of one id attribute, or undefined when it is not recorded. */
  value(key: string, value: AttributeValue): AttributeValue | undefined;
  /**
   * The key of the keyed digests (the request arguments digest): the HMAC key under `hmac`, else a
   * random key of this process, which only needs to compare one client's requests with each other.
   */
  readonly digestKey: string | Uint8Array;
}

/** The digest key of the policies without a key of their own: random, never leaves the process. */
const PROCESS_DIGEST_KEY = randomBytes(32);

const RAW: IdRecorder = {
  policy: 'raw',
  recordIds() {},
  value: (_key, value) => value,
  digestKey: PROCESS_DIGEST_KEY,
};

/**
 * The options (or, where unset, RESUMEWATCH_ID_POLICY / RESUMEWATCH_ID_KEY) as a recorder. Throws
 * IdPolicyError on an unknown policy, or `hmac` without a key of at least 16 bytes.
 */
export function createIdRecorder(options: IdPolicyOptions = {}, env: NodeJS.ProcessEnv = process.env): IdRecorder {
  const policy = options.idPolicy ?? parsePolicy(env[ENV_ID_POLICY]);
  if (!ID_POLICIES.includes(policy))
    throw new IdPolicyError(`unknown idPolicy "${String(policy)}" (use raw, hmac or omit)`);
  if (policy === 'raw') return RAW;
  if (policy === 'omit') return omitRecorder();
  const key = options.idKey ?? env[ENV_ID_KEY];
  const bytes = key === undefined ? 0 : typeof key === 'string' ? Buffer.byteLength(key) : key.byteLength;
  if (bytes < MIN_ID_KEY_BYTES) {
    throw new IdPolicyError(
      `idPolicy "hmac" needs a key of at least ${MIN_ID_KEY_BYTES} bytes (option idKey or ${ENV_ID_KEY}); ` +
        (key === undefined ? 'none is set' : `it has ${bytes}`),
    );
  }
  return hmacRecorder(key!);
}

/** The policy named by RESUMEWATCH_ID_POLICY; unset or empty is raw. */
function parsePolicy(text: string | undefined): IdPolicy {
  const trimmed = text?.trim().toLowerCase();
  if (!trimmed) return 'raw';
  if ((ID_POLICIES as readonly string[]).includes(trimmed)) return trimmed as IdPolicy;
  throw new IdPolicyError(`${ENV_ID_POLICY}="${text}" is not a policy (use raw, hmac or omit)`);
}

function omitRecorder(): IdRecorder {
  return {
    policy: 'omit',
    recordIds(attributes) {
      for (const key of ID_ATTRIBUTES) delete attributes[key];
    },
    value: (key, value) => (ID_ATTRIBUTES.has(key) ? undefined : value),
    digestKey: PROCESS_DIGEST_KEY,
  };
}

function hmacRecorder(key: string | Uint8Array): IdRecorder {
  // One memo per attribute: a client's spans repeat its session id, and a resume's cursor is usually
  // the last event id recorded, so most spans hash nothing.
  const memo = new Map<string, { id: string; hash: string }>();
  for (const attribute of ID_ATTRIBUTES) memo.set(attribute, { id: '', hash: '' });
  const hashed = (attribute: string, value: AttributeValue): AttributeValue => {
    if (typeof value !== 'string') return value;
    const last = memo.get(attribute)!;
    if (value !== last.id || last.hash === '') {
      last.id = value;
      last.hash = createHmac('sha256', key).update(value).digest('hex').slice(0, 32);
    }
    return last.hash;
  };
  return {
    policy: 'hmac',
    recordIds(attributes) {
      for (const attribute of ID_ATTRIBUTES) {
        const value = attributes[attribute];
        if (value !== undefined) attributes[attribute] = hashed(attribute, value);
      }
    },
    value: (attribute, value) => (ID_ATTRIBUTES.has(attribute) ? hashed(attribute, value) : value),
    digestKey: key,
  };
}

/**
 * The tracer source with the policy applied to every span it starts: attributes given at start are
 * rewritten before the span sees them, and the span's setAttribute/setAttributes rewrite theirs. Under
 * `raw` the source is returned as it is, at no cost.
 */
export function withIdPolicy(source: TracerSource, ids: IdRecorder): TracerSource {
  if (ids.policy === 'raw') return source;
  const wrapped = new WeakMap<Tracer, Tracer>();
  return () => {
    const tracer = source();
    let wrapper = wrapped.get(tracer);
    if (!wrapper) {
      wrapper = policyTracer(tracer, ids);
      wrapped.set(tracer, wrapper);
    }
    return wrapper;
  };
}

function policyTracer(tracer: Tracer, ids: IdRecorder): Tracer {
  const startSpan = (name: string, options?: SpanOptions, context?: Context): Span => {
    if (options?.attributes) ids.recordIds(options.attributes);
    return guardSpan(tracer.startSpan(name, options, context), ids);
  };
  // A record tracer stays one (record-tracer.ts), its spans under the policy as any other's.
  const record: Partial<RecordTracer> = isRecordTracer(tracer)
    ? {
        startRecordSpan: (name, options, parent, active) => {
          if (options.attributes) ids.recordIds(options.attributes);
          return guardSpan(tracer.startRecordSpan(name, options, parent, active), ids);
        },
      }
    : {};
  return {
    ...record,
    startSpan,
    // Not used by this package; kept correct for anyone handed the tracer.
    startActiveSpan: ((name: string, ...rest: unknown[]) => {
      const fn = rest.pop() as (span: Span) => unknown;
      const options = rest[0] as SpanOptions | undefined;
      const ctx = rest[1] as Context | undefined;
      if (options?.attributes) ids.recordIds(options.attributes);
      return tracer.startActiveSpan(name, options ?? {}, ctx as Context, (span: Span) => fn(guardSpan(span, ids)));
    }) as Tracer['startActiveSpan'],
  };
}

/**
 * Later setAttribute(s) calls on the span go through the policy. The span's own methods are shadowed
 * on the instance and call the originals directly, so no SDK-internal path applies the policy twice.
 */
function guardSpan(span: Span, ids: IdRecorder): Span {
  if (!span.isRecording()) return span;
  const setAttribute = span.setAttribute;
  span.setAttribute = function (key: string, value: AttributeValue): Span {
    const recorded = ids.value(key, value);
    return recorded === undefined ? this : setAttribute.call(this, key, recorded);
  };
  span.setAttributes = function (attributes: Attributes): Span {
    for (const key of Object.keys(attributes)) {
      const value = attributes[key];
      if (value === undefined) continue;
      const recorded = ids.value(key, value);
      if (recorded !== undefined) setAttribute.call(this, key, recorded);
    }
    return this;
  };
  return span;
}

/**
 * The id options of the environment (RESUMEWATCH_ID_POLICY, RESUMEWATCH_ID_KEY), for the register entry.
 * A bad setting must neither stop the application nor leak ids: it is reported once on stderr as a
 * process warning and the ids are omitted.
 */
export function idOptionsFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  warn: (message: string) => void = (message) => process.emitWarning(message, 'ResumewatchConfigWarning'),
): IdPolicyOptions {
  try {
    const ids = createIdRecorder({}, env);
    return ids.policy === 'hmac' ? { idPolicy: 'hmac', idKey: env[ENV_ID_KEY] } : { idPolicy: ids.policy };
  } catch (error) {
    if (!(error instanceof IdPolicyError)) throw error;
    warn(`resumewatch: ${error.message}; recording no ids (idPolicy "omit")`);
    return { idPolicy: 'omit' };
  }
}
