import { McpServer, acceptedContent, inputRequired } from '@modelcontextprotocol/server';
import type { ServerContext } from '@modelcontextprotocol/server';
import { BoundedMap, RecentList } from '@resumewatch/bounded';
import { z } from 'zod';
import { SideEffectLedger } from '../side-effects.js';

/** The tools of the v2 lab server, the same for both eras (one factory serves both, as the SDK asks). */
export const MODERN_TOOL_NAMES = [
  'charge',
  'charge_cancellable',
  'confirm_charge',
  'charge_once',
  'charge_task',
] as const;
type ModernToolName = (typeof MODERN_TOOL_NAMES)[number];

/** What one tool execution did on the server: the server-side fact a scenario compares the client's view with. */
export interface ToolExecution {
  tool: ModernToolName;
  key: string;
  /** The JSON-RPC id the execution served. */
  requestId: string | number;
  /** Whether its response stream had been closed (the SDK aborted its signal) when it ended. */
  cancelledBeforeEnd: boolean;
  /**
   * `charged`: the side effect ran; `stopped`: it honoured the cancellation; `input_required`: it asked
   * for input; `already_charged`: `charge_once` saw an idempotency key whose side effect had run.
   */
  outcome: 'charged' | 'stopped' | 'input_required' | 'already_charged';
}

/** The side-effect ledger and the execution log, shared by every per-request server instance. */
export class ModernToolState {
  readonly ledger = new SideEffectLedger();
  readonly executions = new RecentList<ToolExecution>(1000);
  /** The idempotency keys `charge_once` has run its side effect for (bounded: a server keeps them a while). */
  readonly idempotencyKeys = new BoundedMap<string, true>(10_000, 3_600_000);

  /**
   * @param idempotencyMetaKey the `_meta` key `charge_once` reads a call's idempotency key from (the
   *   client's convention: the lab does not spell resumewatch's contract); none: it checks nothing.
   */
  constructor(readonly idempotencyMetaKey?: string) {}
}

const keyArgs = z.object({
  key: z.string().min(1).max(200),
  /** How long the work takes when nothing cancels it. */
  workMs: z.number().int().min(0).max(10_000).default(300),
});

/**
 * Sends one progress notification (so the 2026-07-28 response becomes an SSE stream a proxy can cut
 * after an event), then works `workMs` or until the SDK aborts the request's signal (its response
 * stream was closed), whichever comes first. Returns whether the signal was aborted.
 */
async function work(ctx: ServerContext, workMs: number): Promise<boolean> {
  const token = ctx.mcpReq._meta?.progressToken;
  if (token !== undefined)
    await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: 1 } });
  const signal = ctx.mcpReq.signal;
  if (!signal.aborted)
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, workMs);
      signal.addEventListener('abort', done, { once: true });
      function done(): void {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
    });
  return signal.aborted;
}

function text(value: string) {
  return { content: [{ type: 'text' as const, text: value }] };
}

/**
 * A fresh `McpServer` with the lab's v2 tools; `createMcpHandler` calls it once per request
 * (2026-07-28), the legacy session leg once per session.
 *
 * - `charge {key, workMs}`: works, then charges the ledger even when its stream was closed meanwhile:
 *   a tool that ignores the cancellation (the spec says a server SHOULD stop "as soon as practical").
 * - `charge_cancellable {key, workMs}`: the same, but stops without charging when its signal aborts.
 * - `confirm_charge {key}`: a Multi Round-Trip tool: without an accepted `confirm` input response it
 *   answers `input_required` with an elicitation; with one it charges.
 * - `charge_once {key, workMs}`: `charge` behind an idempotency-key check: a call whose `_meta` carries
 *   a key (under the state's `idempotencyMetaKey`) already claimed does not charge again.
 * - `charge_task {key, workMs}`: `charge`, for a client without the 2026-07-28 task extension; one that
 *   declares it gets a task from the extension, which answers before the SDK (`tasks-extension.ts`).
 */
