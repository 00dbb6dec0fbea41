/**
 * Raised when a client attempts to resume a stream whose requests have all finished. The message never carries
 * the session id (an Mcp-Session-Id is close to a credential and error messages end up in logs); the
 * `sessionId` property has it, not enumerable, so printing or serialising the error leaves it out too.
 */
export class InvalidResumptionError extends Error {
  override readonly name = 'InvalidResumptionError';
  /** The session the resumption was attempted in, when known. */
  declare readonly sessionId: string | undefined;

  constructor(
    message: string,
    /** The JSON-RPC request id the resumption concerned. */
    readonly requestId: string,
    sessionId: string | undefined,
    /** Why it was refused: every request the cursor's stream carried had finished. */
    readonly reason: 'terminal',
  ) {
    super(message);
    Object.defineProperty(this, 'sessionId', { value: sessionId, enumerable: false });
  }

  /** The stream ended because the work completed: replaying its cursor would duplicate the terminal event. */
  static terminal(requestId: string, sessionId: string | undefined): InvalidResumptionError {
    return new InvalidResumptionError(
      `request ${JSON.stringify(requestId)} is terminal; refusing to resume via Last-Event-ID. ` +
        'Open a new request with idempotency protection instead.',
      requestId,
      sessionId,
      'terminal',
    );
  }
}
