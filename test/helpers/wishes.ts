import assert from 'node:assert/strict'
import type { TestAccount } from './app.js'
import { createWish, getData, getList } from './fixtures.js'

/** Wishes made and read through the API, shared by the wishes suites (test/api/wishes-*.test.ts). */

export type WishStatus = 'active' | 'pending' | 'fulfilled' | 'cancelled' | 'expired'

/** GET /wishes/:id as `a`: it must answer 200; returns the wish. */
export function getWish(a: TestAccount, id: string): Promise<any> {
  return getData(a, `/wishes/${id}`)
}

/** GET /wishes as `a` (getList's checks); returns the body. */
export function listWishes(a: TestAccount, qs = ''): Promise<any> {
  return getList(a, `/wishes${qs}`)
}

/** PUT /wishes/:id as `a`: it must answer 200; returns the wish. */
export async function updateWish(a: TestAccount, id: string, body: Record<string, unknown>): Promise<any> {
  const res = await a.request('PUT', `/wishes/${id}`, body)
  assert.equal(res.status, 200, res.raw)
  return res.body.data
}

/** A wish in the given status, reached through the API (expired by PUT). */
export async function wishIn(a: TestAccount, status: WishStatus, body: Record<string, unknown> = { query: 'a kettle' }): Promise<any> {
  const wish = await createWish(a, body)
  if (status === 'active') return wish
  return updateWish(a, wish.id, { status })
}
