import { register } from 'node:module';

/**
 * vitest passes the root config's `source` condition to Node (`--conditions source`), also for
 * dependencies in node_modules. eventsource-parser (used by the SDK client) publishes a `source`
 * condition pointing at TypeScript Node cannot load, so resolution from node_modules drops it.
 */
const hook = `
export async function resolve(specifier, context, next) {
  if (context.parentURL && context.parentURL.includes('/node_modules/') && context.conditions.includes('source')) {
    return next(specifier, { ...context, conditions: context.conditions.filter((c) => c !== 'source') });
  }
  return next(specifier, context);
}`;

register(`data:text/javascript,${encodeURIComponent(hook)}`);
