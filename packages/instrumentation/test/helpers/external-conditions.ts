import { register } from 'node:module';

/**
 * The root vitest config resolves workspace packages through the `source` export condition and
 * vitest passes it to Node (`--conditions source`) for externalized dependencies too. Some packages
 * in node_modules (eventsource-parser, used by the MCP SDK client) publish a `source` condition
 * pointing at TypeScript that Node cannot load, so resolution from inside node_modules drops it.
 */
const hook = `
export async function resolve(specifier, context, next) {
  if (context.parentURL && context.parentURL.includes('/node_modules/') && context.conditions.includes('source')) {
    return next(specifier, { ...context, conditions: context.conditions.filter((c) => c !== 'source') });
  }
  return next(specifier, context);
}`;

register(`data:text/javascript,${encodeURIComponent(hook)}`);
