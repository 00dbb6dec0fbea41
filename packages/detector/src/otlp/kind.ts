import type { SpanKindCode } from '../core/types.js';

const NAMES: Record<string, SpanKindCode> = {
  SPAN_KIND_UNSPECIFIED: 0,
  SPAN_KIND_INTERNAL: 1,
  SPAN_KIND_SERVER: 2,
  SPAN_KIND_CLIENT: 3,
  SPAN_KIND_PRODUCER: 4,
  SPAN_KIND_CONSUMER: 5,
};

export function spanKind(v: unknown): SpanKindCode {
  if (typeof v === 'number') return v >= 0 && v <= 5 ? (v as SpanKindCode) : 0;
  if (typeof v === 'string') return NAMES[v] ?? 0;
  return 0;
}
