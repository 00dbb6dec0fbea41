import type { RecordedRequest } from './recording-fetch.js';

/** The recorded POSTs of tools/call `tool`, in order: the first attempt, then any re-issue or input round. */
export function toolCallPosts(log: RecordedRequest[], tool: string): RecordedRequest[] {
  return log.filter((entry) => entry.method === 'POST' && entry.rpc === `tools/call ${tool}`);
}

/** Every exchange of a recorded log as `METHOD rpc -> status (MCP-Protocol-Version)`: what the summary shows. */
export function exchangeLines(log: RecordedRequest[]): string[] {
  return log.map(
    (entry) =>
      `${entry.method} ${entry.rpc ?? '-'} -> ${entry.status ?? 'no answer'} (${entry.protocolVersion ?? 'no version header'})`,
  );
}

/** The distinct `MCP-Protocol-Version` headers the client sent, in order of first use. */
export function protocolVersionsIn(log: RecordedRequest[]): string[] {
  return [...new Set(log.flatMap((entry) => (entry.protocolVersion ? [entry.protocolVersion] : [])))];
}

/** How a promise settled, in one line: `resolved` or `rejected: <SDK error code> <message>`. */
export async function settled(call: Promise<unknown>): Promise<string> {
  return call.then(
    () => 'resolved',
    (error: unknown) => {
      const code = (error as { code?: unknown }).code;
      const message = error instanceof Error ? error.message : String(error);
      return `rejected: ${code !== undefined ? `${String(code)} ` : ''}${message.slice(0, 200)}`;
    },
  );
}
