import assert from 'node:assert/strict'
import { toTimestamp } from '../../src/lib/clock.js'
import type { IdempotencyRecord, PendingAnswer } from '../../src/modules/idempotency/store.js'
import type { Response, TestAccount, TestApp } from './app.js'
import { API_VERSION, assertError } from './assertions.js'
import { createMandate, createSucceededPayment, DAY_MS, inFuture } from './fixtures.js'

/** Assertions and data shared by the idempotency suites (test/api/idempotency-*.test.ts). */

export function assertInvalidKey(res: Response): void {
  assertError(res, 400, 'invalid_request_error', 'parameter_invalid', 'idempotency_key')
}

export function assertFresh(res: Response, status: number): void {
  assert.equal(res.status, status, res.raw)
  assert.equal(res.headers['idempotent-replayed'], undefined, 'no Idempotent-Replayed on a first answer')
}

/** A replay of `first`: its status and its body byte for byte, with Idempotent-Replayed: true. */
export function assertReplay(res: Response, first: Response): void {
  assert.equal(res.status, first.status, res.raw)
  assert.equal(res.raw, first.raw)
  assert.equal(res.headers['idempotent-replayed'], 'true')
  assert.equal(res.headers['api-version'], API_VERSION)
}

/** The idempotency keys the store holds for the account, in order. */
export async function keyRows(t: TestApp, accountId: string): Promise<string[]> {
  const rows = await t.store.db.kysely.selectFrom('idempotency_keys').select('idempotency_key')
    .where('account_id', '=', accountId).orderBy('idempotency_key').execute()
  return rows.map((r) => r.idempotency_key)
}

let keySeq = 0
/** A key no other test uses. */
export const newKey = (label = 'k') => `${label}-${process.pid}-${Date.now()}-${++keySeq}`

/** A multi-use mandate (max_amount 1000, budget_amount 5000, 30 days) for the idempotency suites, unless `body` says otherwise. */
export function multiUseMandate(t: Pick<TestApp, 'clock'>, a: TestAccount, body: Record<string, unknown> = {}): Promise<any> {
  return createMandate(t, a, {
    max_amount: 1000, budget_amount: 5000, usage: 'multi_use', expires_at: inFuture(t, 30 * DAY_MS), ...body,
  })
}

/** A payment that must succeed at once, made with a 'setup' key of its own. */
export function succeededPayment(a: TestAccount, mandateId: string, amount = 100): Promise<any> {
  return createSucceededPayment(a, mandateId, amount, newKey('setup'))
}

/** How many payments the store holds for the account. */
export async function paymentCount(t: TestApp, accountId: string): Promise<number> {
  const rows = await t.store.db.kysely.selectFrom('payments').select('id').where('account_id', '=', accountId).execute()
  return rows.length
}

/** A pending answer for (account, key), as the idempotency layer hands a payment executor: its record expires in a day. */
export function pendingAnswer(t: Pick<TestApp, 'clock'>, a: TestAccount, key: string): PendingAnswer {
  const now = t.clock.now()
  return {
    record: (status, payload): IdempotencyRecord => ({
      account_id: a.id,
      idempotency_key: key,
      fingerprint: 'f'.repeat(64),
      response_status: status,
      response_body: JSON.stringify(payload),
      created_at: toTimestamp(now),
      expires_at: toTimestamp(new Date(now.getTime() + DAY_MS)),
    }),
  }
}
