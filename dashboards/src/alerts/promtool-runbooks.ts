// The promtool cases (alerts/test/promtool/*.test.yaml) are written by hand, but the `runbook_url`
// each expected alert must carry is the configuration's: the generator rewrites those lines.
import { runbookUrl } from '../config.js';

/**
 * The text of a promtool test file with every `runbook_url:` line set to the runbook of the alert of
 * its `alertname:` (the nearest one above it). Nothing else changes, comments and layout included.
 */
export function renewRunbookUrls(text: string, runbookBaseUrl: string): string {
  let alertName: string | undefined;
  return text
    .split('\n')
    .map((line, i) => {
      const name = /^\s*(?:- )?alertname:\s*(\S+)\s*$/.exec(line);
      if (name) alertName = name[1];
      const url = /^(\s*)runbook_url:/.exec(line);
      if (!url) return line;
      if (alertName === undefined) throw new Error(`runbook_url on line ${i + 1} has no alertname above it`);
      return `${url[1]}runbook_url: ${runbookUrl(alertName, runbookBaseUrl)}`;
    })
    .join('\n');
}
