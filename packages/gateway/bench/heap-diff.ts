/**
 * Two heap snapshots of one process (heap-probe.ts writes them), compared: the objects in the second
 * that the first did not have (V8 keeps an object's snapshot id across snapshots of one process),
 * grouped by kind and constructor (or function, or V8's internal name), with their count and self
 * size per unit (`--per`, e.g. the streams held open), largest first; with `--retainers k`, for the
 * k largest groups, what holds their objects (the retainer's group and the edge's name), so that each
 * group can be placed in the objects of a stream.
 *
 *   node --import tsx bench/heap-diff.ts <before.heapsnapshot> <after.heapsnapshot> [--per 2000]
 *     [--top 60] [--retainers 20] [--group 'object:Exchange'] [--show 'object:Set']
 *
 * `--show g`: two new objects of group g, each with its edges and a chain of its retainers.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    per: { type: 'string', default: '1' },
    top: { type: 'string', default: '60' },
    retainers: { type: 'string', default: '0' },
    group: { type: 'string', multiple: true },
    show: { type: 'string', multiple: true },
  },
});
const PER = Number(values.per);

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

function load(path: string): Snapshot {
  return JSON.parse(readFileSync(path, 'utf8')) as Snapshot;
}

const [beforePath, afterPath] = positionals as [string, string];
const before = load(beforePath);
const meta = before.snapshot.meta;
const NF = meta.node_fields.length;
const EF = meta.edge_fields.length;
const [fType, fName, fId, fSize, fEdges] = ['type', 'name', 'id', 'self_size', 'edge_count'].map((f) =>
  meta.node_fields.indexOf(f),
) as [number, number, number, number, number];
const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => meta.edge_fields.indexOf(f)) as [
  number,
  number,
  number,
];
const nodeTypes = meta.node_types[0];
const edgeTypes = meta.edge_types[0];

const beforeIds = new Set<number>();
for (let i = 0; i < before.nodes.length; i += NF) beforeIds.add(before.nodes[i + fId]!);
before.nodes = [];
before.edges = [];
before.strings = [];

const after = load(afterPath);
const { nodes, edges, strings } = after;

/** A node's group: its kind, and for most kinds its name (strings and numbers by kind only). */
function group(n: number): string {
  const type = nodeTypes[nodes[n + fType]!]!;
  if (type === 'string' || type === 'concatenated string' || type === 'sliced string' || type === 'number') return type;
  let name = strings[nodes[n + fName]!]!;
  if (type === 'code' || type === 'hidden') name = name.replace(/\d+/g, '#');
  if (name.length > 70) name = `${name.slice(0, 70)}…`;
  return `${type}:${name}`;
}

const fresh = new Uint8Array(nodes.length / NF);
const groups = new Map<string, { count: number; size: number }>();
let total = 0;
for (let n = 0; n < nodes.length; n += NF) {
  if (beforeIds.has(nodes[n + fId]!)) continue;
  fresh[n / NF] = 1;
  const g = group(n);
  const row = groups.get(g) ?? { count: 0, size: 0 };
  row.count++;
  row.size += nodes[n + fSize]!;
  total += nodes[n + fSize]!;
  groups.set(g, row);
}
const rows = [...groups].sort((a, b) => b[1].size - a[1].size);
console.log(`new objects' self size: ${(total / PER).toFixed(0)} B per unit (${total} B, per ${PER})`);
console.log('bytes/unit  count/unit  group');
for (const [g, r] of rows.slice(0, Number(values.top)))
  console.log(`${(r.size / PER).toFixed(1).padStart(10)}  ${(r.count / PER).toFixed(2).padStart(10)}  ${g}`);

