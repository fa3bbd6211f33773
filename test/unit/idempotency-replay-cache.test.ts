import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { migrateToLatest } from '../../src/db/migrate.js'
import { randomBase62 } from '../../src/lib/ids.js'
import {
  createIdempotencyStore, type IdempotencyRecord, replayCacheEntryBytes,
} from '../../src/modules/idempotency/store.js'
import { loadConfig } from '../../src/config.js'
import { systemClock, toTimestamp } from '../../src/lib/clock.js'
import { createServices } from '../../src/services.js'
import { openStore, type SqliteTestStore } from '../helpers/stores.js'
import { heapUsed } from '../helpers/heap.js'

/**
 * The replay cache of src/modules/idempotency/store.ts is bounded in bytes of heap: its size estimate
 * is an upper bound of what an entry really holds, and past the bound the oldest entries go.
 */

const NOW = new Date('2026-11-24T12:00:00.000Z')
/** A payment's answer, about as long as the real one; `wide` makes it a two-byte string. */
const body = (i: number, wide: boolean) => JSON.stringify({
  id: `pay_${randomBase62(26)}`, object: 'payment', amount: i, currency: 'USD', status: 'succeeded',
  description: wide ? `お茶を${i}杯` : `tea ${i}`, created_at: NOW.toISOString(), metadata: {},
})

/**
 * A string as the server holds it: flat, decoded from bytes (a header, a hash's hex digest) or flattened
 * when written to the database. A string built by `+` is a tree of pieces until it is read, larger than
 * its characters, and would measure the test's own way of making strings.
 */
const flat = (text: string) => Buffer.from(text).toString()

function record(accountId: string, i: number, wide = false): IdempotencyRecord {
  return {
    account_id: accountId,
    // Made afresh, as a request's key is: no string shared between entries.
    idempotency_key: flat(`${randomBase62(8)}-${i}-5f0c2a9e-3d1b-4c8e-9a57`),
    fingerprint: flat(randomBase62(64)),
    response_status: 201,
    response_body: flat(body(i, wide)),
    created_at: toTimestamp(NOW),
    expires_at: toTimestamp(new Date(NOW.getTime() + 86_400_000)),
  }
}

describe('the idempotency replay cache', () => {
  let store: SqliteTestStore

  before(async () => {
    store = await openStore('sqlite')
    await migrateToLatest(store.db)
  })
  after(async () => { await store.close() })

  for (const wide of [false, true]) {
    test(`an entry holds no more heap than its estimate (${wide ? 'two-byte' : 'one-byte'} bodies)`, async () => {
      const cache = createIdempotencyStore({ db: store.db, ttlSeconds: 86_400, replayCacheBytes: 1e12 })
      const accountId = `acct_${randomBase62(26)}`
      // Each record is made and handed over in turn, so that the cache alone holds it; what else the
      // loop allocates is garbage by the second measurement.
      let estimated = 0
      let last: IdempotencyRecord | undefined
      const before = heapUsed()
      for (let i = 0; i < 5_000; i++) {
        last = record(accountId, i, wide)
        estimated += replayCacheEntryBytes(last)
        cache.remember(last)
      }
      const held = heapUsed() - before
      // The cache is used after the measurement, so V8 cannot collect it before; the record is in no
      // database, so only the cache can answer it. A measurement that memory freed from an earlier test
      // pulls down (the two-byte case read -3.4 MB on Node 20 while the one-byte case's cache was still
      // alive at \`before\`) would pass the upper bound alone, hence the lower one: a real measurement is
      // 0.6-0.8 of the estimate.
      assert.equal((await cache.find({ accountId, key: last!.idempotency_key, now: NOW }))?.response_body, last!.response_body)
      assert.ok(held <= estimated, `5,000 entries hold ${held} bytes, more than the ${estimated} estimated`)
      assert.ok(held >= estimated / 4, `5,000 entries hold ${held} bytes, too few for a measurement of them (estimate ${estimated})`)
    })
  }

  test('a record it writes is not cached, one it reads back is', async () => {
    const services = createServices({ config: loadConfig({}), db: store.db, clock: systemClock })
    const { account_id: accountId } = await services.accounts.createKey(`cache-${randomBase62(8)}`, 'write')
    const cache = createIdempotencyStore({ db: store.db, ttlSeconds: 86_400 })
    const use = { accountId, key: `key-${randomBase62(8)}`, fingerprint: randomBase62(64), now: new Date() }
    const forget = () => store.db.kysely.deleteFrom('idempotency_keys').where('account_id', '=', accountId).execute()

    const written = (await cache.transact(use, async () => cache.record(use, 201, '{"written":true}'))).record
    assert.deepEqual(await store.db.kysely.selectFrom('idempotency_keys').select('response_body').where('account_id', '=', accountId).execute(), [{ response_body: written.response_body }])
    // Gone from the database, and never cached: the next request under the key is new.
    await forget()
    assert.equal(await cache.find(use), undefined)

    // Written again, then read back once: from then on the copy answers.
    await cache.transact(use, async () => cache.record(use, 201, '{"written":true}'))
    assert.equal((await cache.find(use))?.response_body, '{"written":true}')
    await forget()
    assert.equal((await cache.find(use))?.response_body, '{"written":true}')
  })

  test('past its bound the oldest entries go, and they are read from the database again', async () => {
    const bound = 200_000
    const cache = createIdempotencyStore({ db: store.db, ttlSeconds: 86_400, replayCacheBytes: bound })
    const accountId = `acct_${randomBase62(26)}`
    // Remembered only, never saved: find() answers them from the cache or not at all.
    const records = Array.from({ length: 1_000 }, (_, i) => record(accountId, i))
    for (const r of records) cache.remember(r)
    const use = (r: IdempotencyRecord) => ({ accountId, key: r.idempotency_key, fingerprint: r.fingerprint, now: NOW })

    const newest = records.at(-1)!
    assert.deepEqual(await cache.find(use(newest)), newest)
    assert.equal(await cache.find(use(records[0]!)), undefined)
    // What is still cached fits the bound.
    let kept = 0
    let bytes = 0
    for (const r of records) {
      if (await cache.find(use(r)) === undefined) continue
      kept++
      bytes += replayCacheEntryBytes(r)
    }
    assert.ok(kept > 0 && kept < records.length, `${kept} of ${records.length} kept`)
    assert.ok(bytes <= bound, `${bytes} bytes kept, over the ${bound} bound`)
  })
})
