import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import { createMigrator } from '../../src/db/migrate.js'
import { countWishes } from '../../src/modules/wishes/repository.js'
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js'
import { createWish, getList, inFuture } from '../helpers/fixtures.js'
import { storeKinds } from '../helpers/stores.js'

/**
 * `meta.total` of GET /wishes comes from counters kept beside the wishes (migration 0005), not from
 * counting rows. These tests hold the counters to what the rows say, through every way a wish's
 * status changes: create, PUT, DELETE, lapsing on its own, the expiry sweep, and writers at once.
 */

const STATUSES = ['active', 'pending', 'fulfilled', 'cancelled', 'expired'] as const
type Status = (typeof STATUSES)[number]
const FILTERS: (Status | undefined)[] = [undefined, ...STATUSES]
const MOVES: Record<Status, Status[]> = {
  active: ['pending', 'fulfilled', 'cancelled', 'expired'],
  pending: ['active', 'fulfilled', 'cancelled', 'expired'],
  fulfilled: [],
  cancelled: [],
  expired: [],
}

/** A small deterministic generator, so a failing sequence can be replayed. */
function random(seed: number): () => number {
  let state = seed
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31
    return state / 2 ** 31
  }
}

/** The rows a filter really matches, by paging through the list itself. */
async function pagedCount(a: TestAccount, status: Status | undefined): Promise<number> {
  let seen = 0
  for (let offset = 0; ; offset += 100) {
    const page = await getList(a, `/wishes?limit=100&offset=${offset}${status ? `&status=${status}` : ''}`)
    seen += page.data.length
    if (page.data.length < 100) return seen
  }
}

async function assertTotals(a: TestAccount, expected: Record<Status, number>, context: string): Promise<void> {
  for (const status of FILTERS) {
    const { meta } = await getList(a, `/wishes${status ? `?status=${status}` : ''}`)
    const want = status ? expected[status] : Object.values(expected).reduce((x, y) => x + y, 0)
    assert.equal(meta.total, want, `${context}: total of status=${status ?? '(any)'}`)
    assert.equal(await pagedCount(a, status), want, `${context}: rows of status=${status ?? '(any)'}`)
  }
}

