import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { SideEffectLedger } from './side-effects.js';
import { ResumeArrivals } from './resume-arrivals.js';

export const LAB_TOOL_NAMES = [
  'stream_progress',
  'fail',
  'side_effect',
  'quiet_progress',
  'poll_task',
  'echo',
  'notify_listening',
] as const;

const streamProgressArgs = z.object({
  count: z.number().int().min(0).max(10_000).default(3),
  delay: z.number().int().min(0).max(60_000).default(10),
  awaitResumeAfter: z.number().int().min(1).max(10_000).optional(),
});
const failArgs = z.object({ message: z.string().max(1000).optional() });
const sideEffectArgs = z.object({ key: z.string().min(1).max(200) });
const quietProgressArgs = z.object({
  quietMs: z.number().int().min(0).max(60_000).default(2000),
  text: z.string().max(1000).optional(),
});
const pollTaskArgs = z.object({
  closes: z.number().int().min(0).max(1000).default(12),
  intervalMs: z.number().int().min(1).max(60_000).default(250),
  progress: z.boolean().default(false),
});
const echoArgs = z.object({ text: z.string().max(1000) });

const TOOL_LIST = [
  {
    name: 'stream_progress',
    description:
      'Sends `count` progress notifications, `delay` ms apart, then its result. With `awaitResumeAfter` k, it waits after the k-th for its client to resume (at most 10 s) before the rest.',
    inputSchema: {
      type: 'object' as const,
      properties: {
        count: { type: 'integer', minimum: 0 },
        delay: { type: 'integer', minimum: 0, description: 'ms between notifications' },
        awaitResumeAfter: {
          type: 'integer',
          minimum: 1,
          description: 'after this many notifications, wait until a resume of the session arrived',
        },
      },
    },
  },
  {
    name: 'fail',
    description: 'Ends in a JSON-RPC error response (not a tool result with isError).',
    inputSchema: { type: 'object' as const, properties: { message: { type: 'string' } } },
  },
  {
    name: 'side_effect',
    description: 'Charges the ledger under `key` and returns how many times that key has been charged.',
    inputSchema: {
      type: 'object' as const,
      properties: { key: { type: 'string' } },
      required: ['key'],
    },
  },
  {
    name: 'quiet_progress',
    description:
      'Sends one progress notification, stays quiet for `quietMs` ms, then returns its result (`text`, if given).',
    inputSchema: {
      type: 'object' as const,
      properties: { quietMs: { type: 'integer', minimum: 0 }, text: { type: 'string' } },
    },
  },
  {
    name: 'poll_task',
    description:
      'A long task polled per SEP-1699: `intervalMs` ms after its client is back it closes its SSE stream (the client returns with Last-Event-ID after `retry`), `closes` times, then returns its result. With `progress`, a progress update precedes each close.',
    inputSchema: {
      type: 'object' as const,
      properties: {
        closes: { type: 'integer', minimum: 0 },
        intervalMs: { type: 'integer', minimum: 1 },
        progress: { type: 'boolean' },
      },
    },
  },
  {
    name: 'echo',
    description: 'Returns `Echo: <text>`.',
    inputSchema: { type: 'object' as const, properties: { text: { type: 'string' } }, required: ['text'] },
  },
  {
    name: 'notify_listening',
    description:
      'Sends notifications/tools/list_changed on the listening (standalone GET) stream, then returns its result.',
    inputSchema: { type: 'object' as const, properties: {} },
  },
];

function text(value: string): CallToolResult['content'] {
  return [{ type: 'text', text: value }];
}

/** Longest `poll_task` waits for its client to come back after a close: a client may never resume. */
const POLL_RESUME_WAIT_MS = 10_000;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function invalidParams(error: z.ZodError): McpError {
  return new McpError(
    ErrorCode.InvalidParams,
    `Invalid arguments: ${error.issues.map((issue) => issue.message).join('; ')}`,
  );
}

/**
 * Registers the lab's tools on a low-level SDK `Server`. The low-level server is used because the
 * high-level `McpServer` turns every thrown error into a tool result, and `fail` must end in a
 * JSON-RPC error response.
 */
