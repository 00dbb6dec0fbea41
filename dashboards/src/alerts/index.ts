// The Prometheus rule files of resumewatch and their rendering to the YAML committed in alerts/rules.
import type { MonitoringConfig } from '../config.js';
import { detectorRules } from './detector.js';
import { failureRules } from './failure.js';
import { gatewayRules } from './gateway.js';
import { mcpServerRules } from './mcpServer.js';
import type { RuleFile } from './model.js';
import { recordingRules } from './recording.js';
import { renderRuleFile } from './render.js';

export { renewRunbookUrls } from './promtool-runbooks.js';

function ruleFiles(config: MonitoringConfig): RuleFile[] {
  return [
    recordingRules(config),
    failureRules(config),
    detectorRules(config),
    gatewayRules(config),
    mcpServerRules(config),
  ];
}

/** File name in alerts/rules → its exact text. */
export function renderedRuleFiles(config: MonitoringConfig): Map<string, string> {
  return new Map(ruleFiles(config).map((file) => [file.file, renderRuleFile(file, config)]));
}
