import { type Insertable, sql } from 'kysely'
import type { Database, Executor } from './database.js'
import { dialectOf } from './dialect.js'
import { compiled, fromTemplate, insertRows, shapeOf, type Statement } from './query-template.js'
import { readQuery } from './reusable-query.js'
import type { PaymentCountChangesTable } from './schema.js'

/**
 * A count of an account's rows by one column (payments by status, events by type, delivery attempts by
 * endpoint) kept for `meta.total` (migrations 0012-0014): writes record changes (+n, -n) in their own
 * transaction (`recordChanges`), which on PostgreSQL locks no counter row; `foldCounts` moves the
 * changes into the counters; `countFromCounters` sums both.
 */
export interface Counter {
  /** The folded counts: one row an account and key, primary key (account_id, key). */
  readonly counts: 'payment_counts' | 'event_counts' | 'attempt_counts'
  /** The changes not folded yet. */
  readonly changes: 'payment_count_changes' | 'event_count_changes' | 'attempt_count_changes'
  /** The column counted by. */
  readonly key: 'status' | 'type' | 'endpoint_id'
  /** The table whose rows are counted. */
  readonly rows: 'payments' | 'events' | 'webhook_attempts'
}

export const PAYMENT_COUNTER: Counter = { counts: 'payment_counts', changes: 'payment_count_changes', key: 'status', rows: 'payments' }
export const EVENT_COUNTER: Counter = { counts: 'event_counts', changes: 'event_count_changes', key: 'type', rows: 'events' }
export const ATTEMPT_COUNTER: Counter = { counts: 'attempt_counts', changes: 'attempt_count_changes', key: 'endpoint_id', rows: 'webhook_attempts' }

/**
 * What rows add to (sign 1) or take from (-1) their accounts' counts: one change an account and value of
 * the counted column, however many rows share them.
 */
export function changesOf<K extends Counter['key']>(
  rows: readonly ({ account_id: string } & Record<K, string>)[], key: K, sign: 1 | -1,
): Array<{ account_id: string, n: number } & Record<K, string>> {
  type Change = { account_id: string, n: number } & Record<K, string>
  // By account, then by value: no key text joined and hashed for each row (query-template.ts, shapeOf).
  const byAccount = new Map<string, Map<string, Change>>()
  const changes: Change[] = []
  for (const row of rows) {
    let ofAccount = byAccount.get(row.account_id)
    if (ofAccount === undefined) byAccount.set(row.account_id, ofAccount = new Map())
    const change = ofAccount.get(row[key])
    if (change) change.n += sign
    else {
      const added = { account_id: row.account_id, [key]: row[key], n: sign } as Change
      ofAccount.set(row[key], added)
      changes.push(added)
    }
  }
  return changes
}

/**
 * The statement that records count changes, run in the transaction that writes (or deletes) the rows.
 *
 * PostgreSQL: change rows, which the fold moves into the counts later, so concurrent writers of one
 * account never wait on each other's counter row. SQLite: added to the counts at once (an upsert). It
 * has one writer at a time, so there is no lock to spread, and folding a second of change rows at once
 * was the slowest group commit of every second: the p99 of `POST /payments` at 64 connections
 * (docs/performance.md, fourteenth pass). Change rows already there (from before, or another process's
 * PostgreSQL-era data) are still folded.
 */
export function recordChanges(db: Executor, counter: Counter, changes: readonly ({ account_id: string, n: number } & Record<string, unknown>)[]): Statement {
  const { counts, changes: table, key } = tablesOf(counter)
  const rows = changes as unknown as readonly Insertable<PaymentCountChangesTable>[]
  if (dialectOf(db) === 'postgres') return compiled(insertRows(db, table, rows))
  // A loop, not flatMap, whose arrays V8 flattened through its runtime (docs/performance.md, twenty-ninth pass).
  const values: unknown[] = []
  for (const change of changes) values.push(change.account_id, change[key], change.n)
  return fromTemplate(db, shapeOf(['count into', counts, changes.length]), values, (slots) =>
    db.insertInto(counts)
      .values(changes.map((_, r) => ({ account_id: slots[r * 3]!, [key]: slots[r * 3 + 1]!, n: slots[r * 3 + 2] as unknown as number }) as { account_id: string, status: string, n: number }))
      .onConflict((oc) => oc.columns(['account_id', key]).doUpdateSet((eb) => ({ n: eb(eb.ref(`${counts}.n`), '+', eb.ref('excluded.n')) }))))
}

/**
 * The counter's tables under the payments' names and columns, which every counter's tables share but
 * for the key's name: one typed query for all of them. The names in the SQL are the counter's own.
 */
function tablesOf(counter: Counter) {
  return {
    counts: counter.counts as 'payment_counts',
    changes: counter.changes as 'payment_count_changes',
    key: counter.key as 'status',
    rows: counter.rows as 'payments',
  }
}

/**
 * Folded counts plus the changes not folded yet, in one statement: one snapshot, so a fold (which deletes
 * changes and adds them to the counts in one transaction) is seen whole or not at all. `key` undefined:
 * every key's.
 */
