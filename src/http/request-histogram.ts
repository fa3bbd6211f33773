import type { Registry } from 'prom-client'

type LabelName = 'route' | 'method' | 'status_code'
type Labels = Record<LabelName, string>

/** One label set's observations: a count per bucket (the last one past every bound), their sum and count. */
export interface Series {
  readonly labels: Labels
  readonly counts: Float64Array
  sum: number
  count: number
}

/**
 * The request-duration histogram, registered in a prom-client registry and written out by it exactly as
 * a prom-client Histogram with these labels and buckets would be (test/unit/request-histogram.test.ts
 * holds the two to the same text). A request observes a series it already holds (`series`, one object per
 * route, method and status): prom-client's `observe` validated and hashed the labels and counted into an
 * object keyed by each bound's text, about 7,500 instructions a request, 3.6 % of a GET (callgrind,
 * docs/performance.md, twenty-fifth pass); this finds the bucket and adds one.
 */
export class RequestHistogram {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  private readonly byRoute = new Map<string, Map<string, Map<number, Series>>>()
  /** Every series in the order first seen: the order prom-client writes them in. */
  private readonly all: Series[] = []

  constructor(readonly name: string, readonly help: string, private readonly buckets: readonly number[], registry: Registry) {
    // The registry asks a metric only for these members (name, get, getForPromString, reset).
    registry.registerMetric(this as never)
  }

  /** The series of one route, method and status, made on first use. */
  series(route: string, method: string, status: number): Series {
    let byMethod = this.byRoute.get(route)
    if (byMethod === undefined) this.byRoute.set(route, byMethod = new Map())
    let byStatus = byMethod.get(method)
    if (byStatus === undefined) byMethod.set(method, byStatus = new Map())
    let series = byStatus.get(status)
    if (series === undefined) {
      series = { labels: { route, method, status_code: String(status) }, counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 }
      byStatus.set(status, series)
      this.all.push(series)
    }
    return series
  }

  /** Adds one observation; not a finite number, none (prom-client threw, which a request's hook must not). */
  observe(series: Series, seconds: number): void {
    if (!Number.isFinite(seconds)) return
    let bucket = 0
    while (bucket < this.buckets.length && seconds > this.buckets[bucket]!) bucket++
    series.counts[bucket]!++
    series.sum += seconds
    series.count++
  }

  /** What prom-client's Histogram returns for its text: each series' buckets, then its sum and count. */
  getForPromString() {
    // `exemplar: null` on buckets, as prom-client writes them (no exemplars here).
    const values: Array<{ labels: { le?: number | string }, sharedLabels: Labels, value: number, metricName: string, exemplar?: null }> = []
    for (const series of this.all) {
      let cumulative = 0
      this.buckets.forEach((le, i) => {
        cumulative += series.counts[i]!
        values.push({ labels: { le }, sharedLabels: series.labels, value: cumulative, metricName: `${this.name}_bucket`, exemplar: null })
      })
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_bucket`, exemplar: null },
        { labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: series.labels, value: series.count, metricName: `${this.name}_count` },
      )
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }

  /** As JSON (getMetricsAsJSON, node:cluster's aggregation): each value's labels with its series' labels. */
  get() {
    const data = this.getForPromString()
    return { ...data, values: data.values.map(({ labels, sharedLabels, ...value }) => ({ ...value, labels: { ...labels, ...sharedLabels } })) }
  }

  reset(): void {
    this.byRoute.clear()
    this.all.length = 0
  }
}
