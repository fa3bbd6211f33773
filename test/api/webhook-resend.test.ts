import assert from 'node:assert/strict'
import { after, afterEach, before, describe, test } from 'node:test'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { createWish } from '../helpers/fixtures.js'
import type { Receiver } from '../helpers/receiver.js'
import { endpointFor, listAttempts, receiverIn } from '../helpers/webhooks.js'
import { storeKinds } from '../helpers/stores.js'

/** POST /webhook_deliveries/:id/resend: one more delivery of an attempt's event, to its endpoint. */

for (const kind of storeKinds()) {
  describe(`webhooks: resending a delivery (${kind.name})`, () => {
    let t: TestApp
    const receivers: Receiver[] = []

    before(async () => { t = await startTestApp(kind, { WEBHOOK_ALLOW_PRIVATE: 'true' }) })
    after(async () => { await t.close() })
    afterEach(async () => {
      for (const r of receivers.splice(0)) await r.close()
    })

    async function drain(): Promise<void> {
      while (await t.jobs.runOnce()) { /* a full batch: there may be more */ }
    }

    /** An endpoint of a new account that got one wish.created; returns its one attempt. */
    async function delivered(): Promise<{ a: TestAccount, r: Receiver, endpoint: any, attempt: any }> {
      const a = await t.account()
      const r = await receiverIn(receivers)
      const endpoint = await endpointFor(a, r, ['wish.created'])
      await createWish(a)
      await drain()
      const [attempt] = (await listAttempts(a, endpoint.id)).data
      assert.equal(attempt.succeeded, true)
      return { a, r, endpoint, attempt }
    }

    test('202 with the delivery scheduled; the event is delivered again, signed anew, as attempt 2', async () => {
      const { a, r, endpoint, attempt } = await delivered()
      const res = await a.request('POST', `/webhook_deliveries/${attempt.id}/resend`)
      assert.equal(res.status, 202, res.raw)
      assert.deepEqual(Object.keys(res.body.data).sort(), ['endpoint_id', 'event_id', 'event_type', 'resent', 'scheduled_at'])
      assert.equal(res.body.data.resent, attempt.id)
      assert.equal(res.body.data.endpoint_id, endpoint.id)
      assert.equal(res.body.data.event_id, attempt.event_id)
      assert.equal(res.body.data.event_type, 'wish.created')
      await drain()
      assert.deepEqual(r.ids(), [attempt.event_id, attempt.event_id])
      assert.ok(r.deliveries.every((d) => d.verified))
      assert.equal(r.deliveries[1]!.body, r.deliveries[0]!.body)
      const attempts = (await listAttempts(a, endpoint.id)).data
      assert.deepEqual(attempts.map((x: any) => x.attempt), [2, 1])
    })

    test('an idempotency key makes a retry schedule nothing more: the answer is replayed', async () => {
      const { a, r, attempt } = await delivered()
      const first = await a.request('POST', `/webhook_deliveries/${attempt.id}/resend`, {}, { headers: { 'idempotency-key': `resend-${attempt.id}` } })
      const again = await a.request('POST', `/webhook_deliveries/${attempt.id}/resend`, {}, { headers: { 'idempotency-key': `resend-${attempt.id}` } })
      assert.equal(first.status, 202)
      assert.equal(again.status, 202)
      assert.equal(again.raw, first.raw)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      await drain()
      assert.equal(r.deliveries.length, 2, 'one delivery, then one resend')
    })

    test('unknown or another account\'s attempt 404; disabled endpoint 409; read key 403; a body member it does not know 400', async () => {
      const { a, attempt, endpoint } = await delivered()
      const other = await t.account()
      for (const [who, id] of [[a, 'wha_01jf3v7k8m2n4p6q8r0s2t4v6w'], [other, attempt.id]] as const) {
        const res = await who.request('POST', `/webhook_deliveries/${id}/resend`)
        assert.equal(res.status, 404, res.raw)
        assert.equal(res.body.error.code, 'resource_missing')
      }
      const read = await a.request('POST', `/webhook_deliveries/${attempt.id}/resend`, undefined, { key: a.readKey })
      assert.equal(read.status, 403)
      const unknown = await a.request('POST', `/webhook_deliveries/${attempt.id}/resend`, { endpoint: 'we_x' })
      assert.equal(unknown.status, 400)
      assert.equal(unknown.body.error.code, 'parameter_unknown')

      assert.equal((await a.request('PUT', `/webhook_endpoints/${endpoint.id}`, { enabled: false })).status, 200)
      const disabled = await a.request('POST', `/webhook_deliveries/${attempt.id}/resend`)
      assert.equal(disabled.status, 409, disabled.raw)
      assert.equal(disabled.body.error.code, 'invalid_state_transition')
    })
  })
}
