import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { Database } from '../../src/db/database.js'
import type { Response, TestAccount, TestApp } from './app.js'

/**
 * Test data made through the API as a TestAccount, and what the store holds, for the suites that
 * run on a TestApp (test/helpers/app.ts).
 */

export const HOUR = 3_600_000
export const DAY_MS = 24 * HOUR

/** An ISO timestamp `ms` ahead of the app's clock. */
export function inFuture(t: Pick<TestApp, 'clock'>, ms: number): string {
  return new Date(t.clock.now().getTime() + ms).toISOString()
}

// ---------------------------------------------------------------- reads that must succeed

/** GET `url` as `a`: it must answer 200; returns its `data`. */
export async function getData(a: TestAccount, url: string): Promise<any> {
  const res = await a.request('GET', url)
  assert.equal(res.status, 200, res.raw)
  return res.body.data
}

/** GET a list as `a`: it must answer 200 with exactly `data` and `meta` (limit, offset, total, has_more); returns the body. */
export async function getList(a: TestAccount, url: string): Promise<any> {
  const res = await a.request('GET', url)
  assert.equal(res.status, 200, res.raw)
  assert.deepEqual(Object.keys(res.body).sort(), ['data', 'meta'])
  assert.deepEqual(Object.keys(res.body.meta).sort(), ['has_more', 'limit', 'offset', 'total'])
  return res.body
}

export function getMandate(a: TestAccount, id: string): Promise<any> {
  return getData(a, `/mandates/${id}`)
}

// ---------------------------------------------------------------- objects made through the API

/** POST /wishes with exactly this body (a kettle unless given): it must answer 201; returns the wish. */
export async function createWish(a: TestAccount, body: Record<string, unknown> = { query: 'a kettle' }): Promise<any> {
  const res = await a.request('POST', '/wishes', body)
  assert.equal(res.status, 201, res.raw)
  return res.body.data
}

/** POST /mandates: an ap2 mandate of max_amount 5000 expiring in an hour, unless `body` says otherwise. */
export function createMandateRaw(t: Pick<TestApp, 'clock'>, a: TestAccount, body: Record<string, unknown> = {}): Promise<Response> {
  return a.request('POST', '/mandates', { protocol: 'ap2', max_amount: 5000, expires_at: inFuture(t, HOUR), ...body })
}

/** As createMandateRaw, and it must answer 201; returns the mandate. */
export async function createMandate(t: Pick<TestApp, 'clock'>, a: TestAccount, body: Record<string, unknown> = {}): Promise<any> {
  const res = await createMandateRaw(t, a, body)
  assert.equal(res.status, 201, res.raw)
  return res.body.data
}

/** A card payment of `amount` on the mandate, which must succeed at once; returns the payment. */
export async function createSucceededPayment(a: TestAccount, mandateId: string, amount = 100, idempotencyKey: string = randomUUID()): Promise<any> {
  const res = await a.request('POST', '/payments', { mandate_id: mandateId, amount, idempotency_key: idempotencyKey })
  assert.equal(res.status, 201, res.raw)
  assert.equal(res.body.data.status, 'succeeded')
  return res.body.data
}

// ---------------------------------------------------------------- what the store holds

/** The account's events about one object, oldest first, with `data` parsed. */
export async function eventsOf(t: TestApp, accountId: string, objectId: string) {
  const rows = await t.store.db.kysely.selectFrom('events').selectAll()
    .where('account_id', '=', accountId).where('object_id', '=', objectId)
    .orderBy('id').execute()
  return rows.map((r) => ({ ...r, data: JSON.parse(r.data) as { object: any } }))
}

/** The types of every event about one object, oldest first, on any account. */
export async function eventTypesOf(db: Database, objectId: string): Promise<string[]> {
  const rows = await db.kysely.selectFrom('events').select(['type']).where('object_id', '=', objectId).orderBy('id').execute()
  return rows.map((r) => r.type)
}

/** How many events the account has, of one type when `type` is given. */
export async function countEvents(t: TestApp, accountId: string, type?: string): Promise<number> {
  let query = t.store.db.kysely.selectFrom('events').select('id').where('account_id', '=', accountId)
  if (type !== undefined) query = query.where('type', '=', type)
  const rows = await query.execute()
  return rows.length
}
