import type { ExpressionBuilder } from 'kysely'
import type { Executor } from '../../db/database.js'
import { checkedOnly } from '../../db/dialect.js'
import { countRows, filteredList, type ListQuery, listRows } from '../../db/paging.js'
import { fromTemplate, shapeOf } from '../../db/query-template.js'
import type { DatabaseSchema, MandatesTable } from '../../db/schema.js'
import type { Window } from '../../lib/paging.js'
import type { MandateStatus } from './schemas.js'

export type MandateRow = MandatesTable

export async function insertMandate(db: Executor, row: MandateRow): Promise<void> {
  await db.insertInto('mandates').values(row).execute()
}

/** The mandate; with `agentId`, only if it is granted to that agent (an agent key sees no other). */
export function findMandate(db: Executor, accountId: string, id: string, agentId?: string): Promise<MandateRow | undefined> {
  return findMandateQuery(db, accountId, id, agentId).executeTakeFirst()
}

export function findMandateQuery(db: Executor, accountId: string, id: string, agentId?: string) {
  const query = db.selectFrom('mandates').selectAll().where('account_id', '=', accountId).where('id', '=', id)
  return agentId === undefined ? query : query.where('agent_id', '=', agentId)
}

export interface HoldRequest {
  accountId: string
  mandateId: string
  amount: number
  currency: string
  now: string
  /** The agent whose key pays: the mandate must be granted to it. Absent for an account key. */
  agentId?: string | undefined
  /**
   * A recurring AP2 mandate pays only if its last payment was made at or before this time (now less one
   * window: ap2/constraints.ts recurrenceFloor). Absent: a recurring mandate pays only once.
   */
  recurrenceFloor?: string | undefined
  /** A single-use mandate's charge succeeded: the same update stores the mandate consumed. */
  consume?: boolean | undefined
  /**
   * The mandate's `updated_at` as read: the hold takes effect only if nothing changed the mandate since,
   * so a single write's rows built from that read (a `mandate.consumed` event) are exact.
   */
  unchangedSince?: string | undefined
}

/**
 * Takes `amount` out of the mandate if, and only if, every rule holds at this instant: one
 * conditional update, so concurrent payments in any number of processes can never overspend the
 * budget or pay a single-use mandate twice. Returns the mandate after the hold, or undefined.
 */
export function hold(trx: Executor, p: HoldRequest): Promise<MandateRow | undefined> {
  return holdQuery(trx, p).returningAll().executeTakeFirst()
}

/**
 * The conditional update of hold(), to run as part of a larger statement. Its terms are one `and` built
 * with one expression builder: Kysely makes a builder (some 6 KB) for every callback, and this runs for
 * every payment.
 */
export function holdQuery(db: Executor, p: HoldRequest) {
  return db.updateTable('mandates')
    .set((eb) => ({
      amount_used: eb('amount_used', '+', p.amount),
      uses_count: eb('uses_count', '+', 1),
      last_payment_at: p.now,
      updated_at: p.now,
      ...(p.consume === true ? { status: 'consumed' as const } : {}),
    }))
    .where((eb) => eb.and([
      eb('id', '=', p.mandateId),
      // Found by its primary key, its account only checked (db/dialect.ts): 30,000 mandates in an account
      // once took payments from 2,500 a second to 500 (docs/performance.md, twenty-first pass).
      eb(checkedOnly('account_id'), '=', p.accountId),
      eb('status', '=', 'active'),
      eb('expires_at', '>', p.now),
      eb.or([eb('not_before', 'is', null), eb('not_before', '<=', p.now)]),
      eb.or([eb('usage', '=', 'multi_use'), eb('uses_count', '=', 0)]),
      eb('currency', '=', p.currency),
      eb('max_amount', '>=', p.amount),
      eb(eb('amount_used', '+', p.amount), '<=', eb.ref('budget_amount')),
      // AP2 terms (migration 0009), null on plain mandates: the least amount, the most uses, one payment per window.
      eb.or([eb('min_amount', 'is', null), eb('min_amount', '<=', p.amount)]),
      eb.or([eb('max_uses', 'is', null), eb('uses_count', '<', eb.ref('max_uses'))]),
      eb.or([
        eb('recurrence_frequency', 'is', null),
        eb('last_payment_at', 'is', null),
        ...(p.recurrenceFloor === undefined ? [] : [eb('last_payment_at', '<=', p.recurrenceFloor)]),
      ]),
      ...(p.unchangedSince === undefined ? [] : [eb('updated_at', '=', p.unchangedSince)]),
      // An agent's key pays only while the agent is active: its key may still be in another process's cache.
      ...(p.agentId === undefined ? [] : [
        eb('agent_id', '=', p.agentId),
        eb.exists(eb.selectFrom('agents').select('agents.id').where('agents.id', '=', p.agentId).where('agents.status', '=', 'active')),
      ]),
    ]))
}

