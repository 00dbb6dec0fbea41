// A watched body's state is in a WeakMap keyed by its stream (watched-body.ts). V8 shrinks a WeakMap's
// table when an entry is deleted, never when the collector clears a dead key: entries left to the
// collector keep the table at the capacity it grew to (16 B a slot, a power of two) for the process's
// life. A heap snapshot of a small child process (the vitest worker's heap would take seconds to
// snapshot) weighs every WeakMap's table after 1,000 bodies read to their end one after another.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const wire = fileURLToPath(new URL('../src/index.ts', import.meta.url));

/** The child: `n` SSE bodies of one event, each read to its end by `text()`, through the observer or not. */
const child = `
import { getHeapSnapshot } from 'node:v8';
const { WireObserver } = await import(process.argv[1]);
const event = new TextEncoder().encode('id: 1\\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\\n\\n');
const server = async () => new Response(new ReadableStream({ start: (c) => { c.enqueue(event); c.close(); } }),
  { headers: { 'content-type': 'text/event-stream' } });
const fetch = process.argv[2] === 'observed' ? new WireObserver().wrap(server) : server;
let read = 0;
for (let i = 0; i < 1000; i++) {
  const response = await fetch('http://127.0.0.1/mcp', { method: 'POST', body: '{}' });
  read += (await response.text()).length;
}
if (read !== 1000 * event.length) throw new Error('short read');
for (let i = 0; i < 4; i++) gc();
const chunks = [];
for await (const chunk of getHeapSnapshot()) chunks.push(chunk);
const { snapshot: { meta }, nodes, edges, strings } = JSON.parse(Buffer.concat(chunks).toString());
const nf = meta.node_fields.length, ef = meta.edge_fields.length;
const [nName, nSize, nEdges] = ['name', 'self_size', 'edge_count'].map((f) => meta.node_fields.indexOf(f));
const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => meta.edge_fields.indexOf(f));
const edgeTypes = meta.edge_types[0];
let tables = 0;
for (let node = 0, edge = 0; node < nodes.length; node += nf) {
  const count = nodes[node + nEdges];
  if (strings[nodes[node + nName]] === 'WeakMap')
    for (let e = edge; e < edge + count * ef; e += ef)
      if (edgeTypes[edges[e + eType]] === 'internal' && strings[edges[e + eName]] === 'table') tables += nodes[edges[e + eTo] + nSize];
  edge += count * ef;
}
process.stdout.write(String(tables));
`;

/** Bytes of every WeakMap's table in the child after its 1,000 ended bodies. */
function weakMapTables(mode: 'bare' | 'observed'): number {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', child, wire, mode],
    { encoding: 'utf8' },
  );
  return Number(out);
}

describe('watched bodies that ended', () => {
  it('keep no WeakMap capacity: under 2 bytes each beyond the bare client (about 33 when left to the collector)', () => {
    const bare = weakMapTables('bare');
    const observed = weakMapTables('observed');
    expect(observed - bare).toBeLessThan(2 * 1000);
  });
});
