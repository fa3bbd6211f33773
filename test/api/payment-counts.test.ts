import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import { createMigrator } from '../../src/db/migrate.js'
import { countPayments, foldPaymentCounts } from '../../src/modules/payments/repository.js'
import { PAYMENT_STATUSES } from '../../src/modules/payments/schemas.js'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { createMandate } from '../helpers/fixtures.js'
import { listPayments, pay, refundRaw } from '../helpers/payments.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * `meta.total` of GET /payments by account and status comes from counters (migration 0012): every
 * payment write records a change in its own transaction, and a periodic fold moves the changes into the
 * counters. Whatever wrote the payments, and however the folds interleave with them, each total must
 * equal what counting the stored payments gives.
 */

for (const kind of storeKinds()) {
  describe(`payment counts behind meta.total (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind, { SANDBOX_SETTLEMENT_DELAY_MS: '60000' }) })
    after(async () => { await t.close() })

    const db = () => t.store.db.kysely
    const fold = () => foldPaymentCounts(t.store.db)
    // PostgreSQL writes count changes as rows that a fold moves into the counts; SQLite adds them to the
    // counts at once (db/counters.ts recordChanges), so no change waits there.
    const changesWait = kind.name === 'postgres'

    /** The account's payments by status, counted from the rows themselves. */
    async function counted(a: TestAccount) {
      const rows = await db().selectFrom('payments').select('status').where('account_id', '=', a.id).execute()
      const by: Record<string, number> = { all: rows.length }
      for (const status of PAYMENT_STATUSES) by[status] = rows.filter((r) => r.status === status).length
      return by
    }

    /** meta.total of the unfiltered list and of each status filter, as a client reads them. */
    async function totals(a: TestAccount) {
      const by: Record<string, number> = { all: (await listPayments(a)).meta.total }
      for (const status of PAYMENT_STATUSES) by[status] = (await listPayments(a, `?status=${status}`)).meta.total
      return by
    }

    const changesOf = async (a: TestAccount) =>
      (await db().selectFrom('payment_count_changes').select('n').where('account_id', '=', a.id).execute()).length

    test('every write path counts: single write, general path, settlement, refunds; before and after a fold', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', budget_amount: 100_000, max_amount: 5_000 })
      const succeeded = await pay(a, { mandate_id: m.id, amount: 1000, payment_method: 'card' })
      const toRefund = await pay(a, { mandate_id: m.id, amount: 700, payment_method: 'card' })
      const pending = await pay(a, { mandate_id: m.id, amount: 300, payment_method: 'bank_transfer' })
      await pay(a, { mandate_id: m.id, amount: 200, payment_method: 'bank_transfer' })
      const declined = await pay(a, { mandate_id: m.id, amount: 100, payment_method: 'test_card_declined' })
      assert.equal(declined.status, 'failed')
      // The general path, called directly.
      await t.services.payments.create({ accountId: a.id, requestId: 'req_counts' }, { mandate_id: m.id, amount: 50, currency: 'USD', payment_method: 'card' })
      assert.deepEqual(await totals(a), await counted(a))

      // Settlement: pending -> processing -> succeeded.
      const settled = await a.request('POST', `/payments/${pending.id}/settle`)
      assert.equal(settled.status, 200, settled.raw)
      // A partial refund leaves the payment succeeded; the rest makes it refunded.
      assert.equal((await refundRaw(a, succeeded.id, { amount: 100 })).status, 201)
      assert.equal((await refundRaw(a, toRefund.id)).status, 201)
      const expected = await counted(a)
      assert.deepEqual(expected, { all: 6, pending: 1, processing: 0, succeeded: 3, failed: 1, refunded: 1 })
      assert.deepEqual(await totals(a), expected)

      assert.equal(await fold() > 0, changesWait)
      assert.equal(await changesOf(a), 0, 'the fold took every change of the account')
      assert.deepEqual(await totals(a), expected)
      assert.equal(await fold(), 0, 'nothing left to fold')

      // Counters and new changes together.
      await pay(a, { mandate_id: m.id, amount: 10, payment_method: 'card' })
      assert.deepEqual(await totals(a), await counted(a))
      // Filters other than status count the rows, as before.
      assert.equal((await listPayments(a, `?mandate_id=${m.id}`)).meta.total, 7)
    })

    test('payments at once, with folds running among them: every total exact', async () => {
      const a = await t.account()
      const mandates = await Promise.all(Array.from({ length: 4 }, () => createMandate(t, a, { usage: 'multi_use', budget_amount: 1_000_000, max_amount: 5_000 })))
      const burst = Array.from({ length: 48 }, (_, i) => pay(a, { mandate_id: mandates[i % 4]!.id, amount: 100 + i, payment_method: i % 3 === 0 ? 'bank_transfer' : 'card' }))
      const folds = Array.from({ length: 6 }, () => fold())
      await Promise.all([...burst, ...folds])
      const expected = await counted(a)
      assert.equal(expected.all, 48)
      assert.deepEqual(await totals(a), expected)
      await Promise.all([fold(), fold(), fold()])
      assert.equal(await changesOf(a), 0)
      assert.deepEqual(await totals(a), expected, 'concurrent folds count each change once')
    })

    test('change rows waiting (an earlier version\'s on SQLite) count at once and are folded once by concurrent folds', async () => {
      const a = await t.account()
      const m = await createMandate(t, a, { usage: 'multi_use', budget_amount: 100_000, max_amount: 5_000 })
      for (const amount of [100, 200, 300]) await pay(a, { mandate_id: m.id, amount, payment_method: 'card' })
      await fold()
      // As a version before recordChanges (or PostgreSQL) records them: a payment that moved from succeeded to refunded.
      await db().updateTable('payments').set({ status: 'refunded' }).where('account_id', '=', a.id).where('amount', '=', 300).execute()
      await db().insertInto('payment_count_changes').values([
        { account_id: a.id, status: 'succeeded', n: -1 }, { account_id: a.id, status: 'refunded', n: 1 },
      ]).execute()
      assert.deepEqual(await totals(a), await counted(a), 'counted before a fold')
      await Promise.all([fold(), fold(), fold()])
      assert.equal(await changesOf(a), 0)
      assert.deepEqual(await totals(a), await counted(a), 'each change folded once')
      assert.equal((await totals(a)).refunded, 1)
    })

    test('migration 0012 counts the payments that existed before it, and goes down and up again', async () => {
      const store = await kind.open()
      try {
        const migrator = await createMigrator(store.db)
        assert.equal((await migrator.migrateTo('0011_list_cursor_indexes')).error, undefined)
        const db = store.db.kysely
        const stamp = '2026-01-01T00:00:00.000Z'
        await sql`insert into accounts (id, name, created_at) values ('acct_old', 'old', ${stamp})`.execute(db)
        await sql`insert into mandates (id, account_id, protocol, status, wish_id, currency, max_amount, budget_amount,
            amount_used, usage, uses_count, expires_at, not_before, metadata, created_at, updated_at, revoked_at)
          values ('mdt_old', 'acct_old', 'ap2', 'active', null, 'USD', 100, 10000, 0, 'multi_use', 0, '2027-01-01T00:00:00.000Z', null, '{}', ${stamp}, ${stamp}, null)`.execute(db)
        const statuses = ['succeeded', 'succeeded', 'succeeded', 'pending', 'failed', 'refunded']
        for (const [i, status] of statuses.entries()) {
          await sql`insert into payments (id, account_id, mandate_id, wish_id, amount, currency, status, protocol_type, payment_method,
              amount_refunded, failure_code, failure_message, metadata, created_at, updated_at)
            values (${`pay_old${i}`}, 'acct_old', 'mdt_old', null, 10, 'USD', ${status}, 'ap2', 'card', 0, null, null, '{}', ${stamp}, ${stamp})`.execute(db)
        }
        const count = (status?: (typeof PAYMENT_STATUSES)[number]) => countPayments(db, { accountId: 'acct_old', status })
        for (let round = 0; round < 2; round++) {
          assert.equal((await migrator.migrateToLatest()).error, undefined)
          assert.equal(await count(), 6)
          assert.equal(await count('succeeded'), 3)
          assert.equal(await count('pending'), 1)
          assert.equal(await count('processing'), 0)
          if (round === 0) assert.equal((await migrator.migrateTo('0011_list_cursor_indexes')).error, undefined)
        }
      } finally {
        await store.close()
      }
    })

    test('an account with no payments has totals of 0; another account\'s payments are not counted', async () => {
      const empty = await t.account()
      const other = await t.account()
      const m = await createMandate(t, other, { usage: 'multi_use', budget_amount: 10_000, max_amount: 500 })
      await pay(other, { mandate_id: m.id, amount: 100, payment_method: 'card' })
      await fold()
      for (const total of Object.values(await totals(empty))) assert.equal(total, 0)
    })
  })
}