/** findMandateQuery compiled once (db/query-template.ts), for the SQLite group commit's piece. */
export function findMandateStatement(db: Executor, accountId: string, id: string) {
  return fromTemplate<MandateRow>(db, 'find mandate', [accountId, id], ([account, mandate]) => findMandateQuery(db, account!, mandate!))
}

/** The values of a hold; `consume`, a flag, is part of its shape. */
const HOLD_VALUES = ['accountId', 'mandateId', 'amount', 'currency', 'now', 'agentId', 'recurrenceFloor', 'unchangedSince'] as const
// A field added to HoldRequest must be listed above (or be part of the shape), or this fails to compile.
const everyHoldValue: Exclude<keyof HoldRequest, 'consume' | (typeof HOLD_VALUES)[number]> extends never ? true : never = true
void everyHoldValue

/**
 * holdQuery as a template (db/query-template.ts): its shape (which terms it has), its values, and the
 * query built from one slot per value.
 */
export function holdTemplate(db: Executor, p: HoldRequest) {
  const named: Array<(typeof HOLD_VALUES)[number]> = []
  const values: unknown[] = []
  // Which values are present, one bit each, for the shape (query-template.ts, shapeOf).
  let present = 0
  for (let i = 0; i < HOLD_VALUES.length; i++) {
    const key = HOLD_VALUES[i]!
    if (p[key] === undefined) continue
    named.push(key)
    values.push(p[key])
    present |= 1 << i
  }
  return {
    shape: shapeOf(['hold', p.consume === true, present]),
    values,
    build: (slots: readonly string[]) => holdQuery(db, { ...Object.fromEntries(named.map((k, i) => [k, slots[i]])), consume: p.consume } as unknown as HoldRequest),
  }
}

/** holdQuery compiled once per shape, for the SQLite group commit's piece. */
export function holdStatement(db: Executor, p: HoldRequest) {
  const { shape, values, build } = holdTemplate(db, p)
  return fromTemplate(db, shape, values, build)
}

/**
 * Gives back what a failed payment held: its amount, its use, and its place in the recurrence window
 * (the last payment is again the latest that still holds; the failed one is already stored as failed).
 */
export async function release(trx: Executor, mandateId: string, amount: number, now: string): Promise<void> {
  await trx.updateTable('mandates')
    .set((eb) => ({
      amount_used: eb('amount_used', '-', amount),
      uses_count: eb('uses_count', '-', 1),
      last_payment_at: eb.selectFrom('payments').select((p) => p.fn.max('created_at').as('latest'))
        .where('mandate_id', '=', mandateId).where('status', '!=', 'failed'),
      updated_at: now,
    }))
    .where('id', '=', mandateId)
    .execute()
}

/** A single-use mandate whose payment succeeded; undefined if it was not active. */
export function markConsumed(trx: Executor, mandateId: string, now: string): Promise<MandateRow | undefined> {
  return trx.updateTable('mandates').set({ status: 'consumed', updated_at: now })
    .where('id', '=', mandateId).where('status', '=', 'active')
    .returningAll().executeTakeFirst()
}

/** Revokes an active, unexpired mandate; undefined when it is not (or not there). */
export function revoke(trx: Executor, accountId: string, id: string, now: string): Promise<MandateRow | undefined> {
  return trx.updateTable('mandates').set({ status: 'revoked', revoked_at: now, updated_at: now })
    .where('account_id', '=', accountId).where('id', '=', id)
    .where('status', '=', 'active').where('expires_at', '>', now)
    .returningAll().executeTakeFirst()
}

/**
 * Revokes every active, unexpired mandate of the given wishes (one wish's when it became final or was
 * deleted, or one account's lapsed wishes in the expiry sweep); returns them. The same conditional update
 * as revoke(), so a payment's hold and this never both win: whichever takes the mandate's row first
 * decides, and a later hold finds it revoked.
 */