const wanted = new Set([...rows.slice(0, Number(values.retainers)).map(([g]) => g), ...(values.group ?? [])]);
if (wanted.size) {
  // Reverse edges of the new objects in the groups wanted: retainer group + edge name, counted.
  const firstEdge = new Uint32Array(nodes.length / NF + 1);
  for (let i = 0, e = 0; i < nodes.length / NF; i++) {
    firstEdge[i] = e;
    e += nodes[i * NF + fEdges]! * EF;
  }
  const retainedBy = new Map<string, Map<string, number>>();
  for (let i = 0; i < nodes.length / NF; i++) {
    const from = i * NF;
    const end = firstEdge[i]! + nodes[from + fEdges]! * EF;
    for (let e = firstEdge[i]!; e < end; e += EF) {
      const to = edges[e + eTo]!;
      if (!fresh[to / NF]) continue;
      const g = group(to);
      if (!wanted.has(g)) continue;
      const et = edgeTypes[edges[e + eType]!]!;
      if (et === 'weak') continue;
      const name =
        et === 'element' || et === 'hidden' ? `[${et}]` : String(strings[edges[e + eName]!] ?? edges[e + eName]);
      const key = `${group(from)} .${name}${fresh[i] ? '' : ' (old)'}`;
      const m = retainedBy.get(g) ?? new Map<string, number>();
      m.set(key, (m.get(key) ?? 0) + 1);
      retainedBy.set(g, m);
    }
  }
  for (const g of wanted) {
    console.log(`\n${g} (${((groups.get(g)?.count ?? 0) / PER).toFixed(2)}/unit) held by:`);
    const m = [...(retainedBy.get(g) ?? [])].sort((a, b) => b[1] - a[1]).slice(0, 8);
    for (const [k, c] of m) console.log(`  ${(c / PER).toFixed(2).padStart(8)}  ${k}`);
  }
}

if (values.show?.length) {
  const count = nodes.length / NF;
  const firstEdge = new Uint32Array(count + 1);
  for (let i = 0, e = 0; i < count; i++) {
    firstEdge[i] = e;
    e += nodes[i * NF + fEdges]! * EF;
  }
  firstEdge[count] = edges.length;
  const retainer = new Int32Array(count).fill(-1);
  const retainerEdge = new Int32Array(count).fill(-1);
  for (let i = 0; i < count; i++)
    for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += EF) {
      const et = edgeTypes[edges[e + eType]!]!;
      if (et === 'weak' || et === 'shortcut') continue;
      const to = edges[e + eTo]! / NF;
      // The first retainer of another kind than a linked list's own (keeps chains short).
      if (retainer[to] === -1) {
        retainer[to] = i;
        retainerEdge[to] = e;
      }
    }
  const edgeName = (e: number) => {
    const et = edgeTypes[edges[e + eType]!]!;
    return et === 'element' || et === 'hidden' ? `[${edges[e + eName]}]` : String(strings[edges[e + eName]!]);
  };
  const describe = (i: number) => {
    const n = i * NF;
    const type = nodeTypes[nodes[n + fType]!]!;
    const name = strings[nodes[n + fName]!]!;
    return `${type}:${name.length > 80 ? name.slice(0, 80) + '…' : name} @${nodes[n + fId]} (${nodes[n + fSize]} B)${fresh[i] ? '' : ' old'}`;
  };
  for (const g of values.show) {
    let shown = 0;
    for (let i = 0; i < count && shown < 2; i++) {
      if (!fresh[i] || group(i * NF) !== g) continue;
      shown++;
      console.log(`\n${describe(i)}`);
      for (let e = firstEdge[i]!; e < firstEdge[i + 1]! && e < firstEdge[i]! + 40 * EF; e += EF)
        console.log(`  .${edgeName(e)} -> ${describe(edges[e + eTo]! / NF)}`);
      let at = i;
      for (let depth = 0; depth < 12 && retainer[at]! >= 0; depth++) {
        console.log(`  <- .${edgeName(retainerEdge[at]!)} of ${describe(retainer[at]!)}`);
        at = retainer[at]!;
      }
    }
  }
}
