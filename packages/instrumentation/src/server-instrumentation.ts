import {
  InstrumentationBase,
  InstrumentationNodeModuleDefinition,
  InstrumentationNodeModuleFile,
  isWrapped,
} from '@opentelemetry/instrumentation';
import type { InstrumentationConfig } from '@opentelemetry/instrumentation';
import { trace } from '@opentelemetry/api';
import type { TracerProvider } from '@opentelemetry/api';
import { instrumentEventStore, isInstrumentedEventStore } from './event-store.js';
import type { EventStoreLike, ServerTransportLike } from './types.js';
import { TRACER_SCOPE } from './semconv.js';
import { instrumentServerTransport, isInstrumentedServerTransport } from './server-transport.js';
import { PACKAGE_VERSION } from './version.js';

const SDK = '@modelcontextprotocol/sdk';
const SDK_VERSIONS = ['>=1.10.0 <2'];
/** The web-standard transport does the work of both server transports (the Node one delegates to it). */
const SDK_SERVER_FILES = [
  'dist/esm/server/webStandardStreamableHttp.js',
  'dist/cjs/server/webStandardStreamableHttp.js',
];

export interface McpServerInstrumentationConfig extends InstrumentationConfig {
  /** Longest a server request span stays open without a response. Default 300000 ms. */
  requestTimeoutMs?: number;
}

interface ServerTransport extends ServerTransportLike {
  _eventStore?: EventStoreLike;
}

/**
 * Server side of `register`: every `WebStandardStreamableHTTPServerTransport` of the MCP SDK 1.x (and
 * so every `StreamableHTTPServerTransport`, which delegates to one) gets `instrumentServerTransport`
 * and its event store `instrumentEventStore`, the first time it handles a request. A store shared by
 * several transports is instrumented once and its spans carry no session id (it cannot be told which
 * session a replay serves).
 */
export class McpServerInstrumentation extends InstrumentationBase<McpServerInstrumentationConfig> {
  declare private seen: WeakSet<object> | undefined;
  declare private storeOwners: WeakMap<object, ServerTransport | null> | undefined;
  declare private tracerProvider: TracerProvider | undefined;
  declare private transportsInstrumented: number | undefined;

  constructor(config: McpServerInstrumentationConfig = {}) {
    super(`${TRACER_SCOPE}/server`, PACKAGE_VERSION, config);
  }

  protected override init(): InstrumentationNodeModuleDefinition[] {
    const patch = (exports: unknown): unknown => {
      this.patchClass(exports);
      return exports;
    };
    const unpatch = (exports: unknown): void => {
      const cls = transportClass(exports);
      if (cls && isWrapped(cls.prototype.handleRequest)) this._unwrap(cls.prototype, 'handleRequest');
    };
    return [
      new InstrumentationNodeModuleDefinition(
        SDK,
        SDK_VERSIONS,
        undefined,
        undefined,
        SDK_SERVER_FILES.map(
          (file) => new InstrumentationNodeModuleFile(`${SDK}/${file}`, SDK_VERSIONS, patch, unpatch),
        ),
      ),
    ];
  }

  /** Instruments a server transport and its event store in place, once; exposed for transports the patch cannot reach. */
  instrumentTransport(transport: object): void {
    this.seen ??= new WeakSet();
    if (this.seen.has(transport)) return;
    this.seen.add(transport);
    this.transportsInstrumented = (this.transportsInstrumented ?? 0) + 1;
    const target = transport as ServerTransport;
    const tracerProvider = this.provider();
    // Left alone where the application instrumented them itself (instrumentServerTransport, instrumentEventStore).
    if (!isInstrumentedServerTransport(target)) {
      instrumentServerTransport(target, { tracerProvider, requestTimeoutMs: this.getConfig().requestTimeoutMs });
    }
    const store = target._eventStore;
    if (!store) return;
    this.storeOwners ??= new WeakMap();
    const owners = this.storeOwners;
    if (owners.has(store)) {
      owners.set(store, null); // shared: no single session to name
      return;
    }
    if (isInstrumentedEventStore(store)) return;
    owners.set(store, target);
    instrumentEventStore(store, { tracerProvider, sessionId: () => owners.get(store)?.sessionId });
  }

  /** Whether a server transport was instrumented yet: nothing to flush before. */
  hasRecorded(): boolean {
    return (this.transportsInstrumented ?? 0) > 0;
  }

  override setTracerProvider(tracerProvider: TracerProvider): void {
    super.setTracerProvider(tracerProvider);
    this.tracerProvider = tracerProvider;
  }

  /** The provider the SDK gave this instrumentation; the spans keep the package's tracer scope. */
  private provider(): TracerProvider {
    return this.tracerProvider ?? trace.getTracerProvider();
  }

  private patchClass(exports: unknown): void {
    const cls = transportClass(exports);
    if (!cls) {
      this._diag.debug('WebStandardStreamableHTTPServerTransport not found; nothing patched');
      return;
    }
    const instrumentation = this;
    this._wrap(cls.prototype, 'handleRequest', (original: unknown) => {
      const method = original as (...args: unknown[]) => unknown;
      return function (this: object, ...args: unknown[]): unknown {
        if (instrumentation.isEnabled()) instrumentation.instrumentTransport(this);
        return method.apply(this, args);
      };
    });
  }
}

function transportClass(exports: unknown): { prototype: Record<string, unknown> } | undefined {
  const cls = (exports as { WebStandardStreamableHTTPServerTransport?: unknown } | null)
    ?.WebStandardStreamableHTTPServerTransport;
  return typeof cls === 'function' ? (cls as unknown as { prototype: Record<string, unknown> }) : undefined;
}