for (const kind of storeKinds()) {
  describe(`wish list totals (${kind.name})`, () => {
    let t: TestApp
    before(async () => { t = await startTestApp(kind) })
    after(async () => { await t.close() })

    test('totals match the rows through creates, status changes, deletes, lapses and sweeps', async () => {
      const a = await t.account()
      const next = random(20261122)
      const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!
      // What the API should show: each wish's status as last set, and when it lapses.
      const model = new Map<string, { status: Status, expiresAt: number | null }>()
      const effective = (w: { status: Status, expiresAt: number | null }): Status =>
        (w.status === 'active' || w.status === 'pending') && w.expiresAt !== null && w.expiresAt <= t.clock.now().getTime() ? 'expired' : w.status
      const expected = () => {
        const counts = Object.fromEntries(STATUSES.map((s) => [s, 0])) as Record<Status, number>
        for (const w of model.values()) counts[effective(w)]++
        return counts
      }

      for (let step = 0; step < 120; step++) {
        const roll = next()
        const ids = [...model.keys()]
        if (roll < 0.4 || ids.length === 0) {
          const lapses = next() < 0.4
          const body = lapses ? { query: `wish ${step}`, expires_at: inFuture(t, 30_000 + Math.floor(next() * 60_000)) } : { query: `wish ${step}` }
          const wish = await createWish(a, body)
          model.set(wish.id, { status: 'active', expiresAt: wish.expires_at ? Date.parse(wish.expires_at) : null })
        } else if (roll < 0.75) {
          const id = pick(ids)
          const moves = MOVES[effective(model.get(id)!)]
          if (moves.length === 0) continue
          const to = pick(moves)
          const res = await a.request('PUT', `/wishes/${id}`, { status: to })
          assert.equal(res.status, 200, res.raw)
          model.get(id)!.status = to
        } else if (roll < 0.85) {
          const id = pick(ids)
          assert.equal((await a.request('DELETE', `/wishes/${id}`)).status, 204)
          model.delete(id)
        } else if (roll < 0.95) {
          t.clock.advance(20_000)
        } else {
          await t.jobs.runOnce()
        }
        if (step % 20 === 19) await assertTotals(a, expected(), `after step ${step}`)
      }
      t.clock.advance(120_000)
      await assertTotals(a, expected(), 'once everything lapsed')
      await t.jobs.runOnce()
      await assertTotals(a, expected(), 'after the sweep stored the lapses')
    })

    test('a PUT that stores a lapse moves the wish from its open count to expired once', async () => {
      const a = await t.account()
      const wish = await createWish(a, { query: 'lapsing', expires_at: inFuture(t, 10_000) })
      t.clock.advance(11_000)
      const res = await a.request('PUT', `/wishes/${wish.id}`, { metadata: { note: 'after the lapse' } })
      assert.equal(res.status, 200, res.raw)
      assert.equal(res.body.data.status, 'expired')
      await assertTotals(a, { active: 0, pending: 0, fulfilled: 0, cancelled: 0, expired: 1 }, 'after the PUT')
      await t.jobs.runOnce()
      await assertTotals(a, { active: 0, pending: 0, fulfilled: 0, cancelled: 0, expired: 1 }, 'after the sweep')
    })

    test('concurrent creates, moves and deletes of one account leave totals equal to the rows', async () => {
      const a = await t.account()
      const first = await Promise.all(Array.from({ length: 30 }, (_, i) => createWish(a, { query: `first ${i}` })))
      const moves = ['pending', 'fulfilled', 'cancelled'] as const
      const results = await Promise.all([
        ...Array.from({ length: 30 }, (_, i) => a.request('POST', '/wishes', { query: `second ${i}` })),
        ...first.map((w, i) => a.request('PUT', `/wishes/${w.id}`, { status: moves[i % 3] })),
        // The same wishes deleted at once: a delete and a move race; either order must count right.
        ...first.filter((_, i) => i % 4 === 0).map((w) => a.request('DELETE', `/wishes/${w.id}`)),
      ])
      for (const res of results) assert.ok([200, 201, 204, 404].includes(res.status), res.raw)
      for (const status of FILTERS) {
        const { meta } = await getList(a, `/wishes${status ? `?status=${status}` : ''}`)
        assert.equal(meta.total, await pagedCount(a, status), `status=${status ?? '(any)'}`)
      }
      assert.equal((await getList(a, '/wishes')).meta.total, 60 - first.filter((_, i) => i % 4 === 0).length)
    })

    test('accounts never see each other\'s totals', async () => {
      const a = await t.account()
      const b = await t.account()
      await Promise.all(Array.from({ length: 5 }, () => createWish(a, { query: 'mine' })))
      assert.equal((await getList(a, '/wishes')).meta.total, 5)
      assert.equal((await getList(b, '/wishes')).meta.total, 0)
    })

    test('migration 0006 clamps the active mandates that outlived their wish', async () => {
      const store = await kind.open()
      try {
        const migrator = await createMigrator(store.db)
        assert.equal((await migrator.migrateTo('0005_wish_counts')).error, undefined)
        const db = store.db.kysely
        const stamp = '2026-01-01T00:00:00.000Z'
        const wishEnds = '2026-02-01T00:00:00.000Z'
        const mandateEnds = '2026-06-01T00:00:00.000Z'
        await sql`insert into accounts (id, name, created_at) values ('acct_old', 'old', ${stamp})`.execute(db)
        for (const [id, expires] of [['wish_ends', wishEnds], ['wish_open', null]] as const) {
          await sql`insert into wishes (id, account_id, status, query, protocol, metadata, expires_at, created_at, updated_at)
            values (${id}, 'acct_old', 'active', 'old', 'ap2', '{}', ${expires}, ${stamp}, ${stamp})`.execute(db)
        }
        const mandates = [
          ['mdt_outlives', 'wish_ends', 'active'], ['mdt_revoked', 'wish_ends', 'revoked'],
          ['mdt_open_wish', 'wish_open', 'active'], ['mdt_no_wish', null, 'active'],
        ] as const
        for (const [id, wishId, status] of mandates) {
          await sql`insert into mandates (id, account_id, protocol, status, wish_id, currency, max_amount, budget_amount,
              amount_used, usage, uses_count, expires_at, not_before, metadata, created_at, updated_at, revoked_at)
            values (${id}, 'acct_old', 'ap2', ${status}, ${wishId}, 'USD', 100, 100, 0, 'single_use', 0, ${mandateEnds},
              null, '{}', ${stamp}, ${stamp}, null)`.execute(db)
        }
        assert.equal((await migrator.migrateTo('0006_mandates_within_wish')).error, undefined)
        const rows = await sql<{ id: string, expires_at: string }>`select id, expires_at from mandates order by id`.execute(db)
        assert.deepEqual(Object.fromEntries(rows.rows.map((r) => [r.id, r.expires_at])), {
          mdt_no_wish: mandateEnds, mdt_open_wish: mandateEnds, mdt_outlives: wishEnds, mdt_revoked: mandateEnds,
        })
      } finally {
        await store.close()
      }
    })

    test('migration 0005 counts the wishes that existed before it', async () => {
      const store = await kind.open()
      try {
        const migrator = await createMigrator(store.db)
        const { error } = await migrator.migrateTo('0004_wish_list_index')
        assert.equal(error, undefined)
        const db = store.db.kysely
        const stamp = '2026-01-01T00:00:00.000Z'
        await sql`insert into accounts (id, name, created_at) values ('acct_old', 'old', ${stamp})`.execute(db)
        const statuses = ['active', 'active', 'active', 'pending', 'fulfilled', 'cancelled', 'expired']
        for (const [i, status] of statuses.entries()) {
          await sql`insert into wishes (id, account_id, status, query, protocol, metadata, expires_at, created_at, updated_at)
            values (${`wish_old${i}`}, 'acct_old', ${status}, 'old', 'ap2', '{}', ${i === 0 ? '2026-01-02T00:00:00.000Z' : null}, ${stamp}, ${stamp})`.execute(db)
        }
        const { error: upError } = await migrator.migrateTo('0005_wish_counts')
        assert.equal(upError, undefined)
        const count = (status?: Status, now = '2026-01-01T12:00:00.000Z') => countWishes(db, { accountId: 'acct_old', status, now })
        assert.equal(await count(), 7)
        assert.equal(await count('active'), 3)
        assert.equal(await count('pending'), 1)
        assert.equal(await count('expired'), 1)
        // Once the first wish's expires_at has passed it counts as expired, as the list shows it.
        assert.equal(await count('active', '2026-01-03T00:00:00.000Z'), 2)
        assert.equal(await count('expired', '2026-01-03T00:00:00.000Z'), 2)
      } finally {
        await store.close()
      }
    })
  })
}
