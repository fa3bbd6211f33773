import assert from 'node:assert/strict'
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { Redis } from 'ioredis'
import { AUTH_FAILURE_WINDOW_SECONDS as WINDOW, AUTH_FAILURES_PER_WINDOW as LIMIT } from '../../src/http/rate-limit.js'
import { randomBase62 } from '../../src/lib/ids.js'
import { type Response, startTestApp, type TestApp } from '../helpers/app.js'
import { assertEnvelopeHeaders, assertError } from '../helpers/assertions.js'
import { waitFor } from '../helpers/processes.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * Failed authentications per client address: a key that fails (malformed, unknown, revoked) counts
 * against the address it came from (an IPv4 address, or an IPv6 /64); past AUTH_FAILURES_PER_WINDOW
 * in a window, failures are answered 429 `rate_limited` with Retry-After instead of 401, while a valid
 * key from the same address is still served. Shared through Redis when REDIS_URL is set.
 *
 * No assertion depends on how fast requests are sent: windows are told apart by the server's own
 * RateLimit header (a new window starts again at r = LIMIT - 1), never by a clock.
 */

const POLICY = `"auth-failures";q=${LIMIT};w=${WINDOW}`
const RATE_LIMIT = /^"auth-failures";r=(\d+);t=(\d+)$/
const REDIS_URL = 'redis://127.0.0.1:6379'

/** A fresh address for each use, so that runs (which may share one Redis) never share counters. */
const freshV4 = () => `198.${18 + randomInt(2)}.${randomInt(256)}.${randomInt(1, 255)}`
const freshV6Prefix = () => `2001:db8:${randomInt(0x10000).toString(16)}:${randomInt(0x10000).toString(16)}`
const unknownKey = () => `sk_${randomBase62(40)}`

/** Sends GET /wishes from one address to one app, with this Authorization header (none when undefined). */
type Sender = (authorization?: string) => Promise<Response>
function from(t: TestApp, remoteAddress: string): Sender {
  return (authorization) => t.inject({ method: 'GET', url: '/wishes', remoteAddress, headers: authorization === undefined ? {} : { authorization } })
}

/** The auth-failures RateLimit header of an answer: what is left (r) and when the window ends (t). */
function failureHeaders(res: Response): { r: number, t: number } {
  assert.equal(res.headers['ratelimit-policy'], POLICY, `RateLimit-Policy on ${res.status}: ${JSON.stringify(res.headers)}`)
  const match = RATE_LIMIT.exec(String(res.headers.ratelimit ?? ''))
  assert.ok(match, `RateLimit is "auth-failures";r=<n>;t=<s>, got ${JSON.stringify(res.headers.ratelimit)}`)
  const t = Number(match[2])
  assert.ok(t >= 1 && t <= WINDOW, `t within the window: ${t}`)
  return { r: Number(match[1]), t }
}

function assertFailureLimited(res: Response): void {
  const error = assertError(res, 429, 'rate_limit_error', 'rate_limited')
  assertEnvelopeHeaders(res)
  assert.match(error.message, /failed authentications from this address/)
  const retryAfter = String(res.headers['retry-after'] ?? '')
  assert.match(retryAfter, /^[1-9]\d*$/, `Retry-After in whole seconds: ${retryAfter}`)
  assert.ok(Number(retryAfter) <= WINDOW)
  const { r, t } = failureHeaders(res)
  assert.equal(r, 0)
  assert.equal(t, Number(retryAfter), 'Retry-After is the end of the window')
}

/**
 * Sends failing keys, taking turns among `senders`, until one is answered 429. Each 401 must leave one
 * failure less than the answer before (or than `left`), unless its window is a new one (r = LIMIT - 1):
 * so the failures of all senders were counted together, and the 429 comes exactly after the LIMIT-th
 * failure of a window.
 */
async function failUntilLimited(senders: Sender[], key: () => string = unknownKey, left?: number): Promise<Response> {
  /** What the last answer said was left; a fresh address has the whole allowance. */
  let previous = left ?? LIMIT
  for (let i = 0; i < LIMIT * 5; i++) {
    const res = await senders[i % senders.length]!(`Bearer ${key()}`)
    if (res.status === 429) {
      assertFailureLimited(res)
      assert.equal(previous, 0, 'limited only once the failures of the window are used up')
      return res
    }
    assertError(res, 401, 'authentication_error', 'invalid_api_key')
    const { r } = failureHeaders(res)
    if (r !== LIMIT - 1) assert.equal(r, previous - 1, `failure ${i + 1} (sender ${i % senders.length}): one less left than before, in one count`)
    previous = r
  }
  assert.fail(`no 429 after ${LIMIT * 5} failures`)
}

/** A failing key from a limited address is a 429; if the window has just ended, it is limited again first. */
async function assertStillLimited(send: Sender, authorization: string): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const res = await send(authorization)
    if (res.status === 429) return assertFailureLimited(res)
    assertError(res, 401, 'authentication_error', 'invalid_api_key')
    assert.equal(failureHeaders(res).r, LIMIT - 1, 'a 401 while limited only when a new window began')
    await failUntilLimited([send])
  }
  assert.fail('three windows ended during one check')
}

