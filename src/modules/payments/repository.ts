import type { Executor } from '../../db/database.js'
import type { EventsTable, PaymentsTable, RefundsTable } from '../../db/schema.js'
import { insertJobs, type JobRow } from '../queue/repository.js'
import type { PaymentStatus } from './schemas.js'

export type PaymentRow = PaymentsTable
export type RefundRow = RefundsTable

export async function insertPayment(db: Executor, row: PaymentRow): Promise<void> {
  await db.insertInto('payments').values(row).execute()
}

/** A payment's planned rows (plan.ts): the payment when there is one, its events, their jobs. */
export async function insertPaymentWrites(db: Executor, rows: { payment?: PaymentRow, events: EventsTable[], jobs: JobRow[] }): Promise<void> {
  if (rows.payment) await db.insertInto('payments').values(rows.payment).execute()
  if (rows.events.length > 0) await db.insertInto('events').values(rows.events).execute()
  await insertJobs(db, rows.jobs)
}

export function findPayment(db: Executor, accountId: string, id: string): Promise<PaymentRow | undefined> {
  return db.selectFrom('payments').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
}

export function findPaymentById(db: Executor, id: string): Promise<PaymentRow | undefined> {
  return db.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirst()
}

/**
 * Moves a payment from one status to another, only if it is still in `from`: a settlement step
 * that runs twice changes the payment once.
 */
export function transition(
  trx: Executor,
  id: string,
  from: PaymentStatus,
  changes: Partial<Pick<PaymentRow, 'status' | 'failure_code' | 'failure_message' | 'updated_at'>>,
): Promise<PaymentRow | undefined> {
  return trx.updateTable('payments').set(changes).where('id', '=', id).where('status', '=', from).returningAll().executeTakeFirst()
}

/**
 * Adds a refund to a succeeded payment if it fits what remains, in one conditional update, so
 * concurrent refunds can never refund more than was paid. The payment becomes `refunded` when
 * nothing remains.
 */
export function applyRefund(trx: Executor, accountId: string, id: string, amount: number, now: string): Promise<PaymentRow | undefined> {
  return trx.updateTable('payments')
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
}

export async function insertRefund(db: Executor, row: RefundRow): Promise<void> {
  await db.insertInto('refunds').values(row).execute()
}

export interface PaymentListFilter {
  accountId: string
  status?: PaymentStatus | undefined
  mandateId?: string | undefined
  wishId?: string | undefined
}

function filtered(db: Executor, filter: PaymentListFilter) {
  let query = db.selectFrom('payments').where('account_id', '=', filter.accountId)
  if (filter.status !== undefined) query = query.where('status', '=', filter.status)
  if (filter.mandateId !== undefined) query = query.where('mandate_id', '=', filter.mandateId)
  if (filter.wishId !== undefined) query = query.where('wish_id', '=', filter.wishId)
  return query
}

export function listPayments(db: Executor, filter: PaymentListFilter, page: { limit: number, offset: number }) {
  return filtered(db, filter).selectAll()
    .orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute()
}

export async function countPayments(db: Executor, filter: PaymentListFilter): Promise<number> {
  const row = await filtered(db, filter).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  return Number(row.n)
}

export function listRefunds(db: Executor, accountId: string, paymentId: string, page: { limit: number, offset: number }) {
  return db.selectFrom('refunds').selectAll()
    .where('account_id', '=', accountId).where('payment_id', '=', paymentId)
    .orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute()
}

export async function countRefunds(db: Executor, accountId: string, paymentId: string): Promise<number> {
  const row = await db.selectFrom('refunds').select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId).where('payment_id', '=', paymentId).executeTakeFirstOrThrow()
  return Number(row.n)
}
