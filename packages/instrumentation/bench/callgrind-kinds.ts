/**
 * A callgrind dump's instructions by who spent them: V8's garbage collector, V8's compilers (parsing,
 * bytecode, Sparkplug, Maglev, TurboFan, deoptimisation), and the rest (the program itself: JIT code,
 * V8's builtins and runtime, Node's native code, libc). Split by the native function each instruction
 * ran in (its self cost), whatever the thread. The split matters because on the client's path the
 * collector's and the compilers' shares move by tens of percent from 100 calls to the next (a major
 * collection falls in some, a function is optimised again in others), while the rest is the same to
 * within a few percent: what a change to the code saves shows in the rest first.
 */
import { readFileSync } from 'node:fs';

export interface InstructionKinds {
  total: number;
  collector: number;
  compiler: number;
}

// V8's internal names (C++ symbols of the node binary). The collector's: heap, marking, scavenging,
// sweeping, compaction and their worklists and visitors. The compilers': parser and scanner, the
// bytecode generator, the optimising tiers, their zones, deoptimisation.
const COLLECTOR =
  /(Heap|MarkCompact|Scaveng|Sweep|Marking|Evacuat|Remembered|SlotSet|MemoryChunk|Compaction|WeakObjects|GCTracer|PagedSpace|LargeObjectSpace|NewSpace|SemiSpace|Collector|FreeList|MinorMS|heap::base|cppgc|IterateObjectCache|BodyDescriptor|Worklist)/;
const COMPILER =
  /(compiler::|maglev::|baseline::|interpreter::|turboshaft|Parser|Scanner|Compil|Zone|Bytecode|Deoptimiz|Ast)/;

/** Sums the self cost of each function of a callgrind out file (event `Ir` only, name compression). */
export function instructionKinds(path: string): InstructionKinds {
  const names = new Map<string, string>();
  const kinds: InstructionKinds = { total: 0, collector: 0, compiler: 0 };
  let kind: 'collector' | 'compiler' | undefined;
  let afterCalls = false;
  for (const line of readFileSync(path, 'latin1').split('\n')) {
    if (line.startsWith('fn=') || line.startsWith('cfn=')) {
      const m = /^c?fn=\((\d+)\)(?: (.*))?$/.exec(line);
      let name = line.slice(line.indexOf('=') + 1);
      if (m) {
        if (m[2] !== undefined) names.set(m[1]!, m[2]);
        name = names.get(m[1]!) ?? '';
      }
      if (line.startsWith('fn=')) {
        kind = COLLECTOR.test(name) ? 'collector' : COMPILER.test(name) ? 'compiler' : undefined;
        afterCalls = false;
      }
      continue;
    }
    // The cost line after `calls=` is the callee's inclusive cost, not this function's own.
    if (line.startsWith('calls=')) {
      afterCalls = true;
      continue;
    }
    const c = line.charCodeAt(0);
    if ((c >= 48 && c <= 57) || c === 43 || c === 45 || c === 42) {
      if (afterCalls) {
        afterCalls = false;
        continue;
      }
      const cost = Number(line.split(' ')[1] ?? 0);
      kinds.total += cost;
      if (kind) kinds[kind] += cost;
    }
  }
  return kinds;
}
