import type { EventsTable } from '../../db/schema.js'
import { type JobRow, jobRow, type NewJob } from '../../jobs/queue.js'
import { toTimestamp } from '../../lib/clock.js'
import { newId } from '../../lib/ids.js'
import type { RequestContext } from '../../lib/request-context.js'
import { deliveryJobs, eventRows } from '../events/outbox.js'
import type { EventType } from '../events/types.js'
import type { IdempotencyRecord } from '../idempotency/repository.js'
import type { HoldRequest, MandateRow } from '../mandates/repository.js'
import { paymentViolation } from '../mandates/rules.js'
import type { EndpointRow } from '../webhooks/repository.js'
import type { ChargeOutcome, Processor } from './processors/processor.js'
import type { PaymentRow } from './repository.js'
import type { CreatePaymentInput, Payment } from './schemas.js'

/** The job that moves an asynchronous payment along: pending -> processing -> succeeded | failed. */
export const SETTLE_JOB = 'payment.settle'
export interface SettlePayload { payment_id: string, settle_at: string }

/** The first settlement step of a pending payment: due at once, final after settleAfterMs. */
export function settleJob(paymentId: string, now: Date, settleAfterMs: number): NewJob {
  const payload: SettlePayload = { payment_id: paymentId, settle_at: toTimestamp(new Date(now.getTime() + settleAfterMs)) }
  return { type: SETTLE_JOB, payload: { ...payload }, runAt: now }
}

export function toPayment(row: PaymentRow): Payment {
  return {
    id: row.id,
    mandate_id: row.mandate_id,
    wish_id: row.wish_id,
    amount: row.amount,
    currency: row.currency,
    status: row.status as Payment['status'],
    protocol_type: row.protocol_type as Payment['protocol_type'],
    payment_method: row.payment_method,
    amount_refunded: row.amount_refunded,
    failure_code: row.failure_code,
    failure_message: row.failure_message,
    metadata: JSON.parse(row.metadata) as Payment['metadata'],
    created_at: row.created_at,
    updated_at: row.updated_at,
  }
}

/** The row of a new payment, as the processor's charge() decided it. */
export function paymentRow(id: string, accountId: string, input: CreatePaymentInput, mandate: MandateRow, outcome: ChargeOutcome, now: string): PaymentRow {
  return {
    id,
    account_id: accountId,
    mandate_id: mandate.id,
    wish_id: mandate.wish_id,
    amount: input.amount,
    currency: input.currency,
    status: outcome.status,
    protocol_type: mandate.protocol,
    payment_method: input.payment_method,
    amount_refunded: 0,
    failure_code: outcome.status === 'failed' ? outcome.failure.code : null,
    failure_message: outcome.status === 'failed' ? outcome.failure.message : null,
    metadata: JSON.stringify(input.metadata ?? {}),
    created_at: now,
    updated_at: now,
  }
}

/** Every write of a payment, decided before the first one is made. */
export interface PaymentPlan {
  /** Must take effect, or nothing else may. */
  hold: HoldRequest
  payment: PaymentRow
  events: EventsTable[]
  /** Webhook deliveries, and the settlement of a pending charge. */
  jobs: JobRow[]
  record: IdempotencyRecord
}

export interface PlanInput {
  ctx: Pick<RequestContext, 'accountId' | 'requestId'>
  input: CreatePaymentInput
  /** As last read; the hold decides for good. */
  mandate: MandateRow | undefined
  endpoints: Pick<EndpointRow, 'id' | 'events'>[]
  processor: Processor
  now: Date
  /** The idempotency record that answers with this payment. */
  recordOf(payment: Payment): IdempotencyRecord
}

/**
 * Plans a payment for one write (single-write.ts): a multi-use mandate that allows it, as last read,
 * and a charge that succeeds or is pending. Anything else is undefined and left to the general path
 * (service.ts), which names refusals and handles declined charges and single-use mandates.
 */
export function planPayment(p: PlanInput): PaymentPlan | undefined {
  const { ctx, input, mandate, processor } = p
  if (!processor.paymentMethods.includes(input.payment_method)) return undefined
  const now = toTimestamp(p.now)
  const hold = { accountId: ctx.accountId, mandateId: input.mandate_id, amount: input.amount, currency: input.currency, now }
  if (!mandate || mandate.usage !== 'multi_use' || paymentViolation(mandate, hold, now)) return undefined
  const id = newId('pay', p.now)
  const outcome = processor.charge({ paymentId: id, amount: input.amount, currency: input.currency, paymentMethod: input.payment_method, protocol: mandate.protocol })
  if (outcome.status === 'failed') return undefined
  const payment = paymentRow(id, ctx.accountId, input, mandate, outcome, now)
  const response = toPayment(payment)
  const event = (type: EventType) => ({ accountId: ctx.accountId, type, object: response, requestId: ctx.requestId, createdAt: now })
  const events = eventRows(outcome.status === 'succeeded' ? [event('payment.created'), event('payment.succeeded')] : [event('payment.created')])
  const jobs = deliveryJobs(events, p.endpoints)
  if (outcome.status === 'pending') {
    jobs.push(jobRow(settleJob(id, p.now, outcome.settleAfterMs), p.now))
  }
  return { hold, payment, events, jobs, record: p.recordOf(response) }
}
