import assert from 'node:assert/strict'
import type { Response, TestApp } from './app.js'
import { API_VERSION, assertError } from './assertions.js'

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
