import type { ModernLabServerOptions } from '../modern/server.js';
import type { FetchLike } from '../mcp-http-client.js';
import type { ScenarioClient } from './sdk-clients.js';
import type { TaskLabServerOptions } from '../tasks/task-server.js';

export interface ScenarioOptions {
  /** The lab server's MCP endpoint, e.g. http://127.0.0.1:P/mcp */
  serverUrl: string;
  /** The lab's control endpoint. Default: /control on the server's origin. */
  controlUrl?: string;
  /** Every MCP request of the scenario goes through this fetch. Default globalThis.fetch. */
  fetch?: FetchLike;
  /** Safety cap on reconnects in looping scenarios. Default 20. */
  maxReconnects?: number;
  /**
   * The MCP client: `raw` (default), `sdk` (SDK 1.x) or `sdk-v2`. Scenarios whose steps an SDK client
   * cannot take (the seed loop, the lab's raw protocol checks) only run with `raw` and reject others.
   */
  client?: ScenarioClient;
  /**
   * How long a client whose resumed request came back without its result keeps waiting for it before
   * giving the request up (server-restart, resume-loses-result: then it deletes its session; with an SDK
   * client, resume-loses-result's call timeout). Default 3000 ms: past the
   * short request deadline (`requestTimeoutMs`, RESUMEWATCH_REQUEST_TIMEOUT_MS) the lab's tests and
   * compose services give the instrumentation, so that the deadline, not the DELETE, ends the wait.
   */
  resultWaitMs?: number;
  /**
   * The 2026-07-28 scenarios' own v2 lab server: `decorateServer` (e.g. to instrument its server side);
   * `idempotencyMetaKey`, under which its `charge_once` reads a call's idempotency key (then
   * `modern-broken-reissue` calls `charge_once`, the same charge behind the key check).
   */
  modernServer?: ModernServerOptions;
  /** The task scenarios (`task-*`, `modern-task-*`): their server's ttl, poll interval and work, and the re-issue's key. */
  tasks?: TaskScenarioOptions;
  /** The loop scenarios (`dead-session-*`, `listening-stream-*`). */
  loops?: LoopScenarioOptions;
}

export interface LoopScenarioOptions {
  /**
   * Puts something in front of the scenario's own server (or server-everything), e.g. `resumewatch
   * gateway`: called with the server's MCP URL, it returns the URL the client talks to instead, and how
   * to close it. Default: nothing in front.
   */
  front?: (serverUrl: string) => Promise<{ url: string; close(): Promise<void> }>;
}

export interface TaskScenarioOptions {
  /** The ttl the task server announces, ms. Default: per scenario (1000 in the expiry scenarios, 60000 elsewhere). */
  ttlMs?: number;
  /** The poll interval the task server announces, ms. Default 500 (the storm polls every 10 ms against it). */
  pollIntervalMs?: number;
  /** How long a task works, ms. Default: per scenario (300; the storm's 2500, the cancelled one's 3000). */
  workMs?: number;
  /**
   * The re-issue scenarios (`task-reissue-after-lost-reply`, `modern-task-duplicate`): send this
   * idempotency key under `_meta[META_IDEMPOTENCY_KEY]` (@resumewatch/semconv) on both attempts, as
   * the guard does; `true` makes one up. Default: none (then the finding can only be "possible").
   */
  idempotencyKey?: string | boolean;
  /**
   * Puts something in front of the scenario's own server (e.g. `resumewatch gateway`): called with the
   * server's MCP URL, it returns the URL the client (through the fault proxy, where the scenario cuts)
   * talks to instead, and how to close it. Default: nothing in front.
   */
  front?: (serverUrl: string) => Promise<{ url: string; close(): Promise<void> }>;
  /**
   * The `task-*` scenarios' SDK 1.x task server: called with each session's server before it connects
   * (e.g. `instrumentMcpServer`, for its server spans). The `modern-task-*` ones use `modernServer`.
   */
  decorateServer?: TaskLabServerOptions['decorateServer'];
}

export interface ResolvedScenarioOptions {
  serverUrl: string;
  controlUrl: string;
  fetch: FetchLike;
  maxReconnects: number;
  client: ScenarioClient;
  resultWaitMs: number;
  modernServer: ModernServerOptions;
  tasks: TaskScenarioOptions;
  loops: LoopScenarioOptions;
}

type ModernServerOptions = Pick<ModernLabServerOptions, 'decorateServer' | 'idempotencyMetaKey'>;

export function resolveOptions(options: ScenarioOptions): ResolvedScenarioOptions {
  return {
    serverUrl: options.serverUrl,
    controlUrl: options.controlUrl ?? new URL('/control', options.serverUrl).toString(),
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    maxReconnects: options.maxReconnects ?? 20,
    client: options.client ?? 'raw',
    resultWaitMs: options.resultWaitMs ?? 3_000,
    modernServer: options.modernServer ?? {},
    tasks: options.tasks ?? {},
    loops: options.loops ?? {},
  };
}
