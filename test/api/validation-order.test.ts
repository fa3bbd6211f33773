import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { type Response, startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { assertError } from '../helpers/assertions.js'
import { createMandate, HOUR, inFuture } from '../helpers/fixtures.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * The order of a validation error's `errors` (src/http/validation.ts): unknown parameters, then
 * missing ones, then invalid values. A mistyped name is unknown and leaves its real name missing; the
 * typo leads, so the top-level code and message name what the client has to fix.
 */

/** A 400 whose errors are exactly these [param, code] pairs in this order; the first names the top level. */
function assertErrorList(res: Response, expected: Array<[string, string]>): void {
  const error = assertError(res, 400, 'invalid_request_error', expected[0]![1])
  assert.deepEqual(error.errors.map((e: { param: string, code: string }) => [e.param, e.code]), expected, res.raw)
  assert.equal(error.message, error.errors[0].message, 'the top-level message is the first error\'s')
  if (expected.length > 1) assert.equal(error.param, undefined, 'no single param when several failed')
}

for (const kind of storeKinds()) {
  describe(`validation errors: unknown, then missing, then invalid (${kind.name})`, () => {
    let t: TestApp
    let a: TestAccount
    before(async () => {
      t = await startTestApp(kind)
      a = await t.account()
    })
    after(async () => { await t.close() })

    test('POST /mandates with max_ammount: the typo leads, then the max_amount it left missing', async () => {
      const res = await a.request('POST', '/mandates', { protocol: 'ap2', max_ammount: 5, expires_at: inFuture(t, HOUR) })
      assertErrorList(res, [['max_ammount', 'parameter_unknown'], ['max_amount', 'parameter_missing']])
      assert.equal(res.body.error.message, 'Received unknown parameter: max_ammount')
    })

    test('POST /mandates: unknown, then missing, then invalid, whatever the order of the body', async () => {
      const res = await a.request('POST', '/mandates', { protocol: 'ap3', max_ammount: 5, usage: 'twice', expires_at: inFuture(t, HOUR) })
      assertErrorList(res, [['max_ammount', 'parameter_unknown'], ['max_amount', 'parameter_missing'], ['protocol', 'parameter_invalid'], ['usage', 'parameter_invalid']])
    })

    test('POST /wishes with qurey: the typo leads, then query missing', async () => {
      const res = await a.request('POST', '/wishes', { qurey: 'a tent', protocol: 'ap3' })
      assertErrorList(res, [['qurey', 'parameter_unknown'], ['query', 'parameter_missing'], ['protocol', 'parameter_invalid']])
    })

    test('POST /payments with amuont: the typo leads, then amount missing', async () => {
      const m = await createMandate(t, a)
      const res = await a.request('POST', '/payments', { mandate_id: m.id, amuont: 100, idempotency_key: randomUUID() })
      assertErrorList(res, [['amuont', 'parameter_unknown'], ['amount', 'parameter_missing']])
    })

    test('POST /webhook_endpoints with ulr: the typo leads, then url missing', async () => {
      const res = await a.request('POST', '/webhook_endpoints', { ulr: 'https://example.com/hook', events: ['*'] })
      assertErrorList(res, [['ulr', 'parameter_unknown'], ['url', 'parameter_missing']])
    })

    test('a query string: the unknown parameter leads, then the invalid one', async () => {
      const res = await a.request('GET', '/mandates?limit=0&colour=red')
      assertErrorList(res, [['colour', 'parameter_unknown'], ['limit', 'parameter_invalid']])
    })

    test('one failure alone is unchanged: param and errors name it', async () => {
      const res = await a.request('POST', '/mandates', { protocol: 'ap2', expires_at: inFuture(t, HOUR) })
      assertErrorList(res, [['max_amount', 'parameter_missing']])
      assert.equal(res.body.error.param, 'max_amount')
    })
  })
}
