// The shape of the Prometheus rule files the generator writes to alerts/rules/*.yaml.

type Severity = 'critical' | 'warning' | 'info';

interface RecordingRule {
  /** Written as YAML comment lines above the rule. */
  comment?: string;
  record: string;
  /** PromQL; a text with line breaks is written as a block (`|`) and keeps its final line break. */
  expr: string;
}

export interface AlertingRule {
  comment?: string;
  alert: string;
  expr: string;
  for: string;
  severity: Severity;
  /** Annotation `summary`, one line, templated. */
  summary: string;
  /**
   * Annotation `description`, written as a folded block (`>-`): its line breaks are for the reader of
   * the YAML and read as spaces. The `runbook_url` annotation is generated from the configuration.
   */
  description: string;
}

export type Rule = RecordingRule | AlertingRule;

interface RuleGroup {
  comment?: string;
  name: string;
  rules: Rule[];
}

export interface RuleFile {
  /** File name in alerts/rules. */
  file: string;
  /** The comment at the top of the file. */
  header: string;
  groups: RuleGroup[];
}

export function isAlertingRule(rule: Rule): rule is AlertingRule {
  return 'alert' in rule;
}
