import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  InstrumentationBase,
  InstrumentationNodeModuleDefinition,
  InstrumentationNodeModuleFile,
  isWrapped,
} from '@opentelemetry/instrumentation';
import type { FetchLike } from '@resumewatch/wire';
import { Hook } from 'require-in-the-middle';
import { patchGlobalFetch } from './global-fetch.js';
import type { GlobalFetchPatch } from './global-fetch.js';
import { releaseHeldPolls } from './held-polls.js';
import { createIdRecorder } from './id-policy.js';
import { createInstrumentedFetch, isInstrumentedFetch } from './instrument-fetch.js';
import { TRACER_SCOPE } from './semconv.js';
import type { GlobalFetchStats, McpResumeInstrumentationConfig } from './types.js';
import { PACKAGE_VERSION } from './version.js';

const SDK = '@modelcontextprotocol/sdk';
/**
 * What the version matrix (.tav.yml) proves: 1.24.0 is the oldest release the tests pass on. Older
 * transports either take no `fetch` option (before 1.15) or never resume a POST stream (before 1.23).
 */
const SDK_VERSIONS = ['>=1.24.0 <2'];
const SDK_MIN_MINOR = 24;
const SDK_TRANSPORT_FILES = ['dist/cjs/client/streamableHttp.js', 'dist/esm/client/streamableHttp.js'];
/**
 * What CommonJS code requires. The SDK's CJS build has no main entry (its "." export points at a
 * missing dist/cjs/index.js), so require-in-the-middle cannot place files inside the package and the
 * file definitions above never fire for require(); a hook on the exact specifier does.
 */
const SDK_TRANSPORT_REQUIRE_IDS = [`${SDK}/client/streamableHttp.js`];
const CLIENT_V2 = '@modelcontextprotocol/client';
// Proven by the version matrix from 2.0.0 to 2.4.0.
const CLIENT_V2_VERSIONS = ['>=2.0.0 <3'];
/**
 * Every method of StreamableHTTPClientTransport (v1 and v2) that reaches its `_fetch`: each makes sure
 * the transport's fetch goes through instrumentFetch before it runs.
 */
const FETCHING_METHODS = ['send', '_send', '_startOrAuthSse', 'terminateSession'] as const;

interface TransportLike {
  _fetch?: FetchLike;
}

type TransportClass = { prototype: Record<string, unknown> } | undefined;

/**
 * Gives existing code using the MCP SDK's StreamableHTTPClientTransport the spans of instrumentFetch,
 * without changes: the transport's `_fetch` (its `fetch` option, or the global fetch) is wrapped by a
 * per-transport instrumentFetch the first time the transport sends. Patches
 * `@modelcontextprotocol/sdk` 1.x (CJS and ESM builds of client/streamableHttp.js) and
 * `@modelcontextprotocol/client` 2.x. ESM needs the loader hook (`--import .../register`, or
 * `module.register('@opentelemetry/instrumentation/hook.mjs', import.meta.url)` before the SDK loads).
 */
export class McpResumeInstrumentation extends InstrumentationBase<McpResumeInstrumentationConfig> {
  // Declared, not initialised: the base constructor calls enable() before field initialisers run.
  declare private requiredTransports: Set<unknown> | undefined;
  declare private globalFetch: GlobalFetchPatch | undefined;
  declare private transportsInstrumented: number | undefined;

  constructor(config: McpResumeInstrumentationConfig = {}) {
    super(TRACER_SCOPE, PACKAGE_VERSION, config);
    // Bad id options fail here, where they are given, not at a transport's first request.
    createIdRecorder(config);
  }

  override enable(): void {
    super.enable();
    const { globalFetch, requestTimeoutMs, observer, guard, idPolicy, idKey, reissueWindowMs } = this.getConfig();
    if (globalFetch && !this.globalFetch) {
      this.globalFetch = patchGlobalFetch(
        { requestTimeoutMs, observer, guard, idPolicy, idKey, reissueWindowMs },
        () => this.tracer,
        globalFetch === true ? {} : globalFetch,
      );
    }
    if (this.requiredTransports) {
      for (const exports of this.requiredTransports) this.patchTransport(transportClass(exports));
      return;
    }
    const required = new Set<unknown>();
    this.requiredTransports = required;
    new Hook(SDK_TRANSPORT_REQUIRE_IDS, { internals: true }, (exports, _name, basedir) => {
      // The file definitions check SDK_VERSIONS themselves; this hook must too.
      if (!isSupportedSdk(basedir)) {
        this._diag.debug('@modelcontextprotocol/sdk outside the supported range; not patched');
        return exports;
      }
      required.add(exports);
      if (this.isEnabled()) this.patchTransport(transportClass(exports));
      return exports;
    });
  }

