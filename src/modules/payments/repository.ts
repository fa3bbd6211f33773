import { type CompiledQuery, type Insertable, type Kysely, sql } from 'kysely'
import type { Database, Executor } from '../../db/database.js'
import { checkedOnly, forUpdate, rowToJson } from '../../db/dialect.js'
import { countRows, filteredList, type ListQuery, listRows } from '../../db/paging.js'
import { compilable, fromTemplate, insertRows, shapeOf, type ShapePart } from '../../db/query-template.js'
import { batchedLookup } from '../../db/batched-lookup.js'
import { countFromCounters, EVENT_COUNTER, foldCounts, PAYMENT_COUNTER, recordChanges } from '../../db/counters.js'
import { reusableQuery } from '../../db/reusable-query.js'
import { addInsertSteps, insertAfter, type InsertStep } from '../../db/pg-statement.js'
import type { DatabaseSchema, EventsTable, PaymentCountChangesTable, PaymentsTable, RefundsTable } from '../../db/schema.js'
import { insertJobs, type JobRow } from '../queue/repository.js'
import type { IdempotencyRecord } from '../idempotency/repository.js'
import type { Window } from '../../lib/paging.js'
import { countsOfEvents } from '../events/repository.js'
import * as mandates from '../mandates/repository.js'
import type { PaymentPlan } from './plan.js'
import type { PaymentStatus } from './schemas.js'

export type PaymentRow = PaymentsTable
export type RefundRow = RefundsTable

/** A payment's planned rows (plan.ts): the payment when there is one, its events, their jobs. */
export async function insertPaymentWrites(db: Executor, rows: { payment?: PaymentRow, events: EventsTable[], jobs: JobRow[] }): Promise<void> {
  if (rows.payment) {
    await db.insertInto('payments').values(rows.payment).execute()
    await db.executeQuery(recordChanges(db, PAYMENT_COUNTER, countsOfNew(rows.payment)))
  }
  if (rows.events.length > 0) {
    await db.insertInto('events').values(rows.events).execute()
    await db.executeQuery(recordChanges(db, EVENT_COUNTER, countsOfEvents(rows.events)))
  }
  await insertJobs(db, rows.jobs)
}

// GET /payments/:id runs these on every request. Each finds the payment by its primary key alone and only
// checks its account (and its mandate's agent): given both, a plan made while the table was small costed
// the account's (account_id, …, id) indexes like the key, and, kept as the table grew, walked every payment
// of the account for each key (docs/performance.md, twenty-first pass). The batched form checks the
// account outside its LIMITed subquery (PostgreSQL does not push a condition into one), the others through
// checkedOnly (db/dialect.ts). Same for the mandate below.
const paymentOfAccount = batchedLookup<PaymentRow, [string, string]>(['account_id', 'id'],
  (db, accountId, id) => db.selectFrom('payments').selectAll().where('id', '=', id).where(checkedOnly('account_id'), '=', accountId),
  (keys) => sql<PaymentRow & { i: number }>`select q.i, p.* from ${keys}
    cross join lateral (select * from payments where payments.id = q.id limit 1) p
    where p.account_id = q.account_id`)
// The mandate's agent is read by the mandate's key: `mandate_id in (the agent's mandates)` let a generic plan
// scan an index of every mandate for the agent (twenty-second pass).
const paymentOfAgent = reusableQuery<PaymentRow, [string, string, string]>((db, accountId, id, agentId) =>
  db.selectFrom('payments').selectAll().where('id', '=', id).where(checkedOnly('account_id'), '=', accountId)
    .where((eb) => eb(eb.selectFrom('mandates').select('mandates.agent_id').whereRef('mandates.id', '=', 'payments.mandate_id'), '=', agentId)))
const paymentById = reusableQuery<PaymentRow, [string]>((db, id) => db.selectFrom('payments').selectAll().where('id', '=', id))

/** The payment; with `agentId`, only if it was made on a mandate granted to that agent. */
export async function findPayment(db: Executor, accountId: string, id: string, agentId?: string): Promise<PaymentRow | undefined> {
  const rows = agentId === undefined ? await paymentOfAccount(db, accountId, id) : await paymentOfAgent(db, accountId, id, agentId)
  return rows[0]
}

