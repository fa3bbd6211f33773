import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import {
  AuthenticationError,
  InvalidRequestError,
  PaymentError,
  WebhookVerificationError,
  Wishpay,
  type WishpayOptions,
} from '../../packages/sdk/src/index.js'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { inFuture, HOUR } from '../helpers/fixtures.js'
import { type Receiver, startReceiver, tamper } from '../helpers/receiver.js'
import { storeKinds } from '../helpers/stores.js'

/** The SDK (packages/sdk) over real HTTP against a listening app on each store. */

async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`
}

/** A fetch that records every attempt the SDK sends and the status it got. */
interface Attempt { method: string, path: string, search: string, key: string | null, status: number, replayed: boolean }
function recordingFetch(): { fetch: (request: Request) => Promise<Response>, attempts: Attempt[] } {
  const attempts: Attempt[] = []
  return {
    attempts,
    async fetch(request) {
      const response = await fetch(request)
      attempts.push({
        method: request.method,
        path: new URL(request.url).pathname,
        search: new URL(request.url).search,
        key: request.headers.get('idempotency-key'),
        status: response.status,
        replayed: response.headers.get('idempotent-replayed') === 'true',
      })
      return response
    },
  }
}

for (const kind of storeKinds()) {
  describe(`SDK against a real server (${kind.name})`, () => {
    let t: TestApp
    let a: TestAccount
    let baseUrl: string
    const sdk = (options: Partial<WishpayOptions> = {}) => new Wishpay({ apiKey: a.key, baseUrl, ...options })

    before(async () => {
      t = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true' })
      baseUrl = await listen(t)
    })
    after(async () => { await t.close() })

    test('pays in five lines: a wish, a mandate for it, a payment', async () => {
      a = await t.account()
      const wishpay = new Wishpay({ apiKey: a.key, baseUrl })
      const wish = await wishpay.wishes.create({ query: 'Noise-cancelling headphones', budget: { max: 199.99 } })
      const mandate = await wishpay.mandates.create({ wish_id: wish.id, protocol: wish.protocol, max_amount: 19999, expires_at: inFuture(t, HOUR) })
      const payment = await wishpay.payments.create({ mandate_id: mandate.id, amount: 19999 })

      assert.match(payment.id, /^pay_/)
      assert.equal(payment.status, 'succeeded')
      assert.equal(payment.wish_id, wish.id)
      assert.equal((await wishpay.payments.retrieve(payment.id)).amount, 19999)
      const refund = await wishpay.payments.refund(payment.id, { amount: 999 })
      assert.equal(refund.amount, 999)
      assert.deepEqual((await wishpay.payments.listRefunds(payment.id)).data.map((r) => r.id), [refund.id])
      const [succeeded] = (await wishpay.events.list({ type: 'payment.succeeded' })).data
      assert.equal((await wishpay.events.retrieve(succeeded!.id)).data.object.id, payment.id)
    })

    test('an agent pays with a key of its own until it is disabled', async () => {
      a = await t.account()
      const wishpay = sdk()
      const agent = await wishpay.agents.create({ name: 'Shopping assistant' })
      const { key } = await wishpay.agents.createKey(agent.id)
      assert.match(key, /^ak_/)
      const asAgent = sdk({ apiKey: key })
      assert.equal((await asAgent.payments.list()).meta.total, 0)
      assert.equal((await wishpay.agents.disable(agent.id)).status, 'disabled')
      await assert.rejects(asAgent.payments.list(), AuthenticationError)
    })

    test('errors carry status, type, code, param and request_id from the envelope', async () => {
      a = await t.account()
      const invalid = await sdk().wishes.create({ query: '' }).catch((e: unknown) => e)
      assert.ok(invalid instanceof InvalidRequestError, String(invalid))
      assert.equal(invalid.status, 400)
      assert.equal(invalid.type, 'invalid_request_error')
      assert.equal(invalid.code, 'parameter_invalid')
      assert.equal(invalid.param, 'query')
      assert.match(invalid.request_id ?? '', /^req_/)
      assert.equal(invalid.errors[0]?.param, 'query')

      const missing = await sdk().payments.retrieve('pay_missing').catch((e: unknown) => e)
      assert.ok(missing instanceof InvalidRequestError)
      assert.deepEqual([missing.status, missing.code, missing.param], [404, 'resource_missing', 'id'])

      const unauthenticated = await sdk({ apiKey: 'sk_not_a_real_key' }).wishes.list().catch((e: unknown) => e)
      assert.ok(unauthenticated instanceof AuthenticationError)
      assert.deepEqual([unauthenticated.status, unauthenticated.code], [401, 'invalid_api_key'])

      const mandate = await sdk().mandates.create({ protocol: 'ap2', max_amount: 100, expires_at: inFuture(t, HOUR) })
      const refused = await sdk().payments.create({ mandate_id: mandate.id, amount: 101 }).catch((e: unknown) => e)
      assert.ok(refused instanceof PaymentError)
      assert.deepEqual([refused.status, refused.type, refused.code], [422, 'payment_error', 'amount_exceeds_mandate'])
    })

    test('a payment whose answer was lost is sent again with the same key, replayed, and charged once', async () => {
      a = await t.account()
      const recorder = recordingFetch()
      let dropped = false
      // The server handles the first POST /payments, then the connection "drops" before its answer arrives.
      const losesFirstPaymentAnswer = async (request: Request): Promise<Response> => {
        const response = await recorder.fetch(request)
        if (!dropped && request.method === 'POST' && new URL(request.url).pathname === '/payments') {
          dropped = true
          await response.body?.cancel()
          throw new TypeError('fetch failed', { cause: new Error('socket hang up (simulated)') })
        }
        return response
      }
      const wishpay = sdk({ fetch: losesFirstPaymentAnswer })
      const mandate = await wishpay.mandates.create({ protocol: 'ap2', usage: 'multi_use', max_amount: 5000, budget_amount: 10000, expires_at: inFuture(t, HOUR) })
      const payment = await wishpay.payments.create({ mandate_id: mandate.id, amount: 5000 })

      const sent = recorder.attempts.filter((x) => x.path === '/payments')
      assert.equal(sent.length, 2)
      assert.match(sent[0]!.key ?? '', /^[0-9a-f-]{36}$/)
      assert.equal(sent[1]!.key, sent[0]!.key)
      assert.deepEqual(sent.map((x) => [x.status, x.replayed]), [[201, false], [201, true]])
      assert.equal((await wishpay.mandates.retrieve(mandate.id)).amount_used, 5000)
      const listed = await wishpay.payments.list({ mandate_id: mandate.id })
      assert.deepEqual(listed.data.map((p) => p.id), [payment.id])
    })

    test('list() awaits to one page, and for await walks every page with the cursor', async () => {
      a = await t.account()
      const recorder = recordingFetch()
      const wishpay = sdk({ fetch: recorder.fetch })
      const made: string[] = []
      for (let i = 0; i < 5; i++) made.push((await wishpay.wishes.create({ query: `wish ${i}` })).id)
      const newestFirst = [...made].reverse()

      const page = await wishpay.wishes.list({ limit: 2 })
      assert.deepEqual(page.data.map((w) => w.id), newestFirst.slice(0, 2))
      recorder.attempts.length = 0
      const seen: string[] = []
      for await (const wish of wishpay.wishes.list({ limit: 2 })) seen.push(wish.id)
      assert.deepEqual(seen, newestFirst, 'every wish once, newest first')
      assert.deepEqual(recorder.attempts.map((x) => x.search), [
        '?limit=2', `?limit=2&starting_after=${newestFirst[1]}`, `?limit=2&starting_after=${newestFirst[3]}`,
      ])
    })

    test('a sandbox bank transfer is settled at once with payments.settle', async () => {
      a = await t.account()
      const wishpay = sdk()
      const mandate = await wishpay.mandates.create({ protocol: 'ap2', max_amount: 500, expires_at: inFuture(t, HOUR) })
      const pending = await wishpay.payments.create({ mandate_id: mandate.id, amount: 500, payment_method: 'bank_transfer' })
      assert.equal(pending.status, 'pending')
      assert.equal((await wishpay.payments.settle(pending.id)).status, 'succeeded')
    })

    describe('webhooks.verify', () => {
      let receiver: Receiver
      before(async () => { receiver = await startReceiver() })
      after(async () => { await receiver.close() })

      test('accepts a real delivery, returns its event, and refuses a tampered one', async () => {
        a = await t.account()
        const wishpay = sdk()
        const endpoint = await wishpay.webhookEndpoints.create({ url: receiver.url, events: ['wish.created'] })
        receiver.secret = endpoint.secret
        const wish = await wishpay.wishes.create({ query: 'a kettle' })
        while (await t.jobs.runOnce()) { /* deliver everything due */ }

        const delivery = receiver.deliveries.find((d) => d.body.includes(wish.id))
        assert.ok(delivery, 'the wish.created event was delivered')
        const event = wishpay.webhooks.verify(delivery.body, delivery.headers, endpoint.secret)
        assert.equal(event.type, 'wish.created')
        assert.equal(event.data.object.id, wish.id)
        assert.equal(event.id, delivery.headers['webhook-id'])

        assert.throws(() => wishpay.webhooks.verify(tamper(delivery.body), delivery.headers, endpoint.secret), WebhookVerificationError)
        const otherSecret = (await wishpay.webhookEndpoints.create({ url: receiver.url, events: ['wish.created'] })).secret
        assert.throws(() => wishpay.webhooks.verify(delivery.body, delivery.headers, otherSecret), WebhookVerificationError)
      })

      test('lists an endpoint\'s deliveries and resends one', async () => {
        a = await t.account()
        const wishpay = sdk({ maxRetries: 0 })
        const endpoint = await wishpay.webhookEndpoints.create({ url: receiver.url, events: ['wish.created'] })
        receiver.secret = endpoint.secret
        await wishpay.wishes.create({ query: 'a kettle' })
        while (await t.jobs.runOnce()) { /* deliver everything due */ }

        const [attempt] = (await wishpay.webhookEndpoints.listDeliveries(endpoint.id)).data
        assert.ok(attempt, 'the delivery is listed')
        const resent = await wishpay.webhookDeliveries.resend(attempt.id)
        assert.deepEqual([resent.resent, resent.event_id], [attempt.id, attempt.event_id])
      })
    })
  })

  describe(`SDK against a rate-limited server (${kind.name})`, () => {
    let t: TestApp
    let baseUrl: string
    before(async () => {
      t = await startTestApp(kind, { RATE_LIMIT_PER_SECOND: '2' })
      baseUrl = await listen(t)
    })
    after(async () => { await t.close() })

    test('429s are retried after Retry-After until every call gets through', async () => {
      const a = await t.account()
      const recorder = recordingFetch()
      const wishpay = new Wishpay({ apiKey: a.key, baseUrl, fetch: recorder.fetch, maxRetries: 10 })
      const pages = await Promise.all(Array.from({ length: 5 }, () => wishpay.wishes.list()))
      assert.equal(pages.length, 5)
      const statuses = recorder.attempts.map((x) => x.status)
      assert.ok(statuses.includes(429), `some attempts were rate-limited: ${statuses.join(',')}`)
      assert.equal(statuses.filter((s) => s === 200).length, 5)
    })
  })
}
