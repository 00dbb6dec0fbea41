// The dashboards of resumewatch and their rendering to the JSON committed in dashboards/generated.
import type * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import { detectorHealthDashboard } from './detectorHealth.js';
import { overviewDashboard } from './overview.js';

export { RECORDED, VAR_DATASOURCE, VAR_SERVICE } from './queries.js';

export interface GeneratedDashboard {
  /** File name in dashboards/generated. */
  file: string;
  dashboard: dashboard.Dashboard;
}

export function dashboards(): GeneratedDashboard[] {
  return [
    { file: 'overview.json', dashboard: overviewDashboard() },
    { file: 'detector-health.json', dashboard: detectorHealthDashboard() },
  ];
}

/** The exact text written to dashboards/generated/<file>. */
export function render(d: dashboard.Dashboard): string {
  return `${JSON.stringify(d, null, 2)}\n`;
}
