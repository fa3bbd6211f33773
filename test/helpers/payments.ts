import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { Response, TestAccount, TestApp } from './app.js'
import { getData, getList, getMandate } from './fixtures.js'

/** Payments and refunds made and read through the API, shared by the payments suites (test/api/payments-*.test.ts). */

/** POST /payments as `a` with a fresh idempotency key unless `body` gives one. */
export function payRaw(a: TestAccount, body: Record<string, unknown>): Promise<Response> {
  return a.request('POST', '/payments', { idempotency_key: randomUUID(), ...body })
}

/** As payRaw, and it must answer 201; returns the payment. */
export async function pay(a: TestAccount, body: Record<string, unknown>): Promise<any> {
  const res = await payRaw(a, body)
  assert.equal(res.status, 201, res.raw)
  return res.body.data
}

/** POST /payments/:id/refunds as `a` with a fresh idempotency key unless `body` gives one. */
export function refundRaw(a: TestAccount, paymentId: string, body: Record<string, unknown> = {}): Promise<Response> {
  return a.request('POST', `/payments/${paymentId}/refunds`, { idempotency_key: randomUUID(), ...body })
}

/** GET /payments/:id as `a`: it must answer 200; returns the payment. */
export function getPayment(a: TestAccount, id: string): Promise<any> {
  return getData(a, `/payments/${id}`)
}

/** GET /payments as `a` (getList's checks); returns the body. */
export function listPayments(a: TestAccount, qs = ''): Promise<any> {
  return getList(a, `/payments${qs}`)
}

/** The store's payment rows of one mandate. */
export async function paymentRows(t: TestApp, mandateId: string) {
  return t.store.db.kysely.selectFrom('payments').selectAll().where('mandate_id', '=', mandateId).execute()
}

/** What a mandate holds: the parts a payment changes. */
export async function holding(a: TestAccount, id: string) {
  const m = await getMandate(a, id)
  return { status: m.status, amount_used: m.amount_used, uses_count: m.uses_count }
}
