import { sql } from 'kysely'
import type { Database, Executor } from './database.js'
import { ATTEMPT_COUNTER, EVENT_COUNTER, PAYMENT_COUNTER } from './counters.js'
import { dialectOf } from './dialect.js'

/**
 * Checks, and repairs, the counters behind `meta.total` against the rows they count: the slotted wish
 * counts (migration 0005) and the folded counters of payments, events and delivery attempts (0012-0014,
 * counters.ts). A count goes wrong only when something changed rows without their counts: a process of
 * a version before the counters, still running during an upgrade, or a hand-made change to the rows
 * (docs/operations.md). `wishpay counts check` and `wishpay counts repair` run this.
 *
 * Each account's counter is read in one transaction that sees one snapshot of the counts, the changes
 * not folded yet and the rows, so a correct count is never reported wrong while writers run: on
 * PostgreSQL a REPEATABLE READ transaction, on SQLite a write transaction (one writer at a time). A
 * repair rebuilds the account's counts from the rows in that same transaction; the changes that writers
 * commit meanwhile stay outside its snapshot and keep counting their own rows.
 */

/** What is counted, and where: each `meta.total` that comes from counters. */
const COUNTED = [
  { name: 'wishes', counts: 'wish_counts', changes: undefined, key: 'status', rows: 'wishes', slotted: true },
  { name: 'payments', ...PAYMENT_COUNTER, slotted: false },
  { name: 'events', ...EVENT_COUNTER, slotted: false },
  { name: 'delivery_attempts', ...ATTEMPT_COUNTER, slotted: false },
] as const

type Counted = typeof COUNTED[number]
export type CountedName = Counted['name']

/** One count that differs from its rows. */
export interface CountDifference {
  account_id: string
  /** The kind of row counted. */
  counter: CountedName
  /** The value counted by: a status, an event type or a webhook endpoint's id. */
  key: string
  /** What `meta.total` reads from the counters (before a repair). */
  counted: number
  /** What counting the rows gives. */
  rows: number
}

export interface RecountResult {
  /** Accounts looked at. */
  accounts: number
  differences: CountDifference[]
  /** True when the differences were repaired. */
  repaired: boolean
}

/** Attempts at one account's counter when PostgreSQL finds a concurrent change to the rows it locks. */
const MAX_ATTEMPTS = 20

/**
 * Every account's counts, or one account's (none when no such account exists), against their rows; with
 * `repair`, rebuilt where they differ.
 */
export async function recount(db: Database, options: { accountId?: string | undefined, repair: boolean }): Promise<RecountResult> {
  const accounts = (await db.kysely.selectFrom('accounts').select('id')
    .$if(options.accountId !== undefined, (q) => q.where('id', '=', options.accountId!))
    .orderBy('id').execute()).map((a) => a.id)
  const differences: CountDifference[] = []
  for (const accountId of accounts) {
    for (const counted of COUNTED) differences.push(...await recountOne(db, counted, accountId, options.repair))
  }
  return { accounts: accounts.length, differences, repaired: options.repair && differences.length > 0 }
}

async function recountOne(db: Database, counted: Counted, accountId: string, repair: boolean): Promise<CountDifference[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await inOneSnapshot(db, (trx) => compareAndRepair(trx, counted, accountId, repair))
    } catch (error) {
      // PostgreSQL: a fold, or a writer, changed a counter row after this snapshot was taken.
      if (!isRetryable(error) || attempt >= MAX_ATTEMPTS) throw error
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt))
    }
  }
}

function inOneSnapshot<T>(db: Database, work: (trx: Executor) => Promise<T>): Promise<T> {
  const transaction = db.kysely.transaction()
  return (db.dialect === 'postgres' ? transaction.setIsolationLevel('repeatable read') : transaction).execute(work)
}

const isRetryable = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code
  // serialization_failure, deadlock_detected
  return code === '40001' || code === '40P01'
}

async function compareAndRepair(trx: Executor, counted: Counted, accountId: string, repair: boolean): Promise<CountDifference[]> {
  const key = sql.ref(counted.key)
  // A repair locks the account's changes, then its counts, in the order a fold takes them, so that a fold
  // waits for the repair instead of deadlocking with it; a check locks nothing.
  const locking = repair && dialectOf(trx) === 'postgres' ? sql` for update` : sql``
  const byKey = new Map<string, { counted: number, rows: number }>()
  const at = (value: string) => byKey.get(value) ?? byKey.set(value, { counted: 0, rows: 0 }).get(value)!
  for (const table of counted.changes === undefined ? [counted.counts] : [counted.changes, counted.counts]) {
    const stored = await sql<{ key: string, n: number | string }>`select ${key} as key, n from ${sql.table(table)}
      where account_id = ${accountId}${locking}`.execute(trx)
    for (const row of stored.rows) at(row.key).counted += Number(row.n)
  }
  const rows = await sql<{ key: string, n: number | string }>`select ${key} as key, count(*) as n from ${sql.table(counted.rows)}
    where account_id = ${accountId} group by ${key}`.execute(trx)
  for (const row of rows.rows) at(row.key).rows += Number(row.n)

  const differences = [...byKey].filter(([, n]) => n.counted !== n.rows).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([value, n]) => ({ account_id: accountId, counter: counted.name, key: value, counted: n.counted, rows: n.rows }))
  if (repair && differences.length > 0) await rebuild(trx, counted, accountId)
  return differences
}

/** The account's counts made again from its rows: one count a key (slot 0 for wishes), no changes left. */
async function rebuild(trx: Executor, counted: Counted, accountId: string): Promise<void> {
  const key = sql.ref(counted.key)
  const counts = sql.table(counted.counts)
  if (counted.changes !== undefined) await sql`delete from ${sql.table(counted.changes)} where account_id = ${accountId}`.execute(trx)
  await sql`delete from ${counts} where account_id = ${accountId}`.execute(trx)
  const slot = counted.slotted ? sql`, slot` : sql``
  const slotValue = counted.slotted ? sql`, 0` : sql``
  // ON CONFLICT: on PostgreSQL a counter row that a writer or a fold inserted after this snapshot fails
  // the transaction as a serialization failure, and the account is recounted.
  await sql`insert into ${counts} (account_id, ${key}${slot}, n)
    select account_id, ${key}${slotValue}, count(*) from ${sql.table(counted.rows)} where account_id = ${accountId} group by account_id, ${key}
    on conflict (account_id, ${key}${slot}) do update set n = ${counts}.n + excluded.n`.execute(trx)
}
