import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Registry } from 'prom-client'
import { describeDurations, durationsIn, quantileBetween } from '../../bench/server-durations.js'
import { RequestHistogram } from '../../src/http/request-histogram.js'

/**
 * The bench's note on the server's own time for a route's requests (bench/server-durations.ts) reads the
 * request histogram as /metrics writes it, and places the p99 of the requests between two scrapes.
 */

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05]

/** The /metrics text of a request histogram holding `observations` of [route, method, status, seconds]. */
async function metricsText(observations: Array<[string, string, number, number]>): Promise<string> {
  const registry = new Registry()
  const histogram = new RequestHistogram('wishpay_http_request_duration_seconds', 'durations', BUCKETS, registry)
  for (const [route, method, status, seconds] of observations) histogram.observe(histogram.series(route, method, status), seconds)
  return registry.metrics()
}

const times = (n: number, observation: [string, string, number, number]) => Array.from({ length: n }, () => observation)

describe('the server\'s own request durations in the bench', () => {
  test('a route\'s series are read from /metrics and summed over their statuses, other routes and methods left out', async () => {
    const text = await metricsText([
      ...times(3, ['/payments', 'POST', 201, 0.002]),
      ...times(2, ['/payments', 'POST', 400, 0.0004]),
      ...times(7, ['/payments', 'GET', 200, 0.03]),
      ...times(5, ['/wishes', 'POST', 201, 0.03]),
    ])
    const totals = durationsIn(text, 'POST', '/payments')!
    assert.equal(totals.count, 5)
    assert.ok(Math.abs(totals.seconds - (3 * 0.002 + 2 * 0.0004)) < 1e-9)
    assert.equal(totals.buckets.get(0.001), 2)
    assert.equal(totals.buckets.get(0.0025), 5)
    assert.equal(totals.buckets.get(Infinity), 5)
    assert.equal(durationsIn(text, 'POST', '/refunds'), null)
  })

  test('the p99 of the requests between two scrapes is placed linearly within its bucket', async () => {
    const early = times(1000, ['/payments', 'POST', 201, 0.04])
    const run = [...times(90, ['/payments', 'POST', 201, 0.0005]), ...times(10, ['/payments', 'POST', 201, 0.007])]
    const before = durationsIn(await metricsText(early), 'POST', '/payments')
    const after = durationsIn(await metricsText([...early, ...run]), 'POST', '/payments')!
    // 99 of 100: the 9th of the 10 requests in the 5-10 ms bucket.
    const p99 = quantileBetween(before, after, 0.99)!
    assert.equal(p99.lower, 0.005)
    assert.equal(p99.upper, 0.01)
    assert.ok(Math.abs(p99.seconds - 0.0095) < 1e-9, String(p99.seconds))
    // Without the first scrape the earlier slow requests count, and the p99 lands in their bucket.
    assert.equal(quantileBetween(null, after, 0.99)!.upper, 0.05)
    const line = describeDurations('POST /payments', before, after)!
    assert.match(line, /its 100 requests/)
    assert.match(line, /p99 about 9\.5 ms \(linear within its bucket, 5-10 ms\)/)
  })

  test('a p99 past the last bound says so, and no requests between the scrapes give no line', async () => {
    const text = await metricsText(times(10, ['/payments', 'POST', 201, 0.2]))
    const totals = durationsIn(text, 'POST', '/payments')!
    assert.match(describeDurations('POST /payments', null, totals)!, /p99 over 50 ms \(past the last bucket\)/)
    assert.equal(describeDurations('POST /payments', totals, totals), null)
    assert.equal(describeDurations('POST /payments', null, null), null)
  })
})
