import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TERMINAL_DUPLICATE,
} from '@resumewatch/semconv';
import { describe, expect, it } from 'vitest';
import { M_ALL, M_DUPLICATE, M_ERROR, M_GUARD, M_STATUS, M_TASK, attributeMarks } from '../../src/core/marks.js';

describe('attributeMarks', () => {
  it('sets the bit of each rarely present attribute a record has, and no other', () => {
    expect(attributeMarks({ [ATTR_MCP_SESSION_ID]: 's', other: 1 })).toBe(0);
    expect(attributeMarks({ [ATTR_HTTP_RESPONSE_STATUS_CODE]: 200 })).toBe(M_STATUS);
    const all = { [ATTR_MCP_TASK_ID]: 't', [ATTR_ERROR_TYPE]: 'x', [ATTR_MCP_GUARD_ACTION]: 'a' };
    expect(attributeMarks(all)).toBe(M_TASK | M_ERROR | M_GUARD);
    // Present with an undefined value: marked, and the rule reads undefined as it would have before.
    expect(attributeMarks({ [ATTR_MCP_TERMINAL_DUPLICATE]: undefined })).toBe(M_DUPLICATE);
  });

  it('reads a null-prototype record (a dictionary) directly: every bit set', () => {
    const dict = Object.create(null) as Record<string, unknown>;
    dict[ATTR_MCP_SESSION_ID] = 's';
    expect(attributeMarks(dict as never)).toBe(M_ALL);
  });

  it('marks keys of every record shape, whatever the order or how the record was built', () => {
    const spread = { ...{ a: 1 }, [ATTR_MCP_TASK_ID]: 't' };
    const assigned: Record<string, unknown> = {};
    assigned.b = 2;
    assigned[ATTR_MCP_TASK_ID] = 't';
    expect(attributeMarks(spread)).toBe(M_TASK);
    expect(attributeMarks(assigned as never)).toBe(M_TASK);
  });
});
