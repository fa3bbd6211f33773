import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT as LIMIT } from '../../src/modules/webhooks/service.js'
import { type Response, startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertEnvelopeHeaders, assertError } from '../helpers/assertions.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * The cap on webhook endpoints per account: each endpoint multiplies the delivery jobs every event of
 * the account writes, so an account may have at most MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT (16) of them,
 * and the cap holds however many creates run at once.
 */

const body = (i: number | string) => ({ url: `https://8.8.8.8/hooks/${i}`, events: ['*'] })

function assertLimited(res: Response): void {
  const error = assertError(res, 400, 'invalid_request_error', 'resource_limit_exceeded')
  assertEnvelopeHeaders(res)
  assert.equal(error.param, undefined, 'no single parameter is at fault')
  assert.match(error.message, new RegExp(`at most ${LIMIT} webhook endpoints`), error.message)
  assert.match(error.message, /DELETE \/webhook_endpoints\/:id/, 'the message says how to free one')
}

async function create(a: TestAccount, i: number | string, headers?: Record<string, string>): Promise<Response> {
  return a.request('POST', '/webhook_endpoints', body(i), headers ? { headers } : {})
}

/** Creates `n` endpoints one after the other; returns their ids. */
async function fill(a: TestAccount, n: number): Promise<string[]> {
  const made: string[] = []
  for (let i = 0; i < n; i++) {
    const res = await create(a, i)
    assert.equal(res.status, 201, `endpoint ${i + 1}: ${res.raw}`)
    made.push(res.body.data.id)
  }
  return made
}

async function total(a: TestAccount): Promise<number> {
  const res = await a.request('GET', '/webhook_endpoints')
  assert.equal(res.status, 200, res.raw)
  return res.body.meta.total
}

for (const kind of storeKinds()) {
  describe(`webhook endpoints per account are capped at ${LIMIT} (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t?.close() })

    test(`the ${LIMIT + 1}th endpoint is 400 resource_limit_exceeded; deleting one frees a place`, async () => {
      const a = await t.account()
      const made = await fill(a, LIMIT)
      assertLimited(await create(a, 'one-too-many'))
      assert.equal(await total(a), LIMIT, 'the refused create saved nothing')

      // Disabled endpoints count: disabling one does not free a place.
      const disabled = await a.request('PUT', `/webhook_endpoints/${made[0]}`, { enabled: false })
      assert.equal(disabled.status, 200, disabled.raw)
      assertLimited(await create(a, 'still-too-many'))

      const deleted = await a.request('DELETE', `/webhook_endpoints/${made[1]}`)
      assert.equal(deleted.status, 204, deleted.raw)
      const again = await create(a, 'after-delete')
      assert.equal(again.status, 201, again.raw)
      assertLimited(await create(a, 'full-again'))
      assert.equal(await total(a), LIMIT)
    })

    test('the cap is per account', async () => {
      const a = await t.account()
      const b = await t.account()
      await fill(a, LIMIT)
      assertLimited(await create(a, 'a-too-many'))
      const res = await create(b, 'b-first')
      assert.equal(res.status, 201, `another account is not affected: ${res.raw}`)
    })

    test(`20 concurrent creates with ${LIMIT - 1} endpoints already there: exactly one succeeds`, async () => {
      const a = await t.account()
      await fill(a, LIMIT - 1)
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => create(a, `race-${i}`)))
      const created = answers.filter((res) => res.status === 201)
      assert.equal(created.length, 1, answers.map((res) => `${res.status} ${res.raw}`).join('\n'))
      for (const res of answers.filter((r) => r.status !== 201)) assertLimited(res)
      assert.equal(await total(a), LIMIT)
    })

    test('the same race with idempotency keys (the create runs in the idempotency transaction): exactly one succeeds', async () => {
      const a = await t.account()
      await fill(a, LIMIT - 1)
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
        create(a, `keyed-${i}`, { 'idempotency-key': `limit-race-${a.id}-${i}` })))
      const created = answers.filter((res) => res.status === 201)
      assert.equal(created.length, 1, answers.map((res) => `${res.status} ${res.raw}`).join('\n'))
      for (const res of answers.filter((r) => r.status !== 201)) assertLimited(res)
      assert.equal(await total(a), LIMIT)
    })

    test('a refused create is not saved under its idempotency key: the same key succeeds once a place is free', async () => {
      const a = await t.account()
      const made = await fill(a, LIMIT)
      const headers = { 'idempotency-key': `limit-retry-${a.id}` }
      assertLimited(await create(a, 'retried', headers))
      assert.equal((await a.request('DELETE', `/webhook_endpoints/${made[0]}`)).status, 204)
      const retried = await create(a, 'retried', headers)
      assert.equal(retried.status, 201, retried.raw)
      assert.equal(retried.headers['idempotent-replayed'], undefined, 'processed, not replayed')
      const replayed = await create(a, 'retried', headers)
      assert.equal(replayed.status, 201, replayed.raw)
      assert.equal(replayed.headers['idempotent-replayed'], 'true')
      assert.equal(replayed.body.data.id, retried.body.data.id)
      assert.equal(await total(a), LIMIT)
    })
  })
}
