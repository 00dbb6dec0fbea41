// Small helpers over the Grafana Foundation SDK builders, so every panel gets a datasource, a unit,
// stable refIds and an explicit position.
import * as common from '@grafana/grafana-foundation-sdk/common';
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import * as prometheus from '@grafana/grafana-foundation-sdk/prometheus';
import * as stat from '@grafana/grafana-foundation-sdk/stat';
import * as timeseries from '@grafana/grafana-foundation-sdk/timeseries';
import type { MonitoringConfig } from './config.js';
import { VAR_DATASOURCE, VAR_INSTANCE, VAR_SERVICE } from './queries.js';
import { METRIC_TERMINAL_EVENTS_TOTAL, LABEL_SERVICE } from '@resumewatch/semconv';

const PROMETHEUS: dashboard.DataSourceRef = { type: 'prometheus', uid: `\${${VAR_DATASOURCE}}` };

interface Query {
  expr: string;
  legend: string;
  /** Ask Prometheus for exemplars (trace_id → the trace backend, configured on the datasource). */
  exemplar?: boolean;
}

/** Width (of 24 columns) and height; the SDK's builder lays panels out left to right, row by row. */
interface Place {
  w: number;
  h: number;
}

function targets(queries: Query[]): prometheus.DataqueryBuilder[] {
  return queries.map((q, i) =>
    new prometheus.DataqueryBuilder()
      .datasource(PROMETHEUS)
      .refId(String.fromCharCode(65 + i))
      .expr(q.expr)
      .legendFormat(q.legend)
      .range()
      .exemplar(q.exemplar ?? false),
  );
}

export interface SeriesPanel {
  id: number;
  title: string;
  description: string;
  unit: string;
  queries: Query[];
  at: Place;
  stacked?: boolean;
  bars?: boolean;
  min?: number;
  max?: number;
}

export function series(p: SeriesPanel): timeseries.PanelBuilder {
  const b = new timeseries.PanelBuilder()
    .id(p.id)
    .title(p.title)
    .description(p.description)
    .datasource(PROMETHEUS)
    .unit(p.unit)
    .span(p.at.w)
    .height(p.at.h)
    .min(p.min ?? 0)
    .fillOpacity(p.stacked ? 40 : 10)
    .lineWidth(1)
    .showPoints(common.VisibilityMode.Never)
    .legend(
      new common.VizLegendOptionsBuilder()
        .showLegend(true)
        .displayMode(common.LegendDisplayMode.Table)
        .placement(common.LegendPlacement.Bottom)
        .calcs(['lastNotNull', 'max']),
    )
    .tooltip(
      new common.VizTooltipOptionsBuilder().mode(common.TooltipDisplayMode.Multi).sort(common.SortOrder.Descending),
    )
    .targets(targets(p.queries));
  if (p.max !== undefined) b.max(p.max);
  if (p.stacked) b.stacking(new common.StackingConfigBuilder().mode(common.StackingMode.Normal));
  if (p.bars) b.drawStyle(common.GraphDrawStyle.Bars);
  return b;
}

export interface StatPanel {
  id: number;
  title: string;
  description: string;
  unit: string;
  query: Query;
  at: Place;
  /** Value from which the stat turns red (orange from 1 when warnAtOne). */
  red: number;
  mappings?: dashboard.ValueMapping[];
  reducer?: string;
}

export function single(p: StatPanel): stat.PanelBuilder {
  return new stat.PanelBuilder()
    .id(p.id)
    .title(p.title)
    .description(p.description)
    .datasource(PROMETHEUS)
    .unit(p.unit)
    .span(p.at.w)
    .height(p.at.h)
    .decimals(0)
    .mappings(p.mappings ?? [])
    .colorMode(common.BigValueColorMode.Background)
    .graphMode(common.BigValueGraphMode.Area)
    .textMode(common.BigValueTextMode.Auto)
    .reduceOptions(new common.ReduceDataOptionsBuilder().calcs([p.reducer ?? 'lastNotNull']).values(false))
    .thresholds(
      new dashboard.ThresholdsConfigBuilder().mode(dashboard.ThresholdsMode.Absolute).steps([
        { value: null, color: 'green' },
        { value: p.red, color: 'red' },
      ]),
    )
    .targets(targets([p.query]));
}

/**
 * Where the stat of a count turns red for an alert that fires when that count is `> threshold`: the
 * first whole count above it (1 for a threshold of 0).
 */
export function firingCount(threshold: number): number {
  return Math.floor(threshold) + 1;
}

export function row(id: number, title: string): dashboard.RowBuilder {
  return new dashboard.RowBuilder(title).id(id);
}

/**
 * What every resumewatch dashboard starts with: its title, uid, description and tags, the shared time
 * settings, its links (the runbooks when given, then the other resumewatch dashboards, under
 * `dashboardsLink`) and the datasource variable.
 */
export function resumewatchDashboard(d: {
  title: string;
  uid: string;
  description: string;
  tags: string[];
  runbooks?: string;
  dashboardsLink: string;
}): dashboard.DashboardBuilder {
  const builder = new dashboard.DashboardBuilder(d.title)
    .uid(d.uid)
    .description(d.description)
    .tags(d.tags)
    .editable()
    .tooltip(dashboard.DashboardCursorSync.Crosshair)
    .refresh('30s')
    .time({ from: 'now-1h', to: 'now' })
    .timezone('browser');
  if (d.runbooks !== undefined)
    builder.link(
      new dashboard.DashboardLinkBuilder('Runbooks')
        .type(dashboard.DashboardLinkType.Link)
        .url(d.runbooks)
        .targetBlank(true),
    );
  return builder
    .link(
      new dashboard.DashboardLinkBuilder(d.dashboardsLink)
        .type(dashboard.DashboardLinkType.Dashboards)
        .tags(['resumewatch'])
        .asDropdown(false)
        .includeVars(true)
        .keepTime(true),
    )
    .withVariable(datasourceVariable());
}

function datasourceVariable(): dashboard.DatasourceVariableBuilder {
  return new dashboard.DatasourceVariableBuilder(VAR_DATASOURCE)
    .label('Prometheus')
    .type('prometheus')
    .current({ text: 'Prometheus', value: 'prometheus' });
}

/** The service variable, its values the `service` label of `series` (by default the clients' terminal events). */
export function serviceVariable(
  series = METRIC_TERMINAL_EVENTS_TOTAL,
  description = "service.name of the instrumented MCP clients (the detector's service label)",
): dashboard.QueryVariableBuilder {
  return new dashboard.QueryVariableBuilder(VAR_SERVICE)
    .label('service')
    .description(description)
    .datasource(PROMETHEUS)
    .query(`label_values(${series}, ${LABEL_SERVICE})`)
    .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
    .sort(dashboard.VariableSort.AlphabeticalAsc)
    .multi(true)
    .includeAll(true)
    .allValue('.*')
    .current({ text: 'All', value: '$__all' });
}

export function instanceVariable(config: MonitoringConfig): dashboard.QueryVariableBuilder {
  return new dashboard.QueryVariableBuilder(VAR_INSTANCE)
    .label('detector replica')
    .datasource(PROMETHEUS)
    .query(`label_values(up{${config.detectorSelector}}, instance)`)
    .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
    .sort(dashboard.VariableSort.AlphabeticalAsc)
    .multi(true)
    .includeAll(true)
    .allValue('.*')
    .current({ text: 'All', value: '$__all' });
}
