import type { Database, Executor } from '../../db/database.js'
import { inTransaction } from '../../db/transaction.js'
import { errors, FieldErrors } from '../../lib/errors.js'
import { pageOf } from '../../lib/paging.js'
import { type Clock, toTimestamp } from '../../lib/clock.js'
import { toMinorUnits } from '../../lib/currency.js'
import { newId } from '../../lib/ids.js'
import type { RequestContext } from '../../lib/request-context.js'
import { recordEvent, recordEvents } from '../events/outbox.js'
import { findAgent } from '../agents/repository.js'
import { findWishForUpdate } from '../wishes/repository.js'
import { effectiveStatus as wishStatus, isTerminal, type WishStatus } from '../wishes/transitions.js'
import * as repo from './repository.js'
import { effectiveMandateStatus } from './rules.js'
import type { CreateMandateInput, ListMandatesInput, Mandate } from './schemas.js'

export function toMandate(row: repo.MandateRow, now: string): Mandate {
  return {
    id: row.id,
    protocol: row.protocol as Mandate['protocol'],
    status: effectiveMandateStatus(row, now),
    wish_id: row.wish_id,
    agent_id: row.agent_id,
    currency: row.currency,
    max_amount: row.max_amount,
    budget_amount: row.budget_amount,
    amount_used: row.amount_used,
    usage: row.usage as Mandate['usage'],
    uses_count: row.uses_count,
    expires_at: row.expires_at,
    not_before: row.not_before,
    metadata: JSON.parse(row.metadata) as Mandate['metadata'],
    created_at: row.created_at,
    updated_at: row.updated_at,
    revoked_at: row.revoked_at,
  }
}

/**
 * Revokes the active mandates of wishes that became final (cancelled, fulfilled, expired) or were
 * deleted, in the transaction that made the wish so, each with the mandate.revoked event the revoke
 * route writes. Every later payment on them is refused (mandate_revoked) by the hold's own condition.
 */
export async function revokeMandatesOfWishes(trx: Executor, accountId: string, wishIds: string[], requestId: string | null, now: string): Promise<Mandate[]> {
  const rows = await repo.revokeForWishes(trx, accountId, wishIds, now)
  if (rows.length === 0) return []
  const revoked = rows.sort((a, b) => (a.id < b.id ? -1 : 1)).map((row) => toMandate(row, now))
  await recordEvents(trx, revoked.map((mandate) => ({ accountId, type: 'mandate.revoked' as const, object: mandate, requestId, createdAt: now })))
  return revoked
}

