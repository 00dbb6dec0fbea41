/** A request body that is not a valid OTLP export request; the message says what was wrong. */
export class OtlpDecodeError extends Error {
  override readonly name = 'OtlpDecodeError';
}

export interface DecodeResult {
  /** Spans handed to the sink. */
  spans: number;
  /** Valid spans skipped as of no use (the decoders' onSkipped): not handed to the sink, not in `spans`. */
  skipped?: number;
  /** Spans rejected as malformed (bad ids or times); they are reported as partial success. */
  invalid: number;
  /** First reason a span was rejected, for the partial-success message. */
  firstError?: string;
  /** OTLP/JSON: the ResourceSpans of the request (analyze counts documents without any). */
  resourceSpans?: number;
}
