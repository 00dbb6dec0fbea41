export { runDemo } from './demo.js';
export type { DemoRun } from './demo.js';
export { formatRun } from './format.js';
