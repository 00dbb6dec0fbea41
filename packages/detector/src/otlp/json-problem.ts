/*
 * What the OTLP/JSON walk (json-walk.ts) records when the body is JSON but not the OTLP it expects. The
 * decoder reads bytes instead of calling JSON.parse (json.ts says why) and makes span records as it goes,
 * so a problem is kept among the records in document order: json.ts hands the records that precede a
 * structural error to the sink before throwing it, as the walk over parsed objects did.
 */

/** A malformed span (counted, skipped) or a structural error (thrown), in document order among the records. */
export class Problem {
  constructor(
    readonly fatal: boolean,
    readonly message: string,
  ) {}
}
