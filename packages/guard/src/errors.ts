/** Raised when a client attempts to resume a stream that is not resumable. */
export class InvalidResumptionError extends Error {
  override readonly name = 'InvalidResumptionError';

  constructor(
    message: string,
    /** The JSON-RPC request id the resumption concerned. */
    readonly requestId: string,
    /** The session the resumption was attempted in, when known. */
    readonly sessionId: string | undefined,
    /** Why it was refused. */
    readonly reason: 'terminal' | 'no_cursor',
  ) {
    super(message);
  }

  /** The stream ended because the work completed: replaying its cursor would duplicate the terminal event. */
  static terminal(requestId: string, sessionId: string | undefined): InvalidResumptionError {
    return new InvalidResumptionError(
      `request ${JSON.stringify(requestId)} is terminal; refusing to resume via Last-Event-ID ` +
        `(session ${JSON.stringify(sessionId ?? '')}). Open a new request with idempotency protection instead.`,
      requestId,
      sessionId,
      'terminal',
    );
  }

  static noCursor(requestId: string, sessionId: string | undefined): InvalidResumptionError {
    return new InvalidResumptionError(
      `request ${JSON.stringify(requestId)} has no observed event cursor (session ${JSON.stringify(sessionId ?? '')}); ` +
        'cannot resume without a Last-Event-ID.',
      requestId,
      sessionId,
      'no_cursor',
    );
  }
}
