import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { recount } from '../../src/db/recount.js'
import { newId } from '../../src/lib/ids.js'
import { foldEventCounts } from '../../src/modules/events/repository.js'
import { foldPaymentCounts } from '../../src/modules/payments/repository.js'
import { foldAttemptCounts, insertAttempt } from '../../src/modules/webhooks/repository.js'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { runCli } from '../helpers/cli.js'
import { createMandate } from '../helpers/fixtures.js'
import { pay } from '../helpers/payments.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * `wishpay counts check` and `wishpay counts repair` (db/recount.ts): the counters behind `meta.total`
 * against the rows they count. A check reports exactly the counts that rows changed behind their backs,
 * for the accounts asked about; a repair makes every total equal its rows again, also while writes and
 * folds run, and touches no other account.
 */

for (const kind of storeKinds()) {
  describe(`counts check and repair (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind, { SANDBOX_SETTLEMENT_DELAY_MS: '60000', WEBHOOK_ALLOW_PRIVATE: 'true' }) })
    after(async () => { await t.close() })

    const db = () => t.store.db.kysely
    const foldAll = async () => {
      await foldPaymentCounts(t.store.db)
      await foldEventCounts(t.store.db)
      await foldAttemptCounts(t.store.db)
    }

    /** An account with wishes, payments (and their events) and delivery attempts to one endpoint. */
    async function populated(): Promise<{ a: TestAccount, endpointId: string, mandateId: string }> {
      const a = await t.account()
      const endpoint = await a.request('POST', '/webhook_endpoints', { url: 'http://127.0.0.1:9/hooks', events: ['*'] })
      assert.equal(endpoint.status, 201, endpoint.raw)
      for (const query of ['a lamp', 'a desk', 'a chair']) assert.equal((await a.request('POST', '/wishes', { query })).status, 201)
      const m = await createMandate(t, a, { usage: 'multi_use', budget_amount: 1_000_000, max_amount: 5_000 })
      for (const amount of [100, 200, 300]) await pay(a, { mandate_id: m.id, amount, payment_method: 'card' })
      await pay(a, { mandate_id: m.id, amount: 50, payment_method: 'bank_transfer' })
      const events = await db().selectFrom('events').select(['id', 'type', 'created_at']).where('account_id', '=', a.id).execute()
      for (const event of events.filter((e) => e.type !== 'wish.created').slice(0, 3)) {
        await db().transaction().execute((trx) => insertAttempt(trx, {
          id: newId('wha'), account_id: a.id, endpoint_id: endpoint.body.data.id, event_id: event.id, event_type: event.type, attempt: 1,
          status_code: 200, error: null, succeeded: 1, duration_ms: 1, next_retry_at: null, created_at: event.created_at,
        }))
      }
      return { a, endpointId: endpoint.body.data.id, mandateId: m.id }
    }

    /** meta.total of each list whose total comes from counters, as a client reads it. */
    async function totals(a: TestAccount, endpointId: string) {
      const total = async (url: string) => {
        const res = await a.request('GET', url)
        assert.equal(res.status, 200, res.raw)
        return res.body.meta.total as number
      }
      return {
        wishes: await total('/wishes'),
        payments: await total('/payments'),
        succeeded: await total('/payments?status=succeeded'),
        events: await total('/events'),
        deliveries: await total(`/webhook_endpoints/${endpointId}/deliveries`),
      }
    }

    /** The same totals, counted from the rows. */
    async function counted(a: TestAccount, endpointId: string) {
      const count = async (table: 'wishes' | 'payments' | 'events' | 'webhook_attempts', where: Record<string, string> = {}) => {
        let query = db().selectFrom(table).select((s) => s.fn.countAll<number | string>().as('n')).where('account_id', '=', a.id)
        for (const [column, value] of Object.entries(where)) query = query.where(column as 'account_id', '=', value)
        return Number((await query.executeTakeFirstOrThrow()).n)
      }
      return {
        wishes: await count('wishes'),
        payments: await count('payments'),
        succeeded: await count('payments', { status: 'succeeded' }),
        events: await count('events'),
        deliveries: await count('webhook_attempts', { endpoint_id: endpointId }),
      }
    }

    /** Changes rows behind their counts' backs, as an old process or a hand-made change would. */
    async function breakCounts(a: TestAccount, endpointId: string) {
      const wish = await db().selectFrom('wishes').select('id').where('account_id', '=', a.id).where('status', '=', 'active').executeTakeFirstOrThrow()
      await db().deleteFrom('wishes').where('id', '=', wish.id).execute()
      await db().insertInto('payment_count_changes').values({ account_id: a.id, status: 'succeeded', n: 5 }).execute()
      const event = await db().selectFrom('events').select('id').where('account_id', '=', a.id).where('type', '=', 'wish.created')
        .where('id', 'not in', db().selectFrom('webhook_attempts').select('event_id')).executeTakeFirstOrThrow()
      await db().deleteFrom('events').where('id', '=', event.id).execute()
      await db().deleteFrom('attempt_counts').where('account_id', '=', a.id).execute()
      await db().deleteFrom('attempt_count_changes').where('account_id', '=', a.id).where('endpoint_id', '=', endpointId).execute()
    }

    test('check finds nothing on counts the API kept, before and after a fold', async () => {
      const { a, endpointId } = await populated()
      assert.deepEqual(await totals(a, endpointId), await counted(a, endpointId))
      const before = await runCli(['counts', 'check', '--account', a.id, '--json'], t.store.env)
      assert.equal(before.code, 0, before.stderr)
      assert.deepEqual(JSON.parse(before.stdout), { accounts: 1, differences: [], repaired: false })
      await foldAll()
      const afterFold = await runCli(['counts', 'check', '--account', a.id], t.store.env)
      assert.equal(afterFold.code, 0, afterFold.stderr)
      assert.equal(afterFold.stdout, 'Every count matches its rows (1 account).\n')
    })

    test('check reports exactly what changed behind the counts; repair fixes that account alone', async () => {
      const { a, endpointId } = await populated()
      const other = await populated()
      await foldAll()
      await breakCounts(a, endpointId)
      await breakCounts(other.a, other.endpointId)
      assert.notDeepEqual(await totals(a, endpointId), await counted(a, endpointId))

      const check = await runCli(['counts', 'check', '--account', a.id, '--json'], t.store.env)
      assert.equal(check.code, 1, check.stderr)
      assert.deepEqual(JSON.parse(check.stdout), {
        accounts: 1,
        repaired: false,
        differences: [
          { account_id: a.id, counter: 'wishes', key: 'active', counted: 3, rows: 2 },
          { account_id: a.id, counter: 'payments', key: 'succeeded', counted: 8, rows: 3 },
          { account_id: a.id, counter: 'events', key: 'wish.created', counted: 3, rows: 2 },
          { account_id: a.id, counter: 'delivery_attempts', key: endpointId, counted: 0, rows: 3 },
        ],
      })
      const text = await runCli(['counts', 'check', '--account', a.id], t.store.env)
      assert.equal(text.code, 1)
      assert.match(text.stdout, new RegExp(`^${a.id}  payments succeeded: counted 8, rows 3$`, 'm'))
      assert.match(text.stdout, /^4 counts differ from their rows \(1 account\)\.$/m)

      const repair = await runCli(['counts', 'repair', '--account', a.id, '--json'], t.store.env)
      assert.equal(repair.code, 0, repair.stderr)
      assert.equal(JSON.parse(repair.stdout).repaired, true)
      assert.equal(JSON.parse(repair.stdout).differences.length, 4)
      assert.deepEqual(await totals(a, endpointId), await counted(a, endpointId))
      assert.equal((await runCli(['counts', 'check', '--account', a.id], t.store.env)).code, 0)
      // The other account was not touched, and a repair of every account mends it too.
      assert.equal(JSON.parse((await runCli(['counts', 'check', '--account', other.a.id, '--json'], t.store.env)).stdout).differences.length, 4)
      const all = await runCli(['counts', 'repair'], t.store.env)
      assert.equal(all.code, 0, all.stderr)
      assert.deepEqual(await totals(other.a, other.endpointId), await counted(other.a, other.endpointId))
      assert.equal((await runCli(['counts', 'check'], t.store.env)).code, 0)
      // A repaired count keeps counting: new writes and a fold on top of it.
      assert.equal((await a.request('POST', '/wishes', { query: 'a rug' })).status, 201)
      await foldAll()
      assert.deepEqual(await totals(a, endpointId), await counted(a, endpointId))
    })

    test('an unknown account or command is a usage error', async () => {
      const unknown = await runCli(['counts', 'check', '--account', 'acct_00000000000000000000000000'], t.store.env)
      assert.equal(unknown.code, 2)
      assert.match(unknown.stderr, /No such account: acct_00000000000000000000000000/)
      const bad = await runCli(['counts', 'recount'], t.store.env)
      assert.equal(bad.code, 2)
      assert.match(bad.stderr, /Unknown counts command: recount/)
    })

    test('a repair during concurrent writes and folds sees one snapshot and leaves every total exact', async () => {
      const { a, endpointId, mandateId } = await populated()
      const rounds = 6
      let writing = true
      const writers = Array.from({ length: 8 }, async (_, w) => {
        for (let i = 0; writing || i < 3; i++) {
          const wish = await a.request('POST', '/wishes', { query: `a lamp ${w}-${i}` })
          assert.equal(wish.status, 201, wish.raw)
          await pay(a, { mandate_id: mandateId, amount: 1, payment_method: i % 2 === 0 ? 'card' : 'bank_transfer' })
        }
      })
      const folds = (async () => {
        while (writing) {
          await foldAll()
          // On SQLite a fold with nothing to fold reads synchronously: give the writers a turn.
          await new Promise((resolve) => setImmediate(resolve))
        }
      })()
      try {
        for (let round = 0; round < rounds; round++) {
          // A wrong count for the repair to find: +5 succeeded payments that do not exist.
          await db().insertInto('payment_count_changes').values({ account_id: a.id, status: 'succeeded', n: 5 }).execute()
          const result = await recount(t.store.db, { accountId: a.id, repair: true })
          // Its snapshot held every write whole (the row and its count) and the fold's moves whole:
          // the planted change is the only difference it can see.
          assert.deepEqual(result.differences.map((d) => [d.counter, d.key, d.counted - d.rows]), [['payments', 'succeeded', 5]])
        }
      } finally {
        writing = false
        await Promise.all([...writers, folds])
      }
      await foldAll()
      assert.deepEqual(await totals(a, endpointId), await counted(a, endpointId))
      assert.deepEqual((await recount(t.store.db, { accountId: a.id, repair: false })).differences, [])
      assert.ok((await counted(a, endpointId)).payments >= 4 + 8 * 3)
    })
  })
}
