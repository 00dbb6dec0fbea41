// A plain fetch client of the 2026-07-28 task extension (no SDK implements its client side yet): every
// request carries the 2026-07-28 headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`: the tool's
// name on a call, the task id on `tasks/*`, as the extension's routing section asks) and declares the
// extension in its per-request client capabilities.
import { EXTENSION_TASKS, META_PROTOCOL_VERSION, STATELESS_PROTOCOL_VERSION, TaskField } from '@resumewatch/semconv';
import { HEADER_PROTOCOL_VERSION, readSse } from '@resumewatch/wire';
import type { FetchLike } from '../mcp-http-client.js';
import { HEADER_MCP_NAME, META_CLIENT_CAPABILITIES } from './tasks-extension.js';

const HEADER_MCP_METHOD = 'mcp-method';

/** A JSON-RPC error answer. */
interface RpcError {
  code: number;
  message: string;
}

/** What one request got back. */
export interface ExtensionAnswer {
  method: string;
  at: number;
  /** HTTP status; undefined when the request failed before an answer. */
  status: number | undefined;
  result: Record<string, unknown> | undefined;
  error: RpcError | undefined;
  /** The response broke (or never came) before its JSON-RPC answer. */
  broken: boolean;
  /** JSON-RPC notifications the response carried before its answer. */
  notifications: number;
}

export class ExtensionTaskClient {
  /** Every answer, in order (bounded). */
  readonly answers: ExtensionAnswer[] = [];
  private nextId = 1;

  constructor(
    private readonly url: string,
    private readonly fetch: FetchLike,
  ) {}

  /** A `tools/call` declaring the extension, with a progress token (so its answer may be a stream). */
  call(tool: string, args: Record<string, unknown>, meta: Record<string, unknown> = {}): Promise<ExtensionAnswer> {
    const id = this.nextId++;
    return this.send('tools/call', tool, {
      name: tool,
      arguments: args,
      _meta: {
        ...meta,
        progressToken: `progress-${id}`,
        [META_PROTOCOL_VERSION]: STATELESS_PROTOCOL_VERSION,
        [META_CLIENT_CAPABILITIES]: { extensions: { [EXTENSION_TASKS]: {} } },
      },
    });
  }

  /** `tasks/get`, `tasks/update` or `tasks/cancel`, with `Mcp-Name` = the task id (unless `mcpName` says otherwise). */
  task(
    method: string,
    taskId: string,
    extra: Record<string, unknown> = {},
    mcpName = taskId,
  ): Promise<ExtensionAnswer> {
    return this.send(method, mcpName, {
      [TaskField.TASK_ID]: taskId,
      ...extra,
      _meta: {
        [META_PROTOCOL_VERSION]: STATELESS_PROTOCOL_VERSION,
        [META_CLIENT_CAPABILITIES]: { extensions: { [EXTENSION_TASKS]: {} } },
      },
    });
  }

  private async send(method: string, name: string, params: Record<string, unknown>): Promise<ExtensionAnswer> {
    const id = this.nextId++;
    const answer: ExtensionAnswer = {
      method,
      at: Date.now(),
      status: undefined,
      result: undefined,
      error: undefined,
      broken: false,
      notifications: 0,
    };
    if (this.answers.length < 10_000) this.answers.push(answer);
    const take = (message: { id?: unknown; result?: Record<string, unknown>; error?: RpcError }) => {
      if (message.id !== id) {
        answer.notifications++;
        return;
      }
      answer.result = message.result;
      answer.error = message.error;
    };
    try {
      const response = await this.fetch(this.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          [HEADER_PROTOCOL_VERSION]: STATELESS_PROTOCOL_VERSION,
          [HEADER_MCP_METHOD]: method,
          [HEADER_MCP_NAME]: name,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
      });
      answer.status = response.status;
      if ((response.headers.get('content-type') ?? '').includes('text/event-stream') && response.body) {
        await readSse(response.body, (event) => {
          if (event.data) take(JSON.parse(event.data) as Parameters<typeof take>[0]);
        });
      } else take((await response.json()) as Parameters<typeof take>[0]);
    } catch {
      answer.broken = true;
    }
    if (answer.result === undefined && answer.error === undefined) answer.broken = true;
    return answer;
  }
}
