import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Response, startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertEnvelopeHeaders, assertError } from '../helpers/assertions.js'
import { waitFor } from '../helpers/processes.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Per-key rate limiting (contract sections 2 and 8): RATE_LIMIT_PER_SECOND per API key, 429
 * rate_limit_error `rate_limited` with Retry-After, the IETF draft's RateLimit-Policy / RateLimit
 * headers on every API answer, open routes unlimited, and an unreachable Redis failing open.
 *
 * Nothing here assumes how fast requests go out: windows are told apart by the server's own RateLimit
 * header (a new window starts again at r = LIMIT - 1), and waits are on conditions, never on sleeps.
 */

const LIMIT = 5
const POLICY = `"per-key";q=${LIMIT};w=1`
const RATE_LIMIT = /^"per-key";r=(\d+);t=(\d+)$/

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

function assertRateLimited(res: Response): void {
  assertError(res, 429, 'rate_limit_error', 'rate_limited')
  assertEnvelopeHeaders(res)
  const retryAfter = String(res.headers['retry-after'] ?? '')
  assert.match(retryAfter, /^\d+$/, `Retry-After is whole seconds, got ${JSON.stringify(retryAfter)}`)
  assert.ok(Number(retryAfter) >= 1, `Retry-After >= 1, got ${retryAfter}`)
  const { r } = rateHeaders(res)
  assert.equal(r, 0, 'nothing remains when limited')
}

/**
 * Sends GET /wishes as `a` (with `key`) until one is answered 429, and checks every answer against the
 * server's own count: each 200 leaves one request less than the answer before, unless it opened a new
 * window (r = LIMIT - 1), and the 429 comes right after the answer that left nothing. So the key gets
 * exactly LIMIT requests in a window, however slowly the machine sends them: nothing here reads a clock.
 * `left` is what the key's last answer said was left, when it has been used already.
 */
async function untilLimited(a: TestAccount, options: { key?: string, left?: number } = {}): Promise<Response[]> {
  const answers: Response[] = []
  let previous = options.left ?? LIMIT
  for (let i = 0; i < LIMIT * 10; i++) {
    const res = await a.request('GET', '/wishes', undefined, options.key ? { key: options.key } : {})
    answers.push(res)
    if (res.status === 429) {
      assertRateLimited(res)
      assert.equal(previous, 0, 'limited only once the requests of the window are used up')
      return answers
    }
    assert.equal(res.status, 200, `request ${i + 1}: ${res.raw}`)
    assertEnvelopeHeaders(res)
    const { r } = rateHeaders(res)
    if (r !== LIMIT - 1) assert.equal(r, previous - 1, `request ${i + 1}: one request less left than the answer before`)
    previous = r
  }
  assert.fail(`no 429 after ${LIMIT * 10} requests`)
}

/**
 * Sends a request that a limited key must see refused. If its window has ended meanwhile (the answer
 * then opens a new one), the key is limited again and the request sent again. Returns the answers that
 * went through, so a caller can account for what they did.
 */
async function whileLimited(a: TestAccount, send: () => Promise<Response>): Promise<Response[]> {
  const through: Response[] = []
  for (let attempt = 0; attempt < 5; attempt++) {
    const res = await send()
    if (res.status === 429) {
      assertRateLimited(res)
      return through
    }
    assert.equal(rateHeaders(res).r, LIMIT - 1, `not limited only because a new window began: ${res.status} ${res.raw}`)
    through.push(res)
    await untilLimited(a, { left: LIMIT - 1 })
  }
  assert.fail('five windows ended during one check')
}

/** Waits until the key is let through again, which happens when its window ends. */
function untilAllowed(a: TestAccount): Promise<Response> {
  return waitFor(async () => {
    const res = await a.request('GET', '/wishes')
    return res.status === 200 ? res : undefined
  }, 30_000, 'the next window', 50)
}

