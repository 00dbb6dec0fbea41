import type { RequestTimeline, TimelineExchange } from './timeline.js';

/** Readable timeline of one request: its POST, its terminal response, each reconnect with its cursor and what it replayed, the end. */
export function formatRequestTimeline(request: RequestTimeline): string {
  const what = request.rpcMethod ?? 'request';
  const lines = [`timeline of request ${request.rpcId} (${what}) in session ${request.sessionId ?? '-'}`];
  let reconnects = 0;
  let resumesAfterTerminal = 0;
  let delivered = 0;
  for (const x of request.exchanges) {
    const mine = x.terminals.filter((t) => t.rpcId === request.rpcId);
    if (x.lastEventId === undefined) {
      lines.push(row(x.at, `${x.method} ${what}`, answer(x)));
    } else {
      reconnects++;
      const after = delivered > 0;
      if (after) resumesAfterTerminal++;
      const label = `reconnect ${reconnects} with Last-Event-ID ${x.lastEventId}${after ? ' (after the terminal)' : ''}`;
      lines.push(row(x.at, label, answer(x, true)));
    }
    for (const t of mine) {
      delivered++;
      const kind = t.error ? 'error' : 'result';
      const text =
        delivered === 1
          ? `terminal: the ${kind} (event ${t.eventId ?? '-'})`
          : `replay: the ${kind} again, delivery ${delivered} (event ${t.eventId ?? '-'})`;
      lines.push(row(t.at, `  ${text}`, ''));
    }
  }
  lines.push(`  end: ${ending(request, delivered, resumesAfterTerminal)}`);
  return lines.join('\n');
}

function row(at: number, label: string, outcome: string): string {
  return `  ${`${Math.round(at)} ms`.padStart(8)}  ${label}${outcome ? `  ->  ${outcome}` : ''}`;
}

function answer(x: TimelineExchange, resume = false): string {
  if (x.rejected !== undefined) return `refused in the process, never sent (${shorten(x.rejected)})`;
  const parts = [String(x.status)];
  if (x.events > 0 || resume) parts.push(`${x.events} event(s)${resume ? ' replayed' : ''}`);
  if (!x.endedCleanly) parts.push('stream broke off');
  else if (x.events > 0 || resume) parts.push('clean close');
  return parts.join(', ');
}

function ending(request: RequestTimeline, delivered: number, resumesAfterTerminal: number): string {
  const last = request.exchanges.at(-1);
  const streams = new Set(
    request.exchanges.filter((x) => x.terminals.some((t) => t.rpcId === request.rpcId)).map((x) => x.seq),
  ).size;
  const parts = [
    `the terminal response arrived ${delivered} time(s) on ${streams} HTTP response(s) (${Math.max(0, delivered - 1)} duplicate(s))`,
  ];
  const refused = request.exchanges.filter((x) => x.rejected !== undefined).length;
  if (resumesAfterTerminal > 0)
    parts.push(
      `${resumesAfterTerminal} resume attempt(s) after it${refused ? `, ${refused} refused in the process` : ''}`,
    );
  if (last?.rejected !== undefined) parts.push('the last was refused in the process, never sent');
  else if (last?.lastEventId !== undefined && last.status !== undefined)
    parts.push(`the last resume was answered ${last.status}`);
  return parts.join('; ') + '.';
}

/** The error's name and its first clause: enough to say why, short enough for one line. */
function shorten(text: string): string {
  const cut = text.search(/[;.](\s|$)/);
  return cut > 0 && cut < 160 ? text.slice(0, cut) : text.slice(0, 160);
}
