// The one configuration of the generated monitoring artifacts (dashboards/generated/*.json,
// alerts/rules/*.yaml and the runbook links of the promtool cases), in the manner of a monitoring
// mixin's `_config`: change a value here and run `pnpm --filter @resumewatch/dashboards generate`.

export interface MonitoringConfig {
  /**
   * PromQL label matchers that select the detectors' scrape targets, without braces. Used by every
   * alert and panel that reads the detectors themselves (`up`, spans received, detection lag).
   */
  detectorSelector: string;
  /**
   * Where docs/runbooks.md is served; each alert's `runbook_url` is this plus `#<alert name in lower
   * case>`, and the overview dashboard links to it.
   */
  runbookBaseUrl: string;
}

/**
 * The defaults work for a user who copies the files as they are: deploy/prometheus/prometheus.yml
 * scrapes the detectors as job `resumewatch-detector`, and the runbooks travel with the rules as
 * `docs/runbooks.md` (a link relative to the root of the copied files, since resumewatch has no
 * published address). A deployment that serves the runbooks sets `runbookBaseUrl` to their address,
 * e.g. `https://git.example.com/acme/resumewatch/blob/main/docs/runbooks.md`.
 */
const DEFAULT_CONFIG: MonitoringConfig = {
  detectorSelector: 'job="resumewatch-detector"',
  runbookBaseUrl: 'docs/runbooks.md',
};

/** The configuration the generator writes the committed files with. */
export const config: MonitoringConfig = DEFAULT_CONFIG;

/** The runbook link of an alert: its section of docs/runbooks.md (GitHub-style anchor of the heading). */
export function runbookUrl(alertName: string, base: string = config.runbookBaseUrl): string {
  return `${base}#${alertName.toLowerCase()}`;
}