for (const kind of storeKinds()) {
  describe(`failed authentications per client address (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind, { RATE_LIMIT_PER_SECOND: '1000' }) })
    after(async () => { await t?.close() })

    test(`${LIMIT} failures from one address are 401 with the auth-failures RateLimit headers; the next is 429 with Retry-After`, async () => {
      const send = from(t, freshV4())
      const first = await send(`Bearer ${unknownKey()}`)
      assertError(first, 401, 'authentication_error', 'invalid_api_key')
      const { r } = failureHeaders(first)
      assert.equal(r, LIMIT - 1, 'a new address starts with the whole allowance')
      await failUntilLimited([send], unknownKey, r)
    })

    test('malformed, unknown and revoked keys all count', async () => {
      const a = await t.account()
      assert.equal(await t.services.accounts.revokeKey(a.keyId), 'revoked')
      const kinds = [() => 'sk_short', unknownKey, () => a.key, () => '']
      let i = 0
      await failUntilLimited([from(t, freshV4())], () => kinds[i++ % kinds.length]!())
    })

    test('while an address is limited, a valid key from it is served; failures stay 429; no header stays 401', async () => {
      const a = await t.account()
      const address = freshV4()
      const send = from(t, address)
      await failUntilLimited([send])

      const ok = await send(`Bearer ${a.key}`)
      assert.equal(ok.status, 200, ok.raw)
      assert.equal(ok.headers['ratelimit-policy'], '"per-key";q=1000;w=1', 'a served request carries the per-key headers')
      const write = await t.inject({
        method: 'POST', url: '/wishes', remoteAddress: address,
        headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json' }, payload: JSON.stringify({ query: 'from a limited address' }),
      })
      assert.equal(write.status, 201, write.raw)

      await assertStillLimited(send, `Bearer ${unknownKey()}`)
      await assertStillLimited(send, 'Bearer sk_short')
      const anonymous = await send(undefined)
      assertError(anonymous, 401, 'authentication_error', 'authentication_required')
      assert.equal(anonymous.headers.ratelimit, undefined, 'a request without a key is not counted')
    })

    test('another address is not affected', async () => {
      await failUntilLimited([from(t, freshV4())])
      const other = await from(t, freshV4())(`Bearer ${unknownKey()}`)
      assertError(other, 401, 'authentication_error', 'invalid_api_key')
      assert.equal(failureHeaders(other).r, LIMIT - 1)
    })

    test('IPv6 addresses of one /64 count together; another /64 apart; an IPv4-mapped address is its IPv4 address', async () => {
      const prefix = freshV6Prefix()
      await failUntilLimited([`${prefix}::1`, `${prefix}::2`, `${prefix}:ffff:ffff:ffff:fffe`].map((address) => from(t, address)))
      const sibling = await from(t, freshV6Prefix() + '::1')(`Bearer ${unknownKey()}`)
      assert.equal(failureHeaders(sibling).r, LIMIT - 1, 'another /64 has its own count')

      const v4 = freshV4()
      await failUntilLimited([from(t, v4), from(t, `::ffff:${v4}`)])
    })
  })
}

const redisAnswers = () => spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', '6379', 'ping'], { encoding: 'utf8', timeout: 5_000 }).stdout?.trim() === 'PONG'

describe('failed authentications through Redis (REDIS_URL)', () => {
  const kind = storeKinds()[0]!
  let redisChild: ChildProcess | undefined
  let redis: Redis | undefined
  const apps: TestApp[] = []

  before(async () => {
    if (!redisAnswers()) {
      // Not daemonized: this run owns the process and stops it in after().
      redisChild = spawn('redis-server', ['--bind', '127.0.0.1', '--port', '6379', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
      await waitFor(async () => (redisAnswers() ? true : undefined), 30_000, 'redis-server to answer PING')
    }
    redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
    await redis.connect()
    // Two apps, as two server processes would be: they share nothing but Redis.
    for (let i = 0; i < 2; i++) apps.push(await startTestApp(kind, { REDIS_URL }))
  })

  after(async () => {
    for (const t of apps) await t.close()
    redis?.disconnect()
    if (redisChild && redisChild.exitCode === null) {
      const exited = new Promise((resolve) => redisChild!.once('exit', resolve))
      redisChild.kill('SIGTERM')
      await exited
    }
  })

  test('two apps count the failures of one address together, in one Redis counter that ends with the window', async () => {
    const address = freshV4()
    await failUntilLimited(apps.map((t) => from(t, address)))
    const counters = await redis!.keys(`wishpay-rate-limit:*auth-failures:${address}`)
    assert.equal(counters.length, 1, `one counter for the address: ${counters.join(', ')}`)
    const ttl = await redis!.pttl(counters[0]!)
    assert.ok(ttl > 0 && ttl <= WINDOW * 1000, `the counter expires with the window (pttl ${ttl})`)
  })

  test('with Redis unreachable, failures are answered 401 and not counted (the limit fails open)', async () => {
    const down = await startTestApp(kind, { REDIS_URL: 'redis://127.0.0.1:6399' })
    try {
      const send = from(down, freshV4())
      for (let i = 0; i < LIMIT + 5; i++) {
        const res = await send(`Bearer ${unknownKey()}`)
        assertError(res, 401, 'authentication_error', 'invalid_api_key')
        assert.equal(res.headers.ratelimit, undefined)
      }
    } finally {
      await down.close()
    }
  })
})