export async function findPaymentById(db: Executor, id: string): Promise<PaymentRow | undefined> {
  return (await paymentById(db, id))[0]
}

/**
 * The account's payment, its row locked until the transaction ends (PostgreSQL; SQLite has one writer):
 * whoever else settles it at the same time waits, then finds what this transaction left.
 */
export function lockPayment(trx: Executor, accountId: string, id: string): Promise<PaymentRow | undefined> {
  return forUpdate(trx, trx.selectFrom('payments').selectAll().where('account_id', '=', accountId).where('id', '=', id)).executeTakeFirst()
}

/**
 * Moves a payment from one status to another, only if it is still in `from`: a settlement step
 * that runs twice changes the payment once.
 */
export async function transition(
  trx: Executor,
  id: string,
  from: PaymentStatus,
  changes: Partial<Pick<PaymentRow, 'status' | 'failure_code' | 'failure_message' | 'updated_at'>>,
): Promise<PaymentRow | undefined> {
  const moved = await trx.updateTable('payments').set(changes).where('id', '=', id).where('status', '=', from).returningAll().executeTakeFirst()
  if (moved) await countMove(trx, moved.account_id, from, moved.status)
  return moved
}

/**
 * Adds a refund to a succeeded payment if it fits what remains, in one conditional update, so
 * concurrent refunds can never refund more than was paid. The payment becomes `refunded` when
 * nothing remains.
 */
export async function applyRefund(trx: Executor, accountId: string, id: string, amount: number, now: string): Promise<PaymentRow | undefined> {
  const updated = await trx.updateTable('payments')
    .set((eb) => ({
      amount_refunded: eb('amount_refunded', '+', amount),
      status: eb.case().when(eb(eb('amount_refunded', '+', amount), '=', eb.ref('amount'))).then('refunded').else(eb.ref('status')).end(),
      updated_at: now,
    }))
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where('status', '=', 'succeeded')
    .where((eb) => eb(eb('amount_refunded', '+', amount), '<=', eb.ref('amount')))
    .returningAll()
    .executeTakeFirst()
  if (updated) await countMove(trx, accountId, 'succeeded', updated.status)
  return updated
}

export async function insertRefund(db: Executor, row: RefundRow): Promise<void> {
  await db.insertInto('refunds').values(row).execute()
}

export interface PaymentListFilter {
  accountId: string
  status?: PaymentStatus | undefined
  mandateId?: string | undefined
  wishId?: string | undefined
  /** Only the payments of mandates granted to this agent (an agent key's own payments). */
  agentId?: string | undefined
}

/**
 * The ids of the account's mandates granted to an agent: its payments are theirs. By account and agent,
 * the index's leading columns: by agent alone, PostgreSQL scanned the whole index (twenty-second pass).
 */
const mandatesOfAgent = (db: Executor, accountId: string, agentId: string) =>
  db.selectFrom('mandates').select('id').where('account_id', '=', accountId).where('agent_id', '=', agentId)

function filtered(db: Executor, filter: PaymentListFilter) {
  let query = db.selectFrom('payments').where('account_id', '=', filter.accountId)
  if (filter.agentId !== undefined) query = query.where('mandate_id', 'in', mandatesOfAgent(db, filter.accountId, filter.agentId))
  if (filter.status !== undefined) query = query.where('status', '=', filter.status)
  if (filter.mandateId !== undefined) query = query.where('mandate_id', '=', filter.mandateId)
  if (filter.wishId !== undefined) query = query.where('wish_id', '=', filter.wishId)
  return query
}

export function listPayments(db: Executor, filter: PaymentListFilter, window: Window) {
  return listRows(db, paymentList(db, filter), window)
}

/** The list's query, compiled once per set of filters (db/paging.ts). */
function paymentList(db: Executor, filter: PaymentListFilter): ListQuery<DatabaseSchema, 'payments'> {
  return filteredList('payments', filter, (slotted) => filtered(db, slotted))
}