  override disable(): void {
    super.disable();
    // Held polls leave as polls (releaseHeldPolls: every one of the process), before the provider shuts down.
    releaseHeldPolls();
    this.globalFetch?.restore();
    this.globalFetch = undefined;
    for (const exports of this.requiredTransports ?? []) this.unpatchTransport(transportClass(exports));
  }

  protected override init(): InstrumentationNodeModuleDefinition[] {
    const patch = (exports: unknown): unknown => {
      this.patchTransport(transportClass(exports));
      return exports;
    };
    const unpatch = (exports: unknown): void => this.unpatchTransport(transportClass(exports));
    return [
      new InstrumentationNodeModuleDefinition(
        SDK,
        SDK_VERSIONS,
        undefined,
        undefined,
        SDK_TRANSPORT_FILES.map(
          (file) => new InstrumentationNodeModuleFile(`${SDK}/${file}`, SDK_VERSIONS, patch, unpatch),
        ),
      ),
      new InstrumentationNodeModuleDefinition(CLIENT_V2, CLIENT_V2_VERSIONS, patch, unpatch),
    ];
  }

  /** Whether anything was instrumented yet (a transport, or an exchange through the global fetch): nothing to flush before. */
  hasRecorded(): boolean {
    return (this.transportsInstrumented ?? 0) > 0 || (this.globalFetch?.stats().exchanges ?? 0) > 0;
  }

  /** State of the global fetch patch (`globalFetch`), or undefined when it is off. */
  globalFetchStats(): GlobalFetchStats | undefined {
    return this.globalFetch?.stats();
  }

  /** Routes a transport's fetch through instrumentFetch; exposed for transports built before enable(). */
  instrumentTransport(transport: object): void {
    const target = transport as TransportLike;
    if (isInstrumentedFetch(target._fetch)) return;
    this.transportsInstrumented = (this.transportsInstrumented ?? 0) + 1;
    const { requestTimeoutMs, observer, guard, idPolicy, idKey, reissueWindowMs } = this.getConfig();
    target._fetch = createInstrumentedFetch(
      target._fetch,
      { requestTimeoutMs, observer, guard, idPolicy, idKey, reissueWindowMs },
      () => this.tracer,
    );
  }

  private patchTransport(cls: TransportClass): void {
    if (!cls) {
      this._diag.debug('StreamableHTTPClientTransport not found; nothing patched');
      return;
    }
    const instrumentation = this;
    for (const name of FETCHING_METHODS) {
      if (typeof cls.prototype[name] !== 'function') continue;
      this._wrap(cls.prototype, name, (original: unknown) => {
        const method = original as (...args: unknown[]) => unknown;
        return function (this: object, ...args: unknown[]): unknown {
          instrumentation.instrumentTransport(this);
          return method.apply(this, args);
        };
      });
    }
  }

  private unpatchTransport(cls: TransportClass): void {
    if (!cls) return;
    for (const name of FETCHING_METHODS) if (isWrapped(cls.prototype[name])) this._unwrap(cls.prototype, name);
  }
}

/** Whether the SDK package in `basedir` is in SDK_VERSIONS (>=1.24.0 <2). Unknown: patch, as before. */
export function isSupportedSdk(basedir: string | undefined): boolean {
  if (!basedir) return true;
  let version: unknown;
  try {
    version = (JSON.parse(readFileSync(join(basedir, 'package.json'), 'utf8')) as { version?: unknown }).version;
  } catch {
    return true;
  }
  const match = typeof version === 'string' ? /^(\d+)\.(\d+)\./.exec(version) : null;
  if (!match) return true;
  return Number(match[1]) === 1 && Number(match[2]) >= SDK_MIN_MINOR;
}

function transportClass(exports: unknown): TransportClass {
  const cls = (exports as { StreamableHTTPClientTransport?: unknown } | null)?.StreamableHTTPClientTransport;
  return typeof cls === 'function' ? (cls as unknown as TransportClass) : undefined;
}
