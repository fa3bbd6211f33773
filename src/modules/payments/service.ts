import type { Database, Trx } from '../../db/database.js'
import { inTransaction } from '../../db/transaction.js'
import { errors } from '../../lib/errors.js'
import { listPage, type PageInput } from '../../lib/paging.js'
import { type Clock, toTimestamp } from '../../lib/clock.js'
import { newId } from '../../lib/ids.js'
import type { RequestContext } from '../../lib/request-context.js'
import { recordEvent } from '../events/outbox.js'
import type { EventType } from '../events/types.js'
import * as mandates from '../mandates/repository.js'
import { paymentViolation } from '../mandates/rules.js'
import { enabledEndpoints } from '../webhooks/repository.js'
import { toMandate } from '../mandates/service.js'
import type { ChargeRequest, Processor, SettlementOutcome } from './processors/processor.js'
import { methodRefusal, type PaymentPlan, planPayment, type SettlePayload, toPayment } from './plan.js'
import * as repo from './repository.js'
import { findAgent } from '../agents/repository.js'
import { recordClosedMandate, verifyPaymentMandate } from './ap2.js'
import { loadMandateVerifiers } from '../ap2/open-mandate.js'
import { parentMandateOf, resolveMandate } from './vault-token.js'
import { createSingleWrite } from './single-write.js'
import type { CreatePaymentInput, CreateRefundInput, ListPaymentsInput, Payment, Refund } from './schemas.js'

export { SETTLE_JOB, type SettlePayload, toPayment } from './plan.js'

function toRefund(row: repo.RefundRow): Refund {
  return { id: row.id, payment_id: row.payment_id, amount: row.amount, reason: row.reason, status: 'succeeded', created_at: row.created_at }
}

function chargeRequestOf(row: repo.PaymentRow): ChargeRequest {
  return { paymentId: row.id, amount: row.amount, currency: row.currency, paymentMethod: row.payment_method, protocol: row.protocol_type }
}

export interface PaymentServiceDeps {
  db: Database
  clock: Clock
  processor: Processor
}

