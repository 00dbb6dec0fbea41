// Heap probes for the memory tests, without starting the test process with --expose-gc.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
/** A full garbage collection. */
const gc = runInNewContext('gc') as () => void;

/** Bytes still held after full collections: the JS heap in use and the array buffers' memory. */
export function heldBytes(): number {
  for (let i = 0; i < 4; i++) gc();
  const memory = process.memoryUsage();
  return memory.heapUsed + memory.arrayBuffers;
}
