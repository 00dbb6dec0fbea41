import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_GUARD_ACTION,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  ATTR_MCP_STREAM_ID,
  ATTR_MCP_TASK_ID,
  ATTR_MCP_TERMINAL_DUPLICATE,
} from '@resumewatch/semconv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CommonAttributes,
  M_ALL,
  M_DUPLICATE,
  M_ERROR,
  M_GUARD,
  M_STATUS,
  M_TASK,
  attributeMarks,
} from '../../src/core/marks.js';

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

describe('attributeMarks, the common attributes', () => {
  const read = (attrs: object): CommonAttributes => {
    const common = new CommonAttributes();
    attributeMarks(attrs as never, common);
    return common;
  };
  const direct = (attrs: Record<string, unknown>) => ({
    session: attrs[ATTR_MCP_SESSION_ID],
    request: attrs[ATTR_JSONRPC_REQUEST_ID],
    method: attrs[ATTR_MCP_METHOD_NAME],
    stream: attrs[ATTR_MCP_STREAM_ID],
  });

  it('reads the session, request id, method and stream id as a lookup by name does, with the marks', () => {
    const attrs = {
      [ATTR_MCP_SESSION_ID]: 's',
      [ATTR_JSONRPC_REQUEST_ID]: 7,
      [ATTR_MCP_METHOD_NAME]: 'tools/call',
      [ATTR_MCP_STREAM_ID]: 'st',
      [ATTR_MCP_TASK_ID]: 't',
    };
    const common = new CommonAttributes();
    expect(attributeMarks(attrs, common)).toBe(M_TASK);
    expect({ ...common }).toEqual(direct(attrs));
  });

  it('forgets the last record: an attribute a record lacks reads undefined', () => {
    const common = new CommonAttributes();
    attributeMarks({ [ATTR_MCP_SESSION_ID]: 's', [ATTR_MCP_STREAM_ID]: 'x' }, common);
    attributeMarks({ [ATTR_JSONRPC_REQUEST_ID]: '1' }, common);
    expect({ ...common }).toEqual({ session: undefined, request: '1', method: undefined, stream: undefined });
  });

  it('is not fooled by other keys of the same lengths, nor by values of any type', () => {
    // Keys of each common name's length that are not it, and a marked key among them.
    const lookalikes: Record<string, unknown> = { [ATTR_HTTP_RESPONSE_STATUS_CODE]: 503 };
    for (const name of [ATTR_MCP_SESSION_ID, ATTR_JSONRPC_REQUEST_ID, ATTR_MCP_METHOD_NAME, ATTR_MCP_STREAM_ID])
      lookalikes[`X${name.slice(1)}`] = 'not it';
    expect(attributeMarks(lookalikes as never, new CommonAttributes())).toBe(M_STATUS);
    expect({ ...read(lookalikes) }).toEqual(direct(lookalikes));
    for (const value of [undefined, 0, -1.5, true, '', 'x'.repeat(1000)]) {
      const attrs = {
        a: 1,
        [ATTR_MCP_SESSION_ID]: value,
        [ATTR_JSONRPC_REQUEST_ID]: value,
        [ATTR_MCP_STREAM_ID]: value,
      };
      expect({ ...read(attrs) }).toEqual(direct(attrs));
    }
  });

  it('reads records of every shape as a lookup by name does, and a dictionary`s that its caller reads (fast-check)', () => {
    const names = [ATTR_MCP_SESSION_ID, ATTR_JSONRPC_REQUEST_ID, ATTR_MCP_METHOD_NAME, ATTR_MCP_STREAM_ID];
    const key = fc.oneof(fc.constantFrom(...names, ATTR_MCP_TASK_ID, ATTR_ERROR_TYPE), fc.string({ maxLength: 20 }));
    const value = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean());
    fc.assert(
      fc.property(
        fc.array(fc.tuple(key, value), { maxLength: 12 }),
        fc.boolean(),
        fc.boolean(),
        (entries, dictionary, stream) => {
          const attrs: Record<string, unknown> = dictionary ? Object.create(null) : {};
          for (const [k, v] of entries) attrs[k] = v;
          const common = new CommonAttributes();
          attributeMarks(attrs as never, common, stream);
          const expected = direct(attrs);
          // A dictionary's are looked up, only those the caller reads: a stream span's, or a request span's.
          if (dictionary && stream) expected.method = undefined;
          if (dictionary && !stream) expected.request = expected.stream = undefined;
          expect({ ...common }).toEqual(expected);
        },
      ),
      { numRuns: 500, seed: 47 },
    );
  });
});