export function createPaymentService(deps: PaymentServiceDeps) {
  const { db, clock, processor } = deps

  const emit = (trx: Trx, accountId: string, type: EventType, object: { id: string }, requestId: string | null, at: string) =>
    recordEvent(trx, { accountId, type, object, requestId, createdAt: at })

  /**
   * Holds the amount on the mandate, or answers the first rule it breaks. The conditional update
   * decides; reading the mandate afterwards only names the failure. Should the mandate change between
   * the two so that nothing is broken any more, the hold is simply tried again.
   */
  async function holdOrRefuse(trx: Trx, request: mandates.HoldRequest) {
    for (let attempt = 0; attempt < 3; attempt++) {
      const held = await mandates.hold(trx, request)
      if (held) return held
      const mandate = await mandates.findMandate(trx, request.accountId, request.mandateId)
      const violation = paymentViolation(mandate, request, request.now)
      if (violation) throw errors.payment(violation.code, violation.message, violation.param)
      // The agent was disabled after its key was read from a cache: the key no longer works.
      if (request.agentId !== undefined && (await findAgent(trx, request.accountId, request.agentId))?.status !== 'active') throw errors.invalidApiKey()
    }
    throw errors.payment('mandate_budget_exceeded', 'The mandate cannot take this payment now', 'amount')
  }

  /** A payment reached `succeeded`: a single-use mandate is now consumed. */
  async function afterSuccess(trx: Trx, payment: repo.PaymentRow, mandate: mandates.MandateRow, requestId: string | null, now: string) {
    if (mandate.usage !== 'single_use') return
    const consumed = await mandates.markConsumed(trx, mandate.id, now)
    if (consumed) await emit(trx, payment.account_id, 'mandate.consumed', toMandate(consumed, now), requestId, now)
  }

  /** A payment reached `failed`: what it held of the mandate goes back. */
  async function afterFailure(trx: Trx, payment: repo.PaymentRow, now: string) {
    await mandates.release(trx, payment.mandate_id, payment.amount, now)
    // A vault token's payment held on its parent mandate too.
    if (payment.protocol_type !== 'acp') return
    const parent = await parentMandateOf(trx, payment.mandate_id)
    if (parent !== undefined) await mandates.release(trx, parent, payment.amount, now)
  }

  /**
   * Writes a plan. The hold decides, and is the last write before what depends on it: concurrent
   * payments of one mandate wait on its row lock only from there to commit. A refusal throws, and the
   * writes before it roll back with the transaction.
   */
  async function applyPlan(trx: Trx, plan: PaymentPlan) {
    await recordClosedMandate(trx, plan)
    await repo.insertPaymentWrites(trx, plan)
    const held = await holdOrRefuse(trx, plan.hold)
    if (plan.parentHold) await holdOrRefuse(trx, plan.parentHold)
    if (plan.effect === 'release') await afterFailure(trx, plan.payment, plan.hold.now)
    // The hold stored the single-use mandate consumed; `held` is the row it left.
    if (plan.effect === 'consume') await repo.insertPaymentWrites(trx, plan.consumption(held))
  }

  /** Its event, then what a final status does to the mandate. */
  async function finish(trx: Trx, payment: repo.PaymentRow, outcome: SettlementOutcome, requestId: string | null, now: string) {
    const type = outcome.status === 'succeeded' ? 'payment.succeeded' : 'payment.failed'
    await emit(trx, payment.account_id, type, toPayment(payment), requestId, now)
    if (outcome.status === 'failed') return afterFailure(trx, payment, now)
    const mandate = await mandates.findMandate(trx, payment.account_id, payment.mandate_id)
    if (mandate) await afterSuccess(trx, payment, mandate, requestId, now)
  }

  /**
   * The settlement steps, the one place they are written: the job (settleStep) and
   * POST /payments/{id}/settle (settleNow) both take them. Each is a conditional update with its event,
   * so when both try the same step, it happens once; undefined when the payment was no longer in `from`.
   */
  const settlement = {
    /** pending -> processing. */
    async start(trx: Trx, payment: repo.PaymentRow, requestId: string | null, now: string) {
      const moved = await repo.transition(trx, payment.id, 'pending', { status: 'processing', updated_at: now })
      if (moved) await emit(trx, moved.account_id, 'payment.processing', toPayment(moved), requestId, now)
      return moved
    },
    /** processing -> the processor's outcome, and what that does to the mandate. */
    async conclude(trx: Trx, payment: repo.PaymentRow, outcome: SettlementOutcome, requestId: string | null, now: string) {
      const moved = await repo.transition(trx, payment.id, 'processing', {
        status: outcome.status,
        failure_code: outcome.status === 'failed' ? outcome.failure.code : null,
        failure_message: outcome.status === 'failed' ? outcome.failure.message : null,
        updated_at: now,
      })
      if (moved) await finish(trx, moved, outcome, requestId, now)
      return moved
    },
  }

  return {
    /** The common payment in a single write, or undefined for create() to decide (single-write.ts). */
    createInOneWrite: createSingleWrite(deps),

    /**
     * The general path: the plan (plan.ts) applied through the repositories, in the request's
     * transaction. It decides nothing itself; it only names a refusal the hold makes after the read.
     */
    async create(ctx: RequestContext, input: CreatePaymentInput): Promise<Payment> {
      const unknownMethod = methodRefusal(processor, input.payment_method)
      if (unknownMethod) throw unknownMethod
      if (input.ap2 !== undefined) await loadMandateVerifiers()
      return inTransaction(db, ctx, async (trx) => {
        // A plain read, to refuse early and to learn the mandate's protocol and wish, which never change.
        const { input: resolved, parentMandateId } = await resolveMandate(trx, ctx, input)
        const mandate = await mandates.findMandate(trx, ctx.accountId, resolved.mandate_id)
        const endpoints = await enabledEndpoints(trx, ctx.accountId)
        const ap2 = await verifyPaymentMandate(trx, ctx, input, mandate, clock.now())
        const { plan, refusal } = planPayment({ ctx, input: resolved, mandate, endpoints, processor, now: clock.now(), ap2, parentMandateId })
        if (refusal) throw refusal
        await applyPlan(trx, plan)
        return plan.response
      })
    },

    /**
     * One settlement step of an asynchronous payment (run by the job runner): pending becomes
     * processing, and processing becomes final once settle_at has passed. Returns when to run the
     * next step, or undefined when the payment is final. Each step is a conditional update, so a step
     * that runs twice changes nothing the second time.
     */
    async settleStep(payload: SettlePayload, commit: (work: (trx: Trx) => Promise<Date | undefined>) => Promise<Date | undefined>): Promise<Date | undefined> {
      const payment = await repo.findPaymentById(db.kysely, payload.payment_id)
      if (!payment) return undefined
      if (payment.status === 'pending') {
        return commit(async (trx) => {
          await settlement.start(trx, payment, null, toTimestamp(clock.now()))
          return new Date(payload.settle_at)
        })
      }
      if (payment.status !== 'processing') return undefined
      if (clock.now() < new Date(payload.settle_at)) return new Date(payload.settle_at)
      // Asking the processor may leave the process, so it happens before the transaction opens.
      const outcome = await processor.settle(chargeRequestOf(payment))
      return commit(async (trx) => {
        await settlement.conclude(trx, payment, outcome, null, toTimestamp(clock.now()))
        return undefined
      })
    },

    /**
     * POST /payments/{id}/settle: a sandbox payment still pending or processing settles now, through the
     * job's own steps and to the outcome the processor decides. The row is locked first, so the job or
     * another request settling it at the same time waits, then finds it final (409).
     */
    async settleNow(ctx: RequestContext, id: string): Promise<Payment> {
      if (!processor.sandbox) throw errors.sandboxOnly()
      return inTransaction(db, ctx, async (trx) => {
        const payment = await repo.lockPayment(trx, ctx.accountId, id)
        if (!payment) throw errors.resourceMissing('payment', id)
        const refuse = () => errors.invalidStateTransition(`Only a pending or processing payment can be settled; this one is ${payment.status}`)
        const now = toTimestamp(clock.now())
        const processing = payment.status === 'pending' ? await settlement.start(trx, payment, ctx.requestId, now) : payment
        if (processing?.status !== 'processing') throw refuse()
        // The sandbox decides in the process, so it may be asked inside the transaction (settleStep asks a real one outside).
        const settled = await settlement.conclude(trx, processing, await processor.settle(chargeRequestOf(processing)), ctx.requestId, now)
        if (!settled) throw refuse()
        return toPayment(settled)
      })
    },

    async get(ctx: RequestContext, id: string): Promise<Payment> {
      const row = await repo.findPayment(db.kysely, ctx.accountId, id, ctx.agentId)
      if (!row) throw errors.resourceMissing('payment', id)
      return toPayment(row)
    },

    async list(ctx: RequestContext, input: ListPaymentsInput) {
      const filter = { accountId: ctx.accountId, status: input.status, mandateId: input.mandate_id, wishId: input.wish_id, agentId: ctx.agentId }
      return listPage(input, {
        resource: 'payment',
        find: (id) => repo.findPayment(db.kysely, ctx.accountId, id, ctx.agentId),
        rows: (window) => repo.listPayments(db.kysely, filter, window),
        total: () => repo.countPayments(db.kysely, filter),
        map: toPayment,
      })
    },

    /** Refunds never give budget back to the mandate. */
    async refund(ctx: RequestContext, paymentId: string, input: CreateRefundInput): Promise<Refund> {
      return inTransaction(db, ctx, async (trx) => {
        const nowDate = clock.now()
        const now = toTimestamp(nowDate)
        const refuse = (payment: repo.PaymentRow | undefined, amount: number | undefined) => {
          if (!payment) return errors.resourceMissing('payment', paymentId)
          if (payment.status !== 'succeeded') {
            return errors.payment('payment_not_refundable', `Only a succeeded payment can be refunded; this one is ${payment.status}`)
          }
          const remaining = payment.amount - payment.amount_refunded
          return errors.payment('refund_exceeds_payment', `amount ${amount ?? remaining} is more than the ${remaining} that remains refundable`, 'amount')
        }
        const payment = await repo.findPayment(trx, ctx.accountId, paymentId)
        if (!payment || payment.status !== 'succeeded') throw refuse(payment, input.amount)
        const amount = input.amount ?? payment.amount - payment.amount_refunded
        const updated = await repo.applyRefund(trx, ctx.accountId, paymentId, amount, now)
        if (!updated) throw refuse(await repo.findPayment(trx, ctx.accountId, paymentId), amount)
        const row: repo.RefundRow = {
          id: newId('re', nowDate),
          account_id: ctx.accountId,
          payment_id: paymentId,
          amount,
          reason: input.reason ?? null,
          status: 'succeeded',
          created_at: now,
        }
        await repo.insertRefund(trx, row)
        await emit(trx, ctx.accountId, 'payment.refunded', toPayment(updated), ctx.requestId, now)
        return toRefund(row)
      })
    },

    async listRefunds(ctx: RequestContext, paymentId: string, query: PageInput) {
      const payment = await repo.findPayment(db.kysely, ctx.accountId, paymentId)
      if (!payment) throw errors.resourceMissing('payment', paymentId)
      return listPage(query, {
        resource: 'refund',
        find: (id) => repo.findRefund(db.kysely, ctx.accountId, paymentId, id),
        rows: (window) => repo.listRefunds(db.kysely, ctx.accountId, paymentId, window),
        total: () => repo.countRefunds(db.kysely, ctx.accountId, paymentId),
        map: toRefund,
      })
    },
  }
}

export type PaymentService = ReturnType<typeof createPaymentService>