export function createModernToolServer(state: ModernToolState): McpServer {
  const server = new McpServer({ name: 'resumewatch-lab-v2', version: '0.1.0' });
  const record = (execution: ToolExecution) => state.executions.push(execution);

  server.registerTool(
    'charge',
    { description: 'Charges the ledger under key after workMs, even if its stream was closed.', inputSchema: keyArgs },
    async ({ key, workMs }, ctx) => {
      const cancelled = await work(ctx, workMs);
      const count = state.ledger.record(key);
      record({ tool: 'charge', key, requestId: ctx.mcpReq.id, cancelledBeforeEnd: cancelled, outcome: 'charged' });
      return { ...text(`charged ${key} (${count})`), structuredContent: { count } };
    },
  );

  server.registerTool(
    'charge_cancellable',
    { description: 'Charges the ledger under key after workMs, unless its stream closes first.', inputSchema: keyArgs },
    async ({ key, workMs }, ctx) => {
      if (await work(ctx, workMs)) {
        record({
          tool: 'charge_cancellable',
          key,
          requestId: ctx.mcpReq.id,
          cancelledBeforeEnd: true,
          outcome: 'stopped',
        });
        throw new Error('cancelled: the response stream was closed');
      }
      const count = state.ledger.record(key);
      record({
        tool: 'charge_cancellable',
        key,
        requestId: ctx.mcpReq.id,
        cancelledBeforeEnd: false,
        outcome: 'charged',
      });
      return { ...text(`charged ${key} (${count})`), structuredContent: { count } };
    },
  );

  const confirmation = z.object({ confirm: z.boolean() });
  server.registerTool(
    'confirm_charge',
    {
      description: 'Asks the user to confirm (Multi Round-Trip), then charges the ledger under key.',
      inputSchema: z.object({ key: z.string().min(1).max(200) }),
    },
    async ({ key }, ctx) => {
      const confirmed = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', confirmation);
      if (confirmed?.confirm !== true) {
        record({
          tool: 'confirm_charge',
          key,
          requestId: ctx.mcpReq.id,
          cancelledBeforeEnd: false,
          outcome: 'input_required',
        });
        return inputRequired({
          inputRequests: {
            confirm: inputRequired.elicit({ message: `Charge ${key}?`, requestedSchema: confirmation }),
          },
        });
      }
      const count = state.ledger.record(key);
      record({ tool: 'confirm_charge', key, requestId: ctx.mcpReq.id, cancelledBeforeEnd: false, outcome: 'charged' });
      return { ...text(`charged ${key} (${count})`), structuredContent: { count } };
    },
  );
  server.registerTool(
    'charge_once',
    {
      description:
        'Charges the ledger under key after workMs, once per idempotency key, even if its stream was closed.',
      inputSchema: keyArgs,
    },
    async ({ key, workMs }, ctx) => {
      const claimed = idempotencyKeyOf(ctx, state.idempotencyMetaKey);
      if (claimed !== undefined && state.idempotencyKeys.has(claimed)) {
        record({
          tool: 'charge_once',
          key,
          requestId: ctx.mcpReq.id,
          cancelledBeforeEnd: false,
          outcome: 'already_charged',
        });
        return { ...text(`already charged ${key}`), structuredContent: { count: state.ledger.count(key) } };
      }
      // Claimed before the work: a re-issue that arrives while the first attempt still runs is refused too.
      if (claimed !== undefined) state.idempotencyKeys.set(claimed, true);
      const cancelled = await work(ctx, workMs);
      const count = state.ledger.record(key);
      record({ tool: 'charge_once', key, requestId: ctx.mcpReq.id, cancelledBeforeEnd: cancelled, outcome: 'charged' });
      return { ...text(`charged ${key} (${count})`), structuredContent: { count } };
    },
  );
  server.registerTool(
    'charge_task',
    {
      description:
        'Charges the ledger under key after workMs. A 2026-07-28 client that declares the task extension gets a task instead (src/modern/tasks-extension.ts).',
      inputSchema: keyArgs,
    },
    async ({ key, workMs }, ctx) => {
      const cancelled = await work(ctx, workMs);
      const count = state.ledger.record(key);
      record({ tool: 'charge_task', key, requestId: ctx.mcpReq.id, cancelledBeforeEnd: cancelled, outcome: 'charged' });
      return { ...text(`charged ${key} (${count})`), structuredContent: { count } };
    },
  );
  return server;
}

/** The idempotency key a request's `_meta` carries under `metaKey`, if the server checks one. */
function idempotencyKeyOf(ctx: ServerContext, metaKey: string | undefined): string | undefined {
  if (metaKey === undefined) return undefined;
  const value = (ctx.mcpReq._meta as Record<string, unknown> | undefined)?.[metaKey];
  return typeof value === 'string' ? value : undefined;
}