export async function countFromCounters(db: Executor, counter: Counter, accountId: string, key: string | undefined): Promise<number> {
  const tables = tablesOf(counter)
  // Compiled once per counter and key presence (query-template.ts): every list answer runs one.
  const values = key === undefined ? [accountId] : [accountId, key]
  const query = fromTemplate(db, shapeOf(['count from', tables.counts, key !== undefined]), values, ([account, keySlot]) => {
    const sumOf = (table: 'payment_counts' | 'payment_count_changes') => db.selectFrom(table)
      .select((s) => s.fn.sum<number | string | null>('n').as('n'))
      .where('account_id', '=', account!).$if(keySlot !== undefined, (q) => q.where(tables.key, '=', keySlot!))
    return db.selectNoFrom([sumOf(tables.counts).as('folded'), sumOf(tables.changes).as('changes')])
  })
  const [row] = await readQuery(db, query)
  return Number(row!.folded ?? 0) + Number(row!.changes ?? 0)
}

/** Accounts folded per call at most, each in its own short transaction. */
const FOLD_ACCOUNTS = 100

/**
 * Moves a counter's changes into its counts, an account at a time: the changes it deletes (those
 * committed when its statement started; a concurrent fold finds them gone and skips them) are summed into
 * the counts in the same transaction, in key order, so two folds take counter rows in the same order.
 * Returns the number of changes folded.
 */
export async function foldCounts(db: Database, counter: Counter): Promise<number> {
  const { changes } = tablesOf(counter)
  const accounts = await db.kysely.selectFrom(changes).select('account_id').distinct().limit(FOLD_ACCOUNTS).execute()
  let folded = 0
  for (const { account_id: accountId } of accounts) {
    folded += db.dialect === 'postgres' ? await foldInOneStatement(db, counter, accountId) : await foldInTransaction(db, counter, accountId)
  }
  return folded
}

/**
 * PostgreSQL: the delete, the sums and the upserts as one statement, so the changes (a second of a busy
 * account's writes: thousands) never travel to this process and back (docs/performance.md, fourteenth pass).
 */
async function foldInOneStatement(db: Database, counter: Counter, accountId: string): Promise<number> {
  const key = sql.ref(counter.key)
  const counts = sql.table(counter.counts)
  const result = await sql<{ folded: number }>`with gone as (
      delete from ${sql.table(counter.changes)} where account_id = ${accountId} returning ${key}, n
    ), added as (
      insert into ${counts} (account_id, ${key}, n)
      select ${accountId}, ${key}, sum(n) from gone group by ${key} order by ${key}
      on conflict (account_id, ${key}) do update set n = ${counts}.n + excluded.n
    )
    select count(*) as folded from gone`.execute(db.kysely)
  return Number(result.rows[0]!.folded)
}

/** SQLite (no DELETE in a WITH): the deleted changes are summed here. */
async function foldInTransaction(db: Database, counter: Counter, accountId: string): Promise<number> {
  const { counts, changes, key } = tablesOf(counter)
  return db.kysely.transaction().execute(async (trx) => {
    const deleted = await trx.deleteFrom(changes).where('account_id', '=', accountId).returning([key, 'n']).execute()
    const sums = new Map<string, number>()
    for (const change of deleted) sums.set(change[key], (sums.get(change[key]) ?? 0) + Number(change.n))
    for (const value of [...sums.keys()].sort()) {
      await trx.insertInto(counts).values({ account_id: accountId, [key]: value, n: sums.get(value)! } as { account_id: string, status: string, n: number })
        .onConflict((oc) => oc.columns(['account_id', key]).doUpdateSet((eb) => ({ n: eb(eb.ref(`${counts}.n`), '+', eb.ref('excluded.n')) })))
        .execute()
    }
    return deleted.length
  })
}

/**
 * Retention: deletes up to `limit` of the counted rows created before `before` and takes them off their
 * counts in the same transaction (RETURNING: two processes deleting at once each count only what they
 * deleted); returns how many went.
 */
export async function deleteCountedOlderThan(db: Database, counter: Counter, before: string, limit: number): Promise<number> {
  const { key, rows } = tablesOf(counter)
  return db.kysely.transaction().execute(async (trx) => {
    const gone = await trx.deleteFrom(rows)
      .where('id', 'in', oldestRows(trx, counter, before, limit))
      .returning(['account_id', key])
      .execute()
    if (gone.length > 0) await trx.executeQuery(recordChanges(trx, counter, changesOf(gone, key, -1)))
    return gone.length
  })
}

/**
 * The ids of up to `limit` counted rows created before `before`: retention's search. On PostgreSQL it
 * compares `created_at || ''`, the expression its retention index holds (migration 0015): an index that
 * no list can order by, so the planner never walks it for a list's page.
 */
export function oldestRows(db: Executor, counter: Counter, before: string, limit: number) {
  const { rows } = tablesOf(counter)
  const createdAt = dialectOf(db) === 'postgres' ? sql<string>`${sql.ref('created_at')} || ''` : sql.ref<string>('created_at')
  return db.selectFrom(rows).select('id').where(createdAt, '<', before).limit(limit)
}
