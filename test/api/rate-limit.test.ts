import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Response, startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertEnvelopeHeaders, assertError } from '../helpers/assertions.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Per-key rate limiting (contract sections 2 and 8): RATE_LIMIT_PER_SECOND per API key, 429
 * rate_limit_error `rate_limited` with Retry-After, the IETF draft's RateLimit-Policy / RateLimit
 * headers on every API answer, open routes unlimited, and an unreachable Redis failing open.
 */

const LIMIT = 5
const POLICY = `"per-key";q=${LIMIT};w=1`
const RATE_LIMIT = /^"per-key";r=(\d+);t=(\d+)$/

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The RateLimit-Policy and RateLimit headers of an API answer; returns remaining (r) and reset (t). */
function rateHeaders(res: Response): { r: number, t: number } {
  assert.equal(res.headers['ratelimit-policy'], POLICY, `RateLimit-Policy on ${res.status}: ${JSON.stringify(res.headers)}`)
  const value = String(res.headers.ratelimit ?? '')
  const match = RATE_LIMIT.exec(value)
  assert.ok(match, `RateLimit header on ${res.status} is "per-key";r=<n>;t=<s>, got ${JSON.stringify(value)}`)
  const t = Number(match[2])
  assert.equal(t, 1, `RateLimit t is the window's seconds left (1 for a 1 s window), got ${t}`)
  return { r: Number(match[1]), t }
}

/** Waits until a fresh 1 s window has certainly begun for every key used so far. */
const nextWindow = () => sleep(1_100)

/**
 * Sends `count` sequential GET /wishes as `a`. A fixed 1 s window starts at a key's first request,
 * so the burst must fit in it: the caller asserts `elapsedMs` to make the result meaningful.
 */
async function burst(a: TestAccount, count: number): Promise<{ answers: Response[], elapsedMs: number }> {
  const started = performance.now()
  const answers: Response[] = []
  for (let i = 0; i < count; i++) answers.push(await a.request('GET', '/wishes'))
  return { answers, elapsedMs: performance.now() - started }
}

/**
 * A fresh window, then a burst that fits in it. On a machine so loaded that the burst took most of the
 * window, its counts would prove nothing, so it is tried again (three times at most) rather than judged.
 */
async function burstInWindow(a: TestAccount, count: number): Promise<{ answers: Response[], elapsedMs: number }> {
  let last: { answers: Response[], elapsedMs: number } | undefined
  for (let attempt = 0; attempt < 3; attempt++) {
    await nextWindow()
    last = await burst(a, count)
    if (last.elapsedMs < 900) return last
  }
  assert.fail(`no burst of ${count} fitted in a 1 s window in three tries (last took ${Math.round(last!.elapsedMs)} ms)`)
}

function assertRateLimited(res: Response): void {
  assertError(res, 429, 'rate_limit_error', 'rate_limited')
  assertEnvelopeHeaders(res)
  const retryAfter = String(res.headers['retry-after'] ?? '')
  assert.match(retryAfter, /^\d+$/, `Retry-After is whole seconds, got ${JSON.stringify(retryAfter)}`)
  assert.ok(Number(retryAfter) >= 1, `Retry-After >= 1, got ${retryAfter}`)
  const { r } = rateHeaders(res)
  assert.equal(r, 0, 'nothing remains when limited')
}

