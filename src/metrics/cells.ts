import type { Metric } from 'prom-client';

// The series the request path records into, as plain numbers in objects bound once (at
// start, or on the first request of a route and status): recording is an addition, never a
// label hash or an allocation, unlike prom-client's own children (which hash their labels
// on every call). prom-client's Registry reads them at scrape time through get(), in the
// shape its own Counter and Histogram give it, and writes the text.

export type Labels = Readonly<Record<string, string>>;

/** A counter series bound to its labels. */
export interface Count {
  inc(by?: number): void;
}

/** A histogram series bound to its labels; values in seconds. */
export interface Observe {
  observe(seconds: number): void;
}

/** What recording is when metrics are off (METRICS=0): nothing. */
export const NOTHING: Count & Observe = { inc() {}, observe() {} };

interface Value {
  labels: Labels;
  value: number;
  metricName?: string;
}

class CounterCell implements Count {
  value = 0;
  constructor(readonly labels: Labels) {}
  inc(by = 1): void {
    this.value += by;
  }
}

class HistogramCell implements Observe {
  /** observations per bucket (not cumulative): the last one is +Inf */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(readonly labels: Labels, private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(seconds: number): void {
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && seconds > (bounds[i] as number)) i++;
    (this.counts[i] as number)++;
    this.sum += seconds;
    this.count++;
  }
}

/** One metric's series, each bound once by its labels. */
abstract class Family<C extends { labels: Labels }> {
  private readonly cells = new Map<string, C>();

  constructor(readonly name: string, readonly help: string, readonly enabled: boolean) {}

  protected abstract make(labels: Labels): C;
  protected abstract values(cell: C): Value[];
  abstract readonly type: 'counter' | 'histogram';

  /** The series of these labels (made on first use; later calls return the same one). */
  protected bind(labels: Labels): C {
    const key = JSON.stringify(labels);
    let cell = this.cells.get(key);
    if (!cell) this.cells.set(key, (cell = this.make(labels)));
    return cell;
  }

  /** What prom-client's Registry reads (Metric.get). */
  get(): Promise<{ name: string; help: string; type: string; aggregator: 'sum'; values: Value[] }> {
    const values = [...this.cells.values()].flatMap((c) => this.values(c));
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: 'sum', values });
  }

  reset(): void {
    this.cells.clear();
  }

  /** As the registry takes it: its type names prom-client's classes, of which this reads like one. */
  asMetric(): Metric {
    return this as unknown as Metric;
  }
}

export class CounterFamily extends Family<CounterCell> {
  readonly type = 'counter';

  series(labels: Labels): Count {
    return this.enabled ? this.bind(labels) : NOTHING;
  }

  protected make(labels: Labels): CounterCell {
    return new CounterCell(labels);
  }

  protected values(cell: CounterCell): Value[] {
    return [{ labels: cell.labels, value: cell.value }];
  }
}

export class HistogramFamily extends Family<HistogramCell> {
  readonly type = 'histogram';

  constructor(name: string, help: string, enabled: boolean, private readonly bounds: readonly number[]) {
    super(name, help, enabled);
  }

  series(labels: Labels): Observe {
    return this.enabled ? this.bind(labels) : NOTHING;
  }

  protected make(labels: Labels): HistogramCell {
    return new HistogramCell(labels, this.bounds);
  }

  protected values(cell: HistogramCell): Value[] {
    const out: Value[] = [];
    let cumulative = 0;
    this.bounds.forEach((le, i) => {
      cumulative += cell.counts[i] as number;
      out.push({ metricName: `${this.name}_bucket`, labels: { ...cell.labels, le: String(le) }, value: cumulative });
    });
    out.push({ metricName: `${this.name}_bucket`, labels: { ...cell.labels, le: '+Inf' }, value: cell.count });
    out.push({ metricName: `${this.name}_sum`, labels: cell.labels, value: cell.sum });
    out.push({ metricName: `${this.name}_count`, labels: cell.labels, value: cell.count });
    return out;
  }
}
