import {
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_TERMINAL_FIRST_STREAM_ID,
  ATTR_SERVER_ADDRESS,
  FindingKind,
} from '@resumewatch/semconv';
import type { RuleContext } from './context.js';
import { hash32 } from './ids.js';
import { UNKNOWN_SERVER } from './services.js';
import type { Finding, SpanRecord } from './types.js';

/**
 * The server-defect family: a terminal the instrumentation marked foreign (replayed to a stream that had
 * not carried the request) or conflicting (its content differs from the first). The server's defect,
 * guard or not: it never counts as the client's duplicate or resume after terminal (the resumption
 * family hands such a terminal here and stops).
 */
export class ServerDefects {
  constructor(private readonly ctx: RuleContext) {}

  /** A terminal marked foreign and/or conflicting: counted per server, reported once per request and kind. */
  terminal(slot: number, span: SpanRecord, time: number, foreign: boolean, conflict: boolean): void {
    const attrs = span.attributes;
    const address = attrs[ATTR_SERVER_ADDRESS];
    const server = typeof address === 'string' && address.length > 0 ? address : UNKNOWN_SERVER;
    const stream = attrs[ATTR_MCP_STREAM_ID];
    const first = attrs[ATTR_MCP_TERMINAL_FIRST_STREAM_ID];
    const extra: Partial<Finding> = { server };
    if (typeof stream === 'string') extra.stream_id = stream;
    if (typeof first === 'string') extra.first_stream_id = first;
    if (foreign) this.foreignReplay(slot, span, time, server, extra);
    if (conflict) this.conflictingTerminal(slot, span, time, server, extra);
  }

  /** foreign_replay: a terminal replayed to a stream that had not carried the request. */
  private foreignReplay(slot: number, span: SpanRecord, time: number, server: string, extra: Partial<Finding>): void {
    const table = this.ctx.table;
    table.ensureCold(slot);
    const stream = span.attributes[ATTR_MCP_STREAM_ID];
    // Kept so that a later "duplicate" of this foreign terminal is not taken for the client's duplicate.
    if (typeof stream === 'string' && stream.length > 0) table.setForeignStream(slot, hash32(stream));
    this.report(slot, FindingKind.FOREIGN_REPLAY, server, span, time, extra);
  }

  /** conflicting_terminal: a second terminal of the request whose content differs from the first. */
  private conflictingTerminal(
    slot: number,
    span: SpanRecord,
    time: number,
    server: string,
    extra: Partial<Finding>,
  ): void {
    this.ctx.table.ensureCold(slot);
    this.report(slot, FindingKind.CONFLICTING_TERMINAL, server, span, time, extra);
  }

  /** Server defects are counted per server every time (metrics), and reported once per request and kind. */
  private report(
    slot: number,
    kind: FindingKind,
    server: string,
    span: SpanRecord,
    time: number,
    extra: Partial<Finding>,
  ): void {
    const ctx = this.ctx;
    ctx.events?.serverDefect(kind, server);
    if (ctx.table.wasReported(slot, kind)) return;
    ctx.table.markReported(slot, kind);
    ctx.emit(slot, kind, span.traceId, time, time, [span.spanId], extra);
  }
}
