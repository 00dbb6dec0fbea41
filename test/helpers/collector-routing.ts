import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseYaml, repoRoot } from './promql.js';

/** The shipped Collector configuration. */
const COLLECTOR_CONFIG = 'deploy/collector/config.yaml';

/** One `loadbalancing` exporter that feeds the detectors: what it keys on, where it sends. */
interface DetectorExport {
  name: string;
  attributes: string[];
  hostnames: string[];
}

/**
 * How the shipped Collector routes a span to a detector replica, read from its configuration: the
 * `routing` connector sends a span that has `sessionAttribute` to the `sessions` pipeline and any other
 * to the `stateless` one; each ends in a `loadbalancing` exporter with `routing_key: attributes`.
 */
export interface CollectorRouting {
  /** The connector's name in the traces pipeline. */
  connector: string;
  sessionAttribute: string;
  sessions: DetectorExport;
  stateless: DetectorExport;
  /**
   * The pipeline a span goes to and the key its exporter would hash for the span's trace if this span
   * came first in the batch, as contrib 0.130.0 builds it: the values of the listed attributes the span
   * has, concatenated (a missing one adds nothing). Resource and scope attributes, which the exporter
   * reads first, are not modelled: the shipped attributes are span attributes.
   */
  routeOf(attributes: Readonly<Record<string, unknown>>): { pipeline: 'sessions' | 'stateless'; key: string };
}

type Dict = Record<string, unknown>;

function fail(what: string): never {
  throw new Error(`${COLLECTOR_CONFIG}: ${what}`);
}

function detectorExport(config: Dict, pipeline: string): DetectorExport {
  const pipelines = (config.service as { pipelines: Record<string, { exporters?: string[] }> }).pipelines;
  const names = (pipelines[pipeline]?.exporters ?? []).filter((e) => e.split('/')[0] === 'loadbalancing');
  if (names.length !== 1) fail(`pipeline ${pipeline} has no single loadbalancing exporter`);
  const lb = (config.exporters as Record<string, Dict>)[names[0]!];
  if (lb?.routing_key !== 'attributes') fail(`${names[0]} does not route on attributes`);
  const hostnames = (lb.resolver as { static?: { hostnames?: string[] } }).static?.hostnames;
  if (!Array.isArray(lb.routing_attributes) || !hostnames)
    fail(`${names[0]} lacks routing_attributes or static hostnames`);
  return { name: names[0]!, attributes: lb.routing_attributes as string[], hostnames };
}

/** Reads the routing of COLLECTOR_CONFIG; throws, naming what differs, when its shape is not the one above. */
export function collectorRouting(
  config: Dict = parseYaml(readFileSync(join(repoRoot, COLLECTOR_CONFIG), 'utf8')) as Dict,
): CollectorRouting {
  const connectors = (config.connectors ?? {}) as Record<string, Dict>;
  const traces = (config.service as { pipelines: Record<string, { exporters?: string[] }> }).pipelines.traces;
  const connector = (traces?.exporters ?? []).find((e) => e.split('/')[0] === 'routing');
  if (connector === undefined || connectors[connector] === undefined)
    fail('the traces pipeline exports to no routing connector');
  const routing = connectors[connector]!;
  const table = routing.table as { context?: string; condition?: string; pipelines?: string[] }[] | undefined;
  const defaults = routing.default_pipelines as string[] | undefined;
  if (
    table?.length !== 1 ||
    table[0]!.context !== 'span' ||
    table[0]!.pipelines?.length !== 1 ||
    defaults?.length !== 1
  )
    fail(`${connector}: expected one span-context route and one default pipeline`);
  const condition = /^attributes\["([^"]+)"\] != nil$/.exec(table[0]!.condition ?? '');
  if (!condition) fail(`${connector}: expected the condition attributes["…"] != nil`);
  const sessionAttribute = condition[1]!;
  const sessions = detectorExport(config, table[0]!.pipelines![0]!);
  const stateless = detectorExport(config, defaults[0]!);
  const keyOf = (attributes: Readonly<Record<string, unknown>>, listed: readonly string[]): string =>
    listed.map((a) => (attributes[a] === undefined ? '' : String(attributes[a]))).join('');
  return {
    connector,
    sessionAttribute,
    sessions,
    stateless,
    routeOf(attributes) {
      return attributes[sessionAttribute] !== undefined
        ? { pipeline: 'sessions', key: keyOf(attributes, sessions.attributes) }
        : { pipeline: 'stateless', key: keyOf(attributes, stateless.attributes) };
    },
  };
}