/**
 * The number of payments a list with this filter matches. By account and status alone, from the
 * counters (below), whatever the account's size; filtered by mandate, wish or agent, by counting that
 * mandate's, wish's or agent's payments through their indexes.
 */
export async function countPayments(db: Executor, filter: PaymentListFilter): Promise<number> {
  if (filter.mandateId === undefined && filter.wishId === undefined && filter.agentId === undefined) {
    return countFromCounters(db, PAYMENT_COUNTER, filter.accountId, filter.status)
  }
  return countRows(db, paymentList(db, filter))
}

// ---------------------------------------------------------------- counts (migration 0012)

type CountChange = Insertable<PaymentCountChangesTable>

/** What a new payment adds to its account's counts. */
export const countsOfNew = (payment: Pick<PaymentRow, 'account_id' | 'status'>): CountChange[] => [{ account_id: payment.account_id, status: payment.status, n: 1 }]

/** Records a payment's move between statuses in the counts, in the transaction that moves it. */
async function countMove(trx: Executor, accountId: string, from: PaymentStatus, to: string): Promise<void> {
  if (from === to) return
  await trx.executeQuery(recordChanges(trx, PAYMENT_COUNTER, [{ account_id: accountId, status: from, n: -1 }, { account_id: accountId, status: to, n: 1 }]))
}

/** Moves the payments' count changes into payment_counts (db/counters.ts); the periodic fold's work. */
export function foldPaymentCounts(db: Database): Promise<number> {
  return foldCounts(db, PAYMENT_COUNTER)
}

export function listRefunds(db: Executor, accountId: string, paymentId: string, window: Window) {
  return listRows(db, refundList(db, accountId, paymentId), window)
}

/** The list's query, compiled once (db/paging.ts). */
function refundList(db: Executor, accountId: string, paymentId: string): ListQuery<DatabaseSchema, 'refunds'> {
  return filteredList('refunds', { accountId, paymentId }, (slotted) =>
    db.selectFrom('refunds').where('account_id', '=', slotted.accountId).where('payment_id', '=', slotted.paymentId))
}

/** A refund of this payment (a refund list's cursor). */
export function findRefund(db: Executor, accountId: string, paymentId: string, id: string): Promise<RefundRow | undefined> {
  return db.selectFrom('refunds').selectAll().where('account_id', '=', accountId).where('payment_id', '=', paymentId).where('id', '=', id).executeTakeFirst()
}

export function countRefunds(db: Executor, accountId: string, paymentId: string): Promise<number> {
  return countRows(db, refundList(db, accountId, paymentId))
}

// ---------------------------------------------------------------- the single write (single-write.ts)

/** The account's enabled webhook endpoints, compiled once (db/query-template.ts) for the SQLite group commit. */
export function enabledEndpointsStatement(db: Executor, accountId: string) {
  return fromTemplate<{ id: string, events: string }>(db, 'enabled endpoints', [accountId], ([account]) =>
    db.selectFrom('webhook_endpoints').select(['id', 'events']).where('account_id', '=', account!).where('status', '=', 'enabled'))
}

/**
 * A plan's payment, events and jobs as statements, to run in order in a group commit (SQLite). An event or
 * a job a statement: inside a transaction SQLite gives an insert of several rows a statement journal, a
 * copy of every page it changes, which cost more than the statements it saves (docs/performance.md,
 * thirtieth pass). The count changes stay one statement: their pages are one or two.
 */
export function planWriteQueries(db: Executor, plan: Pick<PaymentPlan, 'payment' | 'events' | 'jobs'>) {
  const queries = [insertRows(db, 'payments', [plan.payment]), recordChanges(db, PAYMENT_COUNTER, countsOfNew(plan.payment))]
  for (const event of plan.events) queries.push(insertRows(db, 'events', [event]))
  queries.push(recordChanges(db, EVENT_COUNTER, countsOfEvents(plan.events)))
  for (const job of plan.jobs) queries.push(insertRows(db, 'jobs', [job]))
  return queries
}

