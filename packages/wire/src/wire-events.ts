import { parseMessages } from './jsonrpc.js';
import type { JsonRpcMessage } from './jsonrpc.js';
import { ScannedEvent, SseScanner } from './sse.js';
import { holdShape } from './shapes.js';
import type { GuardAction, GuardProof } from '@resumewatch/semconv';
import type { StreamRecord, TerminalObservation, WireEvent, WireRequest } from './types.js';

const NO_MESSAGES: readonly JsonRpcMessage[] = [];

/** A JSON response body as the listeners see it. */
export class JsonWireEvent implements WireEvent {
  readonly sse = undefined;
  readonly eventId = undefined;
  guardAction: GuardAction | undefined = undefined;
  guardProof: GuardProof | undefined = undefined;
  /** Nothing is removed from a JSON body; the field is here so both event classes read alike. */
  readonly removedMessages: number[] | undefined = undefined;

  constructor(
    readonly request: WireRequest,
    readonly stream: StreamRecord,
    readonly messages: readonly JsonRpcMessage[],
    readonly terminals: readonly TerminalObservation[],
    readonly at: number,
  ) {}

  /** A JSON body is passed whole: nothing is removed from it. */
  removeMessage(): void {}
}

/** An SSE event as the listeners see it: the wire event and the SSE event in one object. */
export class SseWireEvent extends ScannedEvent implements WireEvent {
  guardAction: GuardAction | undefined = undefined;
  guardProof: GuardProof | undefined = undefined;
  /** Indexes of messages a listener removed (`removeMessage`); undefined while none is (nearly always). */
  removedMessages: number[] | undefined = undefined;

  constructor(
    scan: SseScanner,
    readonly request: WireRequest,
    readonly stream: StreamRecord,
    data: string | undefined,
    private parsed: readonly JsonRpcMessage[] | undefined,
    readonly terminals: readonly TerminalObservation[],
    readonly at: number,
  ) {
    super(scan, data);
  }

  get sse(): this {
    return this;
  }

  get eventId(): string | undefined {
    return this.id;
  }

  get messages(): readonly JsonRpcMessage[] {
    return (this.parsed ??= this.hasData ? parseMessages(this.data) : NO_MESSAGES);
  }

  removeMessage(index: number): void {
    const removed = (this.removedMessages ??= []);
    if (!removed.includes(index)) removed.push(index);
  }
}

holdShape(new JsonWireEvent(undefined as never, undefined as never, NO_MESSAGES, [], 0));
holdShape(
  new SseWireEvent(
    new SseScanner({ event: () => undefined }),
    undefined as never,
    undefined as never,
    undefined,
    undefined,
    [],
    0,
  ),
);