export function createMandateService(deps: { db: Database, clock: Clock }) {
  const { db, clock } = deps

  return {
    async create(ctx: RequestContext, input: CreateMandateInput): Promise<Mandate> {
      const problems = new FieldErrors()
      const expiresAt = new Date(input.expires_at)
      if (!(expiresAt > clock.now())) problems.invalid('expires_at', 'expires_at must be in the future')
      const notBefore = input.not_before ? new Date(input.not_before) : null
      if (notBefore && !(notBefore < expiresAt)) problems.invalid('not_before', 'not_before must be before expires_at')
      problems.throwIfAny()

      return inTransaction(db, ctx, async (trx) => {
        let currency = input.currency
        const budgetAmount = input.budget_amount ?? input.max_amount
        let deadline = toTimestamp(expiresAt)
        // The wish is locked until commit: a cancel, delete or budget cut waits for this mandate and
        // then revokes it (or sees its budget), and this check sees the wish as last committed.
        const wish = input.wish_id === undefined ? undefined : await findWishForUpdate(trx, ctx.accountId, input.wish_id)
        // Time is read once the wish is locked, so that timestamps follow the order the lock imposes.
        const nowDate = clock.now()
        const now = toTimestamp(nowDate)
        if (input.wish_id !== undefined) {
          const status = wish ? wishStatus(wish.status as WishStatus, wish.expires_at, now) : undefined
          if (!wish || isTerminal(status!)) {
            throw errors.payment('wish_not_usable', wish ? `The wish is ${status}` : `No such wish: '${input.wish_id}'`, 'wish_id')
          }
          if (wish.protocol !== input.protocol) {
            throw errors.payment('protocol_mismatch', `The wish uses ${wish.protocol}; the mandate must too`, 'protocol')
          }
          if (wish.budget_currency !== null) {
            if (currency !== undefined && currency !== wish.budget_currency) {
              throw errors.payment('currency_mismatch', `The wish's budget is in ${wish.budget_currency}`, 'currency')
            }
            currency = wish.budget_currency
            if (wish.budget_max !== null && budgetAmount > toMinorUnits(wish.budget_max, currency)) {
              throw errors.payment('wish_budget_exceeded',
                `budget_amount exceeds the wish's budget of ${wish.budget_max} ${currency} (${toMinorUnits(wish.budget_max, currency)} in minor units)`,
                'budget_amount')
            }
          }
          // A mandate never outlives its wish (docs/decisions.md): its deadline is the earlier of the two.
          if (wish.expires_at !== null && wish.expires_at < deadline) {
            deadline = wish.expires_at
            if (notBefore && !(toTimestamp(notBefore) < deadline)) {
              throw errors.parameterInvalid('not_before', `not_before must be before the wish's expires_at (${deadline}), which is also the mandate's`)
            }
          }
        }
        if (input.agent_id !== undefined) {
          const agent = await findAgent(trx, ctx.accountId, input.agent_id)
          if (!agent || agent.status !== 'active') {
            throw errors.payment('agent_not_usable', agent ? 'The agent is disabled' : `No such agent: '${input.agent_id}'`, 'agent_id')
          }
        }
        const row: repo.MandateRow = {
          id: newId('mdt', nowDate),
          account_id: ctx.accountId,
          protocol: input.protocol,
          status: 'active',
          wish_id: input.wish_id ?? null,
          agent_id: input.agent_id ?? null,
          currency: currency ?? 'USD',
          max_amount: input.max_amount,
          budget_amount: budgetAmount,
          amount_used: 0,
          usage: input.usage,
          uses_count: 0,
          expires_at: deadline,
          not_before: notBefore ? toTimestamp(notBefore) : null,
          metadata: JSON.stringify(input.metadata ?? {}),
          created_at: now,
          updated_at: now,
          revoked_at: null,
        }
        const mandate = toMandate(row, now)
        await repo.insertMandate(trx, row)
        await recordEvent(trx, { accountId: ctx.accountId, type: 'mandate.created', object: mandate, requestId: ctx.requestId, createdAt: now })
        return mandate
      })
    },

    async get(ctx: RequestContext, id: string): Promise<Mandate> {
      const row = await repo.findMandate(db.kysely, ctx.accountId, id, ctx.agentId)
      if (!row) throw errors.resourceMissing('mandate', id)
      return toMandate(row, toTimestamp(clock.now()))
    },

    async list(ctx: RequestContext, input: ListMandatesInput) {
      const now = toTimestamp(clock.now())
      // An agent key lists only the mandates granted to its agent, whatever agent_id it asks for.
      const agentId = ctx.agentId ?? input.agent_id
      const filter = { accountId: ctx.accountId, status: input.status, wishId: input.wish_id, now, agentId }
      if (ctx.agentId !== undefined && input.agent_id !== undefined && input.agent_id !== ctx.agentId) {
        return { data: [], meta: { total: 0, ...pageOf(input) } }
      }
      const page = pageOf(input)
      const [rows, total] = await Promise.all([repo.listMandates(db.kysely, filter, page), repo.countMandates(db.kysely, filter)])
      return { data: rows.map((row) => toMandate(row, now)), meta: { total, ...page } }
    },

    async revoke(ctx: RequestContext, id: string): Promise<Mandate> {
      const now = toTimestamp(clock.now())
      return inTransaction(db, ctx, async (trx) => {
        const revoked = await repo.revoke(trx, ctx.accountId, id, now)
        if (!revoked) {
          const row = await repo.findMandate(trx, ctx.accountId, id)
          if (!row) throw errors.resourceMissing('mandate', id)
          throw errors.invalidStateTransition(`The mandate is ${effectiveMandateStatus(row, now)}; only an active mandate can be revoked`)
        }
        const mandate = toMandate(revoked, now)
        await recordEvent(trx, { accountId: ctx.accountId, type: 'mandate.revoked', object: mandate, requestId: ctx.requestId, createdAt: now })
        return mandate
      })
    },
  }
}

export type MandateService = ReturnType<typeof createMandateService>
