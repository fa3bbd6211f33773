/**
 * The server's own time for a route's requests over a run, from its /metrics
 * (`wishpay_http_request_duration_seconds`: from Fastify's onRequest to the end of the response). The load
 * generator's latency adds what the server does not see: a request waiting in its socket while the event
 * loop is busy with others, the answer's way back, and the generator's own pauses (it runs on the same two
 * cores). Beside the generator's p99, this tells how much of a tail is the server's handling of the request
 * itself (docs/performance.md, thirty-first pass).
 */

const METRIC = 'wishpay_http_request_duration_seconds'

export interface DurationTotals {
  count: number
  seconds: number
  /** Cumulative requests by `le` bound, in seconds (+Inf as Infinity), over every status of the route. */
  buckets: Map<number, number>
}

/** A Prometheus label set's text (`a="1",b="2"`) as an object; values hold no quotes in our metrics. */
function labelsOf(text: string): Record<string, string> {
  const labels: Record<string, string> = {}
  for (const match of text.matchAll(/(\w+)="([^"]*)"/g)) labels[match[1]!] = match[2]!
  return labels
}

/** The route's totals in a /metrics text, summed over its statuses; null when it has no series. */
export function durationsIn(metricsText: string, method: string, route: string): DurationTotals | null {
  let count = 0
  let seconds = 0
  let found = false
  const buckets = new Map<number, number>()
  for (const match of metricsText.matchAll(new RegExp(`^${METRIC}_(bucket|sum|count)\\{([^}]*)\\} (\\S+)$`, 'gm'))) {
    const labels = labelsOf(match[2]!)
    if (labels.method !== method || labels.route !== route) continue
    found = true
    const value = Number(match[3])
    if (match[1] === 'sum') seconds += value
    else if (match[1] === 'count') count += value
    else {
      const le = labels.le === '+Inf' ? Infinity : Number(labels.le)
      buckets.set(le, (buckets.get(le) ?? 0) + value)
    }
  }
  return found ? { count, seconds, buckets } : null
}

/** Reads the route's totals so far; null when the server's /metrics has none (an older build, a token). */
export async function scrapeDurations(serverUrl: string, method: string, route: string): Promise<DurationTotals | null> {
  const res = await fetch(new URL('/metrics', serverUrl))
  if (!res.ok) return null
  return durationsIn(await res.text(), method, route)
}

/**
 * The requests' duration at `quantile` between two scrapes, in seconds, interpolated linearly within the
 * bucket it falls in (as Prometheus' histogram_quantile does), with that bucket's bounds; null when no
 * request came between them. Past the last finite bound it says so (upper Infinity).
 */
export function quantileBetween(before: DurationTotals | null, after: DurationTotals, quantile: number): { seconds: number, lower: number, upper: number } | null {
  const count = after.count - (before?.count ?? 0)
  if (count <= 0) return null
  const rank = count * quantile
  let lower = 0
  let below = 0
  for (const le of [...after.buckets.keys()].sort((a, b) => a - b)) {
    const cumulative = after.buckets.get(le)! - (before?.buckets.get(le) ?? 0)
    if (cumulative >= rank) {
      if (!Number.isFinite(le)) return { seconds: lower, lower, upper: Infinity }
      const inBucket = cumulative - below
      const seconds = inBucket > 0 ? lower + ((le - lower) * (rank - below)) / inBucket : le
      return { seconds, lower, upper: le }
    }
    lower = le
    below = cumulative
  }
  return null
}

/** One line on the route's requests between two scrapes, or null when there was none to compare. */
export function describeDurations(label: string, before: DurationTotals | null, after: DurationTotals | null): string | null {
  if (after === null) return null
  const count = after.count - (before?.count ?? 0)
  const p99 = quantileBetween(before, after, 0.99)
  if (count <= 0 || p99 === null) return null
  const meanMs = ((after.seconds - (before?.seconds ?? 0)) / count) * 1000
  const ms = (seconds: number) => `${Number((seconds * 1000).toFixed(1))}`
  const where = Number.isFinite(p99.upper)
    ? `p99 about ${ms(p99.seconds)} ms (linear within its bucket, ${ms(p99.lower)}-${ms(p99.upper)} ms)`
    : `p99 over ${ms(p99.lower)} ms (past the last bucket)`
  return `${label}: the server's own time for its ${count.toLocaleString('en-US')} requests (Fastify's onRequest to the end of the answer, its /metrics), warm-ups included: mean ${meanMs.toFixed(1)} ms, ${where}`
}