export function revokeForWishes(trx: Executor, accountId: string, wishIds: string[], now: string): Promise<MandateRow[]> {
  if (wishIds.length === 0) return Promise.resolve([])
  return trx.updateTable('mandates').set({ status: 'revoked', revoked_at: now, updated_at: now })
    .where('account_id', '=', accountId).where('wish_id', 'in', wishIds)
    .where('status', '=', 'active').where('expires_at', '>', now)
    .returningAll().execute()
}

/**
 * Brings the deadline of a wish's active mandates forward to the wish's own, so that no mandate
 * outlives its wish (docs/decisions.md): a payment after the wish lapses is refused by the hold's
 * `expires_at` term even before the expiry sweep stores the wish as expired. Returns how many moved.
 */
export async function capExpiryForWish(trx: Executor, accountId: string, wishId: string, expiresAt: string, now: string): Promise<number> {
  const result = await trx.updateTable('mandates').set({ expires_at: expiresAt, updated_at: now })
    .where('account_id', '=', accountId).where('wish_id', '=', wishId)
    .where('status', '=', 'active').where('expires_at', '>', expiresAt)
    .executeTakeFirst()
  return Number(result.numUpdatedRows)
}

/** Stores `expired` on up to `limit` active mandates past their time; returns them. */
export function expireDue(trx: Executor, now: string, limit: number): Promise<MandateRow[]> {
  return trx.updateTable('mandates').set({ status: 'expired', updated_at: now })
    .where('id', 'in', (eb) => eb.selectFrom('mandates').select('id')
      .where('status', '=', 'active').where('expires_at', '<=', now).limit(limit))
    .where('status', '=', 'active')
    .returningAll().execute()
}

function statusFilter(status: MandateStatus, now: string) {
  return (eb: ExpressionBuilder<DatabaseSchema, 'mandates'>) => {
    if (!comparesTime(status)) return eb('status', '=', status)
    if (status === 'active') return eb.and([eb('status', '=', 'active'), eb('expires_at', '>', now)])
    return eb.or([eb('status', '=', 'expired'), eb.and([eb('status', '=', 'active'), eb('expires_at', '<=', now)])])
  }
}

/** Whether statusFilter compares expires_at with the time for this status (otherwise `now` is unused). */
function comparesTime(status: MandateStatus): boolean {
  return status === 'active' || status === 'expired'
}

export interface MandateListFilter {
  accountId: string
  status?: MandateStatus | undefined
  wishId?: string | undefined
  agentId?: string | undefined
  now: string
}

function filtered(db: Executor, filter: MandateListFilter) {
  let query = db.selectFrom('mandates').where('account_id', '=', filter.accountId)
  if (filter.status !== undefined) query = query.where(statusFilter(filter.status, filter.now))
  if (filter.wishId !== undefined) query = query.where('wish_id', '=', filter.wishId)
  if (filter.agentId !== undefined) query = query.where('agent_id', '=', filter.agentId)
  return query
}

export function listMandates(db: Executor, filter: MandateListFilter, window: Window) {
  return listRows(db, mandateList(db, filter), window)
}

export function countMandates(db: Executor, filter: MandateListFilter): Promise<number> {
  return countRows(db, mandateList(db, filter))
}

/**
 * The list's query, compiled once per set of filters (db/paging.ts): the status picks the predicate, so
 * it is part of the shape, and the time is a value only where the predicate compares with it.
 */
function mandateList(db: Executor, filter: MandateListFilter): ListQuery<DatabaseSchema, 'mandates'> {
  const { status, now, ...rest } = filter
  const timed = status !== undefined && comparesTime(status)
  return filteredList(`mandates ${status ?? ''}`, { ...rest, now: timed ? now : undefined }, (slotted) => filtered(db, { ...slotted, status, now: slotted.now! }))
}

/** The account's mandate made from this AP2 open mandate (by its issuer JWT's hash), if any. */
export function findByOpenHash(db: Executor, accountId: string, openHash: string): Promise<Pick<MandateRow, 'id'> | undefined> {
  return db.selectFrom('mandates').select('id').where('account_id', '=', accountId).where('ap2_open_hash', '=', openHash).executeTakeFirst()
}
