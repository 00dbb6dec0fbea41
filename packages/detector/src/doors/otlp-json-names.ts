/**
 * The protobuf JSON mapping lets a parser accept a field under its lowerCamelCase JSON name or its
 * original proto (snake_case) name: `resource_spans`, `scope_spans`, `trace_id`, `start_time_unix_nano`,
 * `string_value`, ... The OTLP/JSON decoder reads both itself, by this function's rule; this renames the
 * snake_case keys of a parsed document in place, at every depth, for other readers. OTLP trace messages
 * have no maps keyed by user data (attributes are lists of {key, value}), so every object key is a field
 * name and renaming is safe.
 */
export function camelCaseOtlpFieldNames(value: unknown): void {
  // An explicit stack, not recursion: a document may be nested deeper than the call stack goes.
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (Array.isArray(next)) {
      for (const item of next) pending.push(item);
      continue;
    }
    if (typeof next !== 'object' || next === null) continue;
    const obj = next as Record<string, unknown>;
    for (const key of Object.keys(obj)) {
      const child = obj[key];
      if (key.includes('_')) {
        const camel = key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
        // Both spellings present: the lowerCamelCase one wins, as it is what the decoder reads.
        if (!(camel in obj)) obj[camel] = child;
        delete obj[key];
      }
      pending.push(child);
    }
  }
}