for (const kind of storeKinds()) {
  describe(`rate limits per API key (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind, { RATE_LIMIT_PER_SECOND: String(LIMIT) }) })
    after(async () => { await t?.close() })

    test(`the ${LIMIT + 1}th request within a second is 429 rate_limited with Retry-After; every answer has the RateLimit headers`, async () => {
      const a = await t.account()
      const { answers } = await burstInWindow(a, LIMIT + 1)

      const allowed = answers.slice(0, LIMIT)
      allowed.forEach((res, i) => {
        assert.equal(res.status, 200, `request ${i + 1}: ${res.raw}`)
        assertEnvelopeHeaders(res)
        assert.equal(rateHeaders(res).r, LIMIT - 1 - i, `remaining after request ${i + 1}`)
      })
      assertRateLimited(answers[LIMIT]!)

      // Still limited within the window, whatever the route or method.
      assertRateLimited(await a.request('GET', '/payments'))
      assertRateLimited(await a.request('POST', '/wishes', { query: 'limited' }))

      // A limited request did nothing.
      await nextWindow()
      const list = await a.request('GET', '/wishes')
      assert.equal(list.status, 200, list.raw)
      assert.equal(list.body.meta.total, 0, 'the limited POST /wishes created nothing')
    })

    test('two keys have separate limits; another key of the same account too', async () => {
      const a = await t.account()
      const b = await t.account()
      const first = await burstInWindow(a, LIMIT + 1)
      assert.deepEqual(first.answers.map((res) => res.status), [...Array(LIMIT).fill(200), 429])

      // b has its whole allowance though a is limited.
      const second = await burst(b, LIMIT)
      assert.deepEqual(second.answers.map((res) => res.status), Array(LIMIT).fill(200), second.answers.map((res) => res.raw).join('\n'))
      assert.equal(rateHeaders(second.answers[0]!).r, LIMIT - 1, "b's count starts at its own first request")

      // The limit is per API key: a's read key is counted apart from a's write key.
      const read = await a.request('GET', '/wishes', undefined, { key: a.readKey })
      assert.equal(read.status, 200, read.raw)
      assert.equal(rateHeaders(read).r, LIMIT - 1)
    })

    test('after the window passes, requests are allowed again', async () => {
      const a = await t.account()
      const { answers } = await burstInWindow(a, LIMIT + 1)
      assert.equal(answers[LIMIT]!.status, 429)
      const retryAfter = Number(answers[LIMIT]!.headers['retry-after'])

      await sleep(retryAfter * 1000 + 100)
      const again = await a.request('GET', '/wishes')
      assert.equal(again.status, 200, again.raw)
      assert.equal(rateHeaders(again).r, LIMIT - 1, 'a new window with the whole allowance')
    })

    test('open routes (/healthz, /readyz) are not limited', async () => {
      const a = await t.account()
      await nextWindow()
      const { answers } = await burst(a, LIMIT + 1)
      assert.equal(answers[LIMIT]!.status, 429, 'the key is limited now')
      for (let i = 0; i < LIMIT * 4; i++) {
        for (const url of ['/healthz', '/readyz']) {
          const res = await t.inject({ method: 'GET', url, headers: { authorization: `Bearer ${a.key}` } })
          assert.equal(res.status, 200, `${url} #${i + 1}: ${res.raw}`)
        }
      }
    })

    test('unauthenticated requests are answered 401, never 429', async () => {
      for (let i = 0; i < LIMIT * 3; i++) {
        const res = await t.inject({ method: 'GET', url: '/wishes' })
        assertError(res, 401, 'authentication_error', 'authentication_required')
      }
    })
  })

  describe(`rate limits fail open when Redis is unreachable (${kind.name})`, () => {
    let t: TestApp
    before(async () => {
      t = await startTestApp(kind, { RATE_LIMIT_PER_SECOND: String(LIMIT), REDIS_URL: 'redis://127.0.0.1:6399' })
    })
    after(async () => { await t?.close() })

    test('with nothing listening at REDIS_URL, requests still flow, quickly', async () => {
      const a = await t.account()
      const { answers, elapsedMs } = await burst(a, LIMIT * 3)
      assert.deepEqual(answers.map((res) => res.status), Array(LIMIT * 3).fill(200), answers.map((res) => res.raw).join('\n'))
      for (const res of answers) assertEnvelopeHeaders(res)
      assert.ok(elapsedMs < 5_000, `${LIMIT * 3} requests took ${Math.round(elapsedMs)} ms: the Redis failure must cost little`)

      const write = await a.request('POST', '/wishes', { query: 'while Redis is down' })
      assert.equal(write.status, 201, write.raw)
    })
  })
}
