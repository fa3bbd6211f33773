import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, beforeEach, describe, test } from 'node:test'
import { ConflictError, ConnectionError, InvalidRequestError, RateLimitError, Wishpay } from '../../packages/sdk/src/index.js'
import { DEFAULT_RETRY_POLICY, type RetryPolicy, retryingFetch } from '../../packages/sdk/src/retry.js'

/**
 * The SDK's retry policy at the transport level, against a local stub server that answers what each
 * test scripts (the real server is in sdk.test.ts). Sleeps are recorded instead of waited for.
 */

type Answer = { status: number, headers?: Record<string, string>, body?: unknown } | 'drop' | 'hang'

interface Seen { method: string, path: string, key: string | undefined }

const seen: Seen[] = []
let script: Answer[] = []
let server: http.Server
let origin: string

function envelope(status: number, type: string, code: string) {
  return { status, body: { error: { type, code, message: code, request_id: 'req_stub' } } }
}

before(async () => {
  server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const key = req.headers['idempotency-key']
      seen.push({ method: req.method ?? '', path: req.url ?? '', key: Array.isArray(key) ? key[0] : key })
      const answer = script.shift() ?? { status: 200, body: { data: { id: 'wish_stub' } } }
      if (answer === 'hang') return
      if (answer === 'drop') { req.socket.destroy(); return }
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers })
      res.end(JSON.stringify(answer.body ?? {}))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
after(async () => {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})
beforeEach(() => { seen.length = 0; script = [] })

/** A transport whose sleeps are recorded, not waited; jitter fixed at its middle. */
function transport(policy: Partial<RetryPolicy> = {}) {
  const sleeps: number[] = []
  const send = retryingFetch((request) => fetch(request), {
    ...DEFAULT_RETRY_POLICY,
    maxRetries: 3,
    random: () => 0.5,
    sleep: async (ms) => { sleeps.push(ms) },
    ...policy,
  })
  return { sleeps, send }
}

const post = (key?: string) => new Request(`${origin}/payments`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
  body: JSON.stringify({ amount: 100 }),
})

describe('SDK retries (stub server)', () => {
  test('a 429 is retried after its Retry-After, the same request and key each time', async () => {
    script = [{ status: 429, headers: { 'retry-after': '2' } }, { status: 429, headers: { 'retry-after': '1' } }, { status: 201 }]
    const { sleeps, send } = transport()
    assert.equal((await send(post('key-1'))).status, 201)
    assert.deepEqual(sleeps, [2000, 1000])
    assert.deepEqual(seen.map((s) => s.key), ['key-1', 'key-1', 'key-1'])
  })

  test('without Retry-After, 5xx backs off exponentially, and the last answer is returned when retries run out', async () => {
    script = [{ status: 500 }, { status: 502 }, { status: 503 }, { status: 500 }]
    const { sleeps, send } = transport()
    assert.equal((await send(post('key-2'))).status, 500)
    assert.equal(seen.length, 4)
    assert.deepEqual(sleeps, [375, 750, 1500]) // 500, 1000, 2000 ms steps, half fixed and half jitter
  })

  test('a Retry-After longer than the SDK will wait is not waited for', async () => {
    script = [{ status: 429, headers: { 'retry-after': '3600' } }]
    const { sleeps, send } = transport()
    assert.equal((await send(post('key-3'))).status, 429)
    assert.deepEqual([seen.length, sleeps.length], [1, 0])
  })

  test('409 is retried only for idempotency_key_in_use; other 4xx never', async () => {
    script = [envelope(409, 'conflict_error', 'idempotency_key_in_use'), { status: 201 }]
    assert.equal((await transport().send(post('key-4'))).status, 201)
    assert.equal(seen.length, 2)

    for (const answer of [
      envelope(409, 'conflict_error', 'invalid_state_transition'),
      envelope(400, 'invalid_request_error', 'parameter_invalid'),
      envelope(404, 'invalid_request_error', 'resource_missing'),
      envelope(422, 'payment_error', 'mandate_budget_exceeded'),
    ]) {
      seen.length = 0
      script = [answer]
      assert.equal((await transport().send(post('key-5'))).status, answer.status)
      assert.equal(seen.length, 1, `${answer.status} ${answer.body.error.code} is not retried`)
    }
  })

  test('a POST without an idempotency key is not sent again after it may have run', async () => {
    script = [{ status: 503 }]
    assert.equal((await transport().send(post())).status, 503)
    assert.equal(seen.length, 1)

    seen.length = 0
    script = ['drop']
    await assert.rejects(transport().send(post()), ConnectionError)
    assert.equal(seen.length, 1)

    // …but a 429 was refused before anything ran, so even a keyless POST is retried.
    seen.length = 0
    script = [{ status: 429, headers: { 'retry-after': '1' } }, { status: 201 }]
    assert.equal((await transport().send(post())).status, 201)
    assert.equal(seen.length, 2)
  })

  test('a dropped connection or a timed-out attempt is retried when safe, then fails with ConnectionError', async () => {
    script = ['drop', { status: 201 }]
    const { send, sleeps } = transport()
    assert.equal((await send(post('key-6'))).status, 201)
    assert.deepEqual(sleeps, [375])

    seen.length = 0
    script = ['hang', 'hang']
    const slow = transport({ maxRetries: 1, timeoutMs: 100 })
    await assert.rejects(slow.send(new Request(`${origin}/wishes`)), (error: unknown) => {
      assert.ok(error instanceof ConnectionError)
      assert.match(error.message, /no response within 100 ms/)
      return true
    })
    assert.equal(seen.length, 2)
  })

  test('the client puts a key on every POST (the caller\'s, or a new one per call) and none on a GET', async () => {
    const wishpay = new Wishpay({ apiKey: 'sk_stub', baseUrl: origin })
    script = [{ status: 503, headers: { 'retry-after': '0' } }, { status: 201, body: { data: { id: 'wish_stub' } } }]
    await wishpay.wishes.create({ query: 'a kettle' })
    await wishpay.wishes.create({ query: 'a kettle' }, { idempotencyKey: 'order-1001' })
    await wishpay.mandates.revoke('mdt_stub')
    await wishpay.wishes.retrieve('wish_stub')
    const [first, retry, own, revoke, get] = seen
    assert.equal(seen.length, 5)
    assert.ok(first?.key)
    assert.equal(retry?.key, first.key, 'a retry sends the same key')
    assert.equal(own?.key, 'order-1001')
    assert.ok(revoke?.key && revoke.key !== first.key)
    assert.deepEqual([get?.method, get?.key], ['GET', undefined])
  })

  test('answers become typed errors once retries are done', async () => {
    const wishpay = new Wishpay({ apiKey: 'sk_stub', baseUrl: origin, maxRetries: 0 })
    script = [{ ...envelope(429, 'rate_limit_error', 'rate_limited'), headers: { 'retry-after': '1' } }]
    await assert.rejects(wishpay.wishes.list(), RateLimitError)
    script = [envelope(409, 'conflict_error', 'idempotency_key_in_use')]
    await assert.rejects(wishpay.payments.create({ mandate_id: 'mdt_stub', amount: 1 }), ConflictError)
    script = [{ status: 404, headers: { 'request-id': 'req_header' }, body: { error: { type: 'invalid_request_error', code: 'route_not_found', message: 'no route' } } }]
    await assert.rejects(wishpay.wishes.list(), (error: unknown) => {
      assert.ok(error instanceof InvalidRequestError)
      assert.equal(error.request_id, 'req_header', 'the header\'s id when the body has none')
      return true
    })
  })
})
