import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { BoundedMap } from '@resumewatch/bounded';

export interface SessionRecord {
  sessionId: string;
  /** The client's initialize request, kept to re-initialize a transport for this session after a restart. */
  initialize: JSONRPCRequest;
  protocolVersion: string;
  createdAt: number;
  /** The MCP path the session was created on (`/mcp` or `/mcp/<variant>`): a restore re-initializes it there. */
  path: string;
}

/**
 * Session state kept outside the (simulated) server process: it survives a restart, which is what
 * lets a restarted server accept a session id whose event buffer it has lost.
 */
export class SessionRegistry {
  private readonly records: BoundedMap<string, SessionRecord>;

  constructor(capacity = 2000, idleTtlMs = 3_600_000) {
    this.records = new BoundedMap(capacity, idleTtlMs);
  }

  remember(record: SessionRecord): void {
    this.records.set(record.sessionId, record);
  }

  /** Looks a session up and restarts its idle retention. */
  get(sessionId: string): SessionRecord | undefined {
    const record = this.records.get(sessionId);
    if (record) this.records.touch(sessionId);
    return record;
  }

  forget(sessionId: string): void {
    this.records.delete(sessionId);
  }

  get size(): number {
    return this.records.size;
  }
}
