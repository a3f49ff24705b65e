import { Registry, type Metric } from 'prom-client';

// Metrics of several processes as one: what a registry's getMetricsAsJSON() gives, made plain
// (so it crosses the IPC channel to the primary), summed series by series, and written as
// Prometheus text. Summing is the one rule: a counter or a histogram of every process adds
// up; a series labelled by child (labelledBy) is one process's, so summing leaves it as it
// is, except that the figures a dead child last reported add to its successor's. prom-client's
// AggregatorRegistry.aggregate would sum too, but goes by each metric's own aggregator, which
// for Node's figures averages, takes the first or omits (process_start_time_seconds).

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary';

export interface SeriesJson {
  value: number;
  labels: Record<string, string | number>;
  /** a histogram's _bucket, _sum or _count line; absent: the metric's own name */
  metricName?: string;
}

export interface MetricJson {
  name: string;
  help: string;
  type: MetricType;
  values: SeriesJson[];
}

/** A registry's figures as plain data (no functions, no class instances): what a child sends the primary. */
export async function metricsJson(registry: Registry): Promise<MetricJson[]> {
  const metrics = await registry.getMetricsAsJSON();
  return metrics.map((m) => ({
    name: m.name,
    help: m.help,
    type: String(m.type) as MetricType,
    values: m.values.map((v) => {
      const series: SeriesJson = { value: v.value, labels: { ...v.labels } as Record<string, string | number> };
      const { metricName } = v as { metricName?: string };
      if (metricName !== undefined) series.metricName = metricName;
      return series;
    }),
  }));
}

/** The series that only grow (counters and histograms): what may be carried over from a process that is gone. */
export function monotonic(metrics: readonly MetricJson[]): MetricJson[] {
  return metrics.filter((m) => m.type === 'counter' || m.type === 'histogram');
}

/** Every series with one more label (child="0"), so the processes' series stay apart when summed. */
export function labelledBy(metrics: readonly MetricJson[], name: string, value: string): MetricJson[] {
  return metrics.map((m) => ({ ...m, values: m.values.map((v) => ({ ...v, labels: { ...v.labels, [name]: value } })) }));
}

/** Series of the same metric, line name and labels summed over the parts; help and type of the first part that has the metric. */
export function sumMetrics(parts: readonly (readonly MetricJson[])[]): MetricJson[] {
  const byName = new Map<string, { metric: MetricJson; byKey: Map<string, SeriesJson> }>();
  for (const part of parts) {
    for (const m of part) {
      let entry = byName.get(m.name);
      if (!entry) byName.set(m.name, (entry = { metric: { name: m.name, help: m.help, type: m.type, values: [] }, byKey: new Map() }));
      for (const v of m.values) {
        const key = seriesKey(v);
        const seen = entry.byKey.get(key);
        if (seen) {
          seen.value += v.value;
        } else {
          const copy = { ...v, labels: { ...v.labels } };
          entry.byKey.set(key, copy);
          entry.metric.values.push(copy);
        }
      }
    }
  }
  return [...byName.values()].map((e) => e.metric);
}

function seriesKey(v: SeriesJson): string {
  const labels = Object.keys(v.labels).sort().map((k) => [k, String(v.labels[k])]);
  return JSON.stringify([v.metricName ?? '', labels]);
}

/** Prometheus text of these metrics, written by prom-client as it writes its own registries. */
export function metricsText(metrics: readonly MetricJson[]): Promise<string> {
  const registry = new Registry();
  for (const m of metrics) {
    const snapshot = { ...m, aggregator: 'sum' };
    registry.registerMetric({ ...snapshot, get: () => snapshot } as unknown as Metric);
  }
  return registry.metrics();
}
