export * from './spans.js';
export * from './attributes.js';
export * from './values.js';
export * from './meta.js';
export * from './metrics.js';
export * from './routes.js';
export * from './page.js';
export type { ValuesOf } from './types.js';
export * from './resume-verdict.js';