export function registerLabTools(server: Server, ledger: SideEffectLedger, resumes = new ResumeArrivals()): void {
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOL_LIST }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const args = request.params.arguments ?? {};
    switch (request.params.name) {
      case 'stream_progress': {
        const parsed = streamProgressArgs.safeParse(args);
        if (!parsed.success) throw invalidParams(parsed.error);
        const { count, delay, awaitResumeAfter } = parsed.data;
        const progressToken = request.params._meta?.progressToken ?? `stream_progress:${String(extra.requestId)}`;
        // A resume after the call started lets the rest go: what follows is sent after the client is back,
        // however slowly a loaded machine brings it (resume-loses-result: the result must follow the resume).
        const resumesBefore = resumes.count();
        for (let progress = 1; progress <= count; progress++) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress, total: count },
          });
          if (progress === awaitResumeAfter) await resumes.next(resumesBefore, POLL_RESUME_WAIT_MS, extra.signal);
          if (delay > 0) await sleep(delay, extra.signal);
        }
        return {
          content: [{ type: 'text', text: `streamed ${count} progress notifications` }],
          structuredContent: { count },
        };
      }
      case 'fail': {
        const parsed = failArgs.safeParse(args);
        if (!parsed.success) throw invalidParams(parsed.error);
        throw new McpError(
          ErrorCode.InternalError,
          parsed.data.message ?? 'fail: this tool always ends in a JSON-RPC error',
        );
      }
      case 'side_effect': {
        const parsed = sideEffectArgs.safeParse(args);
        if (!parsed.success) throw invalidParams(parsed.error);
        const count = ledger.record(parsed.data.key);
        return {
          content: [{ type: 'text', text: `${parsed.data.key} charged ${count} time(s)` }],
          structuredContent: { key: parsed.data.key, count },
        };
      }
      case 'quiet_progress': {
        const parsed = quietProgressArgs.safeParse(args);
        if (!parsed.success) throw invalidParams(parsed.error);
        const { quietMs } = parsed.data;
        const progressToken = request.params._meta?.progressToken ?? `quiet_progress:${String(extra.requestId)}`;
        await extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken, progress: 1, total: 2 },
        });
        await sleep(quietMs, extra.signal);
        const said = parsed.data.text ?? `quiet for ${quietMs} ms`;
        return { content: text(said), structuredContent: { text: said, quietMs } };
      }
      case 'poll_task': {
        const parsed = pollTaskArgs.safeParse(args);
        if (!parsed.success) throw invalidParams(parsed.error);
        const { closes, intervalMs, progress } = parsed.data;
        const progressToken = request.params._meta?.progressToken ?? `poll_task:${String(extra.requestId)}`;
        // closeSSEStream exists only for clients that negotiated 2025-11-25 (they got a priming event
        // with an id to come back with); for others the task simply runs as long.
        // After a close, the next interval starts when the client is back (its resume arrived), so each
        // close ends a connected stream however slowly a loaded machine reconnects.
        let closed = 0;
        for (let i = 0; i < closes; i++) {
          await sleep(intervalMs, extra.signal);
          if (progress)
            await extra.sendNotification({
              method: 'notifications/progress',
              params: { progressToken, progress: i + 1, total: closes },
            });
          if (extra.closeSSEStream) {
            const before = resumes.count();
            extra.closeSSEStream();
            closed++;
            await resumes.next(before, POLL_RESUME_WAIT_MS, extra.signal);
          }
        }
        return {
          content: text(`polled task done after ${closed} stream close(s)`),
          structuredContent: { closes: closed },
        };
      }
      case 'echo': {
        const parsed = echoArgs.safeParse(args);
        if (!parsed.success) throw invalidParams(parsed.error);
        return { content: text(`Echo: ${parsed.data.text}`), structuredContent: { text: `Echo: ${parsed.data.text}` } };
      }
      case 'notify_listening': {
        // No related request id: the SDK transport writes it on the standalone GET stream (or stores it
        // for that stream's replay when no GET is open).
        await server.notification({ method: 'notifications/tools/list_changed' });
        return { content: text('notified the listening stream'), structuredContent: { notified: true } };
      }
      default:
        throw new McpError(ErrorCode.InvalidParams, `Tool ${request.params.name} not found`);
    }
  });
}
