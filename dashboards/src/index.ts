// The dashboards of resumewatch and their rendering to the JSON committed in dashboards/generated.
import type * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import { detectorHealthDashboard } from './detectorHealth.js';
import { mcpServerDashboard } from './mcpServer.js';
import { overviewDashboard } from './overview.js';

import type { MonitoringConfig } from './config.js';
import { config as defaultConfig } from './config.js';

export { recordedByDashboards, VAR_DATASOURCE, VAR_SERVICE } from './queries.js';

export interface GeneratedDashboard {
  /** File name in dashboards/generated. */
  file: string;
  dashboard: dashboard.Dashboard;
}

/** The dashboards, with the thresholds, windows and selector of `config` (the generator's by default). */
export function dashboards(config: MonitoringConfig = defaultConfig): GeneratedDashboard[] {
  return [
    { file: 'overview.json', dashboard: overviewDashboard(config) },
    { file: 'detector-health.json', dashboard: detectorHealthDashboard(config) },
    { file: 'mcp-server.json', dashboard: mcpServerDashboard(config) },
  ];
}

/** The exact text written to dashboards/generated/<file>. */
export function render(d: dashboard.Dashboard): string {
  return `${JSON.stringify(d, null, 2)}\n`;
}
