// The SDK 1.x client's task API, as an application uses it: `client.experimental.tasks.callToolStream`
// (create, poll `tasks/get` at the announced `pollInterval`, fetch `tasks/result`), `getTask`,
// `getTaskResult`, `cancelTask`. Imported on demand, so that importing the lab does not load the SDK.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Task } from '@modelcontextprotocol/sdk/types.js';
import type { FetchLike } from '../mcp-http-client.js';
import { recordingFetch } from '../scenarios/recording-fetch.js';
import type { RecordedRequest } from '../scenarios/recording-fetch.js';

export interface SdkTaskClient {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
  /** Every request the client sent and what came back, recorded without changing it. */
  readonly log: RecordedRequest[];
  close(): Promise<void>;
}

/** What one `callToolStream` yielded, in order, and how it ended. */
export interface TaskStreamRun {
  /** The task of `taskCreated`, if the handle reached the client. */
  created: Task | undefined;
  /** Statuses of every `taskStatus` the stream yielded (its `tasks/get` polls). */
  statuses: string[];
  /** The result's first text, if the stream yielded one. */
  resultText: string | undefined;
  /** The error the stream yielded (the SDK yields, it does not throw), if any. */
  error: { code: number | undefined; message: string } | undefined;
}

/** Connects an unmodified SDK 1.x client to `url`; all its traffic goes through `fetch`, recorded. */
export async function connectSdkTaskClient(url: string, fetch: FetchLike, name: string): Promise<SdkTaskClient> {
  const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]);
  const log: RecordedRequest[] = [];
  const client = new Client({ name: `resumewatch-lab-${name}`, version: '0.1.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch(fetch, log) });
  await client.connect(transport);
  return {
    client,
    transport,
    log,
    async close() {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    },
  };
}

/**
 * Runs `callToolStream` for a task-augmented call of `tool`; with `untilCreated`, stops reading once the
 * handle arrived (the application keeps the task id and comes back later).
 */
export async function streamTaskCall(
  client: Client,
  tool: string,
  args: Record<string, unknown>,
  options: { ttlMs: number | null; meta?: Record<string, unknown>; untilCreated?: boolean },
): Promise<TaskStreamRun> {
  const run: TaskStreamRun = { created: undefined, statuses: [], resultText: undefined, error: undefined };
  const params = { name: tool, arguments: args, ...(options.meta ? { _meta: options.meta } : {}) };
  const task = options.ttlMs === null ? {} : { ttl: options.ttlMs };
  for await (const message of client.experimental.tasks.callToolStream(params, undefined, { task })) {
    if (message.type === 'taskCreated') {
      run.created = message.task;
      if (options.untilCreated) break;
    } else if (message.type === 'taskStatus') run.statuses.push(message.task.status);
    // The JSON-RPC member tests, not the `type` words (the contract's values test reads those as its own).
    else if ('result' in message) {
      const content = (message.result as { content?: Array<{ text?: string }> }).content;
      run.resultText = content?.[0]?.text;
    } else if ('error' in message) run.error = describeError(message.error);
  }
  return run;
}

/** A thrown or yielded error as the scenarios report it: the JSON-RPC code, when it has one. */
export function describeError(error: unknown): { code: number | undefined; message: string } {
  const code = (error as { code?: unknown } | null)?.code;
  return {
    code: typeof code === 'number' ? code : undefined,
    message: error instanceof Error ? error.message : String(error),
  };
}

/** `tasks/result` of a tool call's task (the SDK needs the result's schema); its first text. */
export async function fetchTaskResult(client: Client, taskId: string): Promise<string | undefined> {
  const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
  const first = result.content[0];
  return first?.type === 'text' ? first.text : undefined;
}
