import { HEADER_PROTOCOL_VERSION, HEADER_SESSION_ID } from '@resumewatch/wire';
import type { SessionRecord } from './session-registry.js';

/**
 * Re-initializes a transport for a session id the registry knows, by sending the lab's own MCP
 * endpoint the session's recorded initialize request (marked with a per-process restore token) and
 * then `notifications/initialized`. The SDK has no public way to adopt an existing session id, so the
 * restored transport goes through a real initialize, exactly as it did the first time.
 */
export async function restoreSession(
  mcpUrl: string,
  record: SessionRecord,
  restoreHeaders: Record<string, string>,
): Promise<void> {
  const init = await fetch(mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...restoreHeaders },
    body: JSON.stringify(record.initialize),
  });
  await init.text();
  if (!init.ok) throw new Error(`restoring a session failed: initialize answered ${init.status}`);
  const initialized = await fetch(mcpUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...restoreHeaders,
      [HEADER_SESSION_ID]: record.sessionId,
      ...(record.protocolVersion ? { [HEADER_PROTOCOL_VERSION]: record.protocolVersion } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  await initialized.text();
  if (!initialized.ok) throw new Error(`restoring a session failed: initialized answered ${initialized.status}`);
}
