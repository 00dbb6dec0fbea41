/**
 * The protobuf JSON mapping lets a parser accept a field under its lowerCamelCase JSON name or its
 * original proto (snake_case) name: `resource_spans`, `scope_spans`, `trace_id`, `start_time_unix_nano`,
 * `string_value`, ... The OTLP/JSON decoder reads the lowerCamelCase names; this renames snake_case keys
 * in place, at every depth, before it. OTLP trace messages have no maps keyed by user data (attributes
 * are lists of {key, value}), so every object key is a field name and renaming is safe.
 */
export function camelCaseOtlpFieldNames(value: unknown): void {
  if (Array.isArray(value)) {
    for (const item of value) camelCaseOtlpFieldNames(item);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  const obj = value as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    const child = obj[key];
    if (key.includes('_')) {
      const camel = key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
      // Both spellings present: the lowerCamelCase one wins, as it is what the decoder reads.
      if (!(camel in obj)) obj[camel] = child;
      delete obj[key];
    }
    camelCaseOtlpFieldNames(child);
  }
}

/** How many ResourceSpans an export request document holds (0 when it has none, or is no such document). */
export function resourceSpansCount(doc: unknown): number {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return 0;
  const rss = (doc as { resourceSpans?: unknown }).resourceSpans;
  return Array.isArray(rss) ? rss.length : 0;
}
