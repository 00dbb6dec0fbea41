/** One event as the client's EventSource-like parser dispatched it. */
export interface ClientEvent {
  /** The `id:` field of this event, if it had one. */
  id: string | undefined;
  data: string;
}

/**
 * The complete events of an SSE body, in order: each ended by its blank line (a last event without one
 * is not dispatched, as an EventSource drops it at the end of the stream). Comments are skipped; a
 * block with neither `id:` nor `data:` is no event. The client's own parser, independent of the
 * gateway's: this is what the client's application gets.
 */
export function completeEvents(body: string): ClientEvent[] {
  const events: ClientEvent[] = [];
  let id: string | undefined;
  let data: string[] = [];
  let fields = 0;
  const lineEnd = /\r\n|\r|\n/g;
  let from = 0;
  for (let match = lineEnd.exec(body); match; match = lineEnd.exec(body)) {
    const line = body.slice(from, match.index);
    from = match.index + match[0].length;
    if (line === '') {
      if (fields > 0) events.push({ id, data: data.join('\n') });
      [id, data, fields] = [undefined, [], 0];
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (name === 'id' && !value.includes('\0')) [id, fields] = [value, fields + 1];
    else if (name === 'data') [data, fields] = [[...data, value], fields + 1];
  }
  return events;
}

/** The JSON-RPC messages of an event's data or a JSON body: none for empty data, the elements of a batch. */
export function messagesOf(text: string): unknown[] {
  if (text.trim() === '') return [];
  try {
    const parsed = JSON.parse(text) as unknown;
    return Array.isArray(parsed) ? parsed : [parsed];
  } catch {
    return [{ unparsable: text.slice(0, 120) }];
  }
}
