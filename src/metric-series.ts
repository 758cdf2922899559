// Histograms for the hot paths (every request, every store call), recorded without prom-client's
// per-call work: its observe() hashes and validates the label values on every call, which
// measured several points of a read's CPU (docs/benchmarks.md). Here a series is looked up once
// per label combination and then observed with a bucket scan and three additions; prom-client
// reads the counts at scrape time, through the registry's metric interface (an object with a name
// and get()).
import type { Registry } from 'prom-client';

export interface Series {
  readonly labels: Readonly<Record<string, string>>;
  /** Observations per bucket (not cumulative): the last one is +Inf. */
  readonly buckets: Float64Array;
  sum: number;
  count: number;
}

interface MetricLine {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

export class LabelledHistogram {
  private readonly all = new Map<string, Series>();

  constructor(
    private readonly name: string,
    private readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly bounds: readonly number[],
  ) {}

  /** The series of these label values (in labelNames' order), made on first use. */
  series(...values: string[]): Series {
    const key = values.join('\u0000');
    let found = this.all.get(key);
    if (!found) {
      const labels = Object.fromEntries(this.labelNames.map((name, i) => [name, values[i] ?? '']));
      found = { labels, buckets: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 };
      this.all.set(key, found);
    }
    return found;
  }

  observe(series: Series, value: number): void {
    let i = 0;
    while (i < this.bounds.length && value > (this.bounds[i] as number)) i++;
    (series.buckets as Float64Array)[i]! += 1;
    series.sum += value;
    series.count += 1;
  }

  /** Registers the histogram, and a counter of its observations named `counterName` when given. */
  register(registry: Registry, counter?: { name: string; help: string }): void {
    registry.registerMetric({ name: this.name, get: async () => this.histogramLines() } as never);
    if (counter) registry.registerMetric({ name: counter.name, get: async () => this.counterLines(counter) } as never);
  }

  private histogramLines() {
    const values: MetricLine[] = [];
    for (const series of this.all.values()) {
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += series.buckets[i] as number;
        values.push({ metricName: `${this.name}_bucket`, labels: { le: bound, ...series.labels }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...series.labels }, value: series.count });
      values.push({ metricName: `${this.name}_sum`, labels: { ...series.labels }, value: series.sum });
      values.push({ metricName: `${this.name}_count`, labels: { ...series.labels }, value: series.count });
    }
    return { name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values };
  }

  private counterLines(counter: { name: string; help: string }) {
    const values = [...this.all.values()].map((series) => ({ metricName: counter.name, labels: { ...series.labels }, value: series.count }));
    return { name: counter.name, help: counter.help, type: 'counter', aggregator: 'sum', values };
  }
}
