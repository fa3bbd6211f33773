import assert from 'node:assert/strict'
import { test } from 'node:test'
import { AggregatorRegistry, Histogram, Registry } from 'prom-client'
import { RequestHistogram } from '../../src/http/request-histogram.js'

/**
 * src/http/request-histogram.ts stands in for a prom-client Histogram on the request path: fed the same
 * observations, the two must write the same text and the same JSON (which node:cluster's aggregation reads).
 */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const OBSERVED: Array<[route: string, method: string, status: number, seconds: number]> = [
  ['/payments/:id', 'GET', 200, 0.0004],
  ['/payments/:id', 'GET', 200, 0.001], // on a bound: counted in its bucket, as prom-client does
  ['/payments/:id', 'GET', 200, 0.0031],
  ['/payments/:id', 'GET', 404, 0.2],
  ['/payments', 'POST', 201, 0.012],
  ['/payments', 'POST', 201, 12], // past every bound: +Inf only
  ['not_found', 'GET', 404, 0],
  ['/wishes', 'POST', 400, 0.0025],
  ['/payments/:id', 'GET', 200, 0.07], // a series seen before, after others: written in the order first seen
  ['/payments', 'POST', 201, 0.3],
  ['/payments/:id', 'GET', 500, 0.02], // a new series of an early route: written last, as prom-client does
]

function both() {
  const theirs = new Registry()
  const ours = new Registry()
  const histogram = new Histogram({ name: 'requests_seconds', help: 'help "text"\nhere', labelNames: ['route', 'method', 'status_code'], buckets: BUCKETS, registers: [theirs] })
  const requestHistogram = new RequestHistogram('requests_seconds', 'help "text"\nhere', BUCKETS, ours)
  for (const [route, method, status, seconds] of OBSERVED) {
    histogram.observe({ route, method, status_code: String(status) }, seconds)
    requestHistogram.observe(requestHistogram.series(route, method, status), seconds)
  }
  return { theirs, ours, requestHistogram }
}

test('the request histogram writes the text a prom-client Histogram writes', async () => {
  const { theirs, ours } = both()
  assert.equal(await ours.metrics(), await theirs.metrics())
})

test('its JSON is prom-client\'s, and so is what node:cluster makes of two processes\' JSON', async () => {
  const { theirs, ours } = both()
  assert.deepEqual(JSON.parse(JSON.stringify(await ours.getMetricsAsJSON())), JSON.parse(JSON.stringify(await theirs.getMetricsAsJSON())))
  const [ourJson, theirJson] = [await ours.getMetricsAsJSON(), await theirs.getMetricsAsJSON()]
  assert.equal(await AggregatorRegistry.aggregate([ourJson, ourJson]).metrics(), await AggregatorRegistry.aggregate([theirJson, theirJson]).metrics())
})

test('a duration that is not a finite number is not counted', async () => {
  const { theirs, ours, requestHistogram } = both()
  requestHistogram.observe(requestHistogram.series('/payments', 'POST', 201), Number.NaN)
  assert.equal(await ours.metrics(), await theirs.metrics())
})

test('a series is one object per route, method and status, and reset empties the histogram', async () => {
  const { ours, requestHistogram } = both()
  assert.equal(requestHistogram.series('/payments', 'POST', 201), requestHistogram.series('/payments', 'POST', 201))
  assert.notEqual(requestHistogram.series('/payments', 'POST', 201), requestHistogram.series('/payments', 'POST', 400))
  ours.resetMetrics()
  assert.equal(await ours.metrics(), '# HELP requests_seconds help "text"\\nhere\n# TYPE requests_seconds histogram\n')
})
