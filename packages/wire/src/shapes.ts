/**
 * One instance of each class the wire makes per stream or per event, held for the life of the process.
 *
 * V8 keeps the hidden class (map) of an object built by a constructor only while some object has it:
 * the transitions that lead to it are weak. Between two streams no scanner, tap or event may be alive,
 * and a full GC then frees their maps; the optimised code of the scanner and the observer, which
 * checks those maps, is thrown away with them ("wrong map", "weak objects"), and the next stream pays
 * for compiling it again: more CPU than parsing thousands of events. An instance of each, built once,
 * keeps the maps, so optimised code outlives every stream.
 */
const held: object[] = [];

/** Keeps `instance` (and with it its class's map) alive; returns it. */
export function holdShape<T extends object>(instance: T): T {
  held.push(instance);
  return instance;
}
