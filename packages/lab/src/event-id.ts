/**
 * Event ids of the lab's event store: `<epoch>.<seq>.<streamId>`.
 *
 * The stream id goes last so that any stream id parses back unchanged, including the SDK's standalone
 * stream id `_GET_stream` (the SDK's example store splits on `_` and gets it wrong). The epoch is new
 * for every store instance, so a cursor from before a restart never collides with a new event.
 */
export interface ParsedEventId {
  epoch: string;
  seq: number;
  streamId: string;
}

export function formatEventId(epoch: string, seq: number, streamId: string): string {
  return `${epoch}.${seq}.${streamId}`;
}

export function parseEventId(eventId: string): ParsedEventId | undefined {
  const first = eventId.indexOf('.');
  if (first <= 0) return undefined;
  const second = eventId.indexOf('.', first + 1);
  if (second < 0 || second === eventId.length - 1) return undefined;
  const seqText = eventId.slice(first + 1, second);
  if (!/^\d+$/.test(seqText)) return undefined;
  return { epoch: eventId.slice(0, first), seq: Number(seqText), streamId: eventId.slice(second + 1) };
}