for (const kind of storeKinds()) {
  describe(`rate limits per API key (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind, { RATE_LIMIT_PER_SECOND: String(LIMIT) }) })
    after(async () => { await t?.close() })

    test(`the ${LIMIT + 1}th request in a window is 429 rate_limited with Retry-After; every answer has the RateLimit headers`, async () => {
      const a = await t.account()
      const answers = await untilLimited(a)
      assert.equal(rateHeaders(answers[0]!).r, LIMIT - 1, 'a new key starts with the whole allowance')

      // Still limited within the window, whatever the route or method.
      for (const res of await whileLimited(a, () => a.request('GET', '/payments'))) assert.equal(res.status, 200, res.raw)
      const through = await whileLimited(a, () => a.request('POST', '/wishes', { query: 'limited' }))

      // A limited request did nothing: the only wishes are those of POSTs that a new window let through.
      for (const res of through) assert.equal(res.status, 201, res.raw)
      const list = await untilAllowed(a)
      assert.equal(list.body.meta.total, through.length, 'the limited POST /wishes created nothing')
    })

    test('two keys have separate limits; another key of the same account too', async () => {
      const a = await t.account()
      const b = await t.account()
      await untilLimited(a)

      // b has its whole allowance though a used its own: a new window never takes any away.
      const second: Response[] = []
      for (let i = 0; i < LIMIT; i++) second.push(await b.request('GET', '/wishes'))
      assert.deepEqual(second.map((res) => res.status), Array(LIMIT).fill(200), second.map((res) => res.raw).join('\n'))
      assert.equal(rateHeaders(second[0]!).r, LIMIT - 1, "b's count starts at its own first request")

      // The limit is per API key: a's read key is counted apart from a's write key.
      const read = await a.request('GET', '/wishes', undefined, { key: a.readKey })
      assert.equal(read.status, 200, read.raw)
      assert.equal(rateHeaders(read).r, LIMIT - 1)
    })

    test('after the window passes, requests are allowed again', async () => {
      const a = await t.account()
      const answers = await untilLimited(a)
      assert.ok(Number(answers.at(-1)!.headers['retry-after']) >= 1)
      const again = await untilAllowed(a)
      assert.equal(rateHeaders(again).r, LIMIT - 1, 'a new window with the whole allowance')
    })

    test('open routes (/healthz, /readyz) are not limited', async () => {
      const a = await t.account()
      await untilLimited(a)
      for (let i = 0; i < LIMIT * 4; i++) {
        for (const url of ['/healthz', '/readyz']) {
          const res = await t.inject({ method: 'GET', url, headers: { authorization: `Bearer ${a.key}` } })
          assert.equal(res.status, 200, `${url} #${i + 1}: ${res.raw}`)
          assert.equal(res.headers.ratelimit, undefined, `${url} is not counted`)
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

    // That an outage costs requests no waiting comes from the client failing commands at once while it
    // is disconnected (enableOfflineQueue: false in http/rate-limit.ts); a time bound here would only
    // measure how busy the machine is, so the test records the time and asserts the outcome.
    test('with nothing listening at REDIS_URL, requests still flow, unlimited and without RateLimit headers', async (tc) => {
      const a = await t.account()
      const started = performance.now()
      const answers: Response[] = []
      for (let i = 0; i < LIMIT * 3; i++) answers.push(await a.request('GET', '/wishes'))
      tc.diagnostic(`${LIMIT * 3} requests in ${Math.round(performance.now() - started)} ms`)
      assert.deepEqual(answers.map((res) => res.status), Array(LIMIT * 3).fill(200), answers.map((res) => res.raw).join('\n'))
      for (const res of answers) {
        assertEnvelopeHeaders(res)
        assert.equal(res.headers.ratelimit, undefined)
      }

      const write = await a.request('POST', '/wishes', { query: 'while Redis is down' })
      assert.equal(write.status, 201, write.raw)
    })
  })
}