type MandateAndEndpoints = { mandate: mandates.MandateRow | null, endpoints: { id: string, events: string }[] | null }
const enabledEndpointsJson = sql<{ id: string, events: string }[]>`coalesce(json_agg(json_build_object('id', id, 'events', events)), '[]'::json)`

/** The mandate and the account's enabled webhook endpoints, in one round trip (PostgreSQL). */
const mandateAndEndpoints = batchedLookup<MandateAndEndpoints, [string, string]>(['account_id', 'mandate_id'],
  (db, accountId, mandateId) => db.selectNoFrom((eb) => [
    eb.selectFrom('mandates').select(rowToJson<mandates.MandateRow>('mandates').as('mandate'))
      .where('account_id', '=', accountId).where('id', '=', mandateId)
      .as('mandate'),
    eb.selectFrom('webhook_endpoints')
      .select(enabledEndpointsJson.as('endpoints'))
      .where('account_id', '=', accountId).where('status', '=', 'enabled')
      .as('endpoints'),
  ]),
  (keys) => sql<MandateAndEndpoints & { i: number }>`select q.i,
    (select row_to_json(m) from (select * from mandates where mandates.id = q.mandate_id limit 1) m where m.account_id = q.account_id) as mandate,
    (select ${enabledEndpointsJson} from webhook_endpoints where webhook_endpoints.account_id = q.account_id and webhook_endpoints.status = 'enabled') as endpoints
    from ${keys}`)

export async function readForPayment(db: Executor, accountId: string, mandateId: string) {
  const [row] = await mandateAndEndpoints(db, accountId, mandateId)
  return { mandate: row?.mandate ?? undefined, endpoints: row?.endpoints ?? [] }
}

/**
 * The plan as one statement, so one transaction and one round trip. The hold decides: the idempotency
 * record is inserted only if it took effect, and the rest only if the record was. A record under the
 * key fails the insert with a unique violation (its conflict rule, idempotency/repository.ts), and with
 * it the whole statement. PostgreSQL only (SQLite runs planWriteQueries), so its count changes are
 * change rows, as db/counters.ts recordChanges writes them there. Compiled once per shape (the hold's
 * terms, each table's rows and their columns), so that PostgreSQL can prepare it (db/prepared-statements.ts).
 */
export function writePlanStatement(kysely: Kysely<DatabaseSchema>, plan: PaymentPlan, record: IdempotencyRecord): CompiledQuery<{ saved: number }> {
  const hold = mandates.holdTemplate(kysely, plan.hold)
  const steps: InsertStep[] = []
  addInsertSteps(steps, 'idempotency_keys', [record], 'held')
  addInsertSteps(steps, 'payments', [plan.payment], 'saved')
  addInsertSteps(steps, 'payment_count_changes', countsOfNew(plan.payment), 'saved')
  addInsertSteps(steps, 'events', plan.events, 'saved')
  addInsertSteps(steps, 'event_count_changes', countsOfEvents(plan.events), 'saved')
  addInsertSteps(steps, 'jobs', plan.jobs, 'saved')
  // Plain loops and short shapes: the spreads, flatMaps and joined column names they replace went largely
  // through V8's runtime, with the rest about 110,000 instructions a payment (docs/performance.md, twenty-ninth pass).
  const parts: ShapePart[] = ['write plan', hold.shape]
  const values: unknown[] = [...hold.values]
  for (const step of steps) {
    parts.push(step.shape)
    for (const value of step.values) values.push(value)
  }
  return fromTemplate(kysely, shapeOf(parts), values, (slots) => {
    let next = hold.values.length
    const [saved, ...rest] = steps.map(({ table, after, columns, values, slotted }) =>
      insertAfter(table, columns, slotted(slots.slice(next, next += values.length)), after))
    return compilable(kysely, sql<{ saved: number }>`with ${sql.join([
      sql`held as (${hold.build(slots.slice(0, hold.values.length)).returning('id')})`,
      sql`saved as (${saved} returning 1)`,
      ...rest.map((step, i) => sql`${sql.id(`${steps[i + 1]!.table}_written_${i + 1}`)} as (${step})`),
    ])} select (select count(*) from saved) as saved`)
  })
}
