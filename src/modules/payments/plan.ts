import type { EventsTable } from '../../db/schema.js'
import { type JobRow, jobRow, type NewJob } from '../queue/repository.js'
import { toTimestamp } from '../../lib/clock.js'
import { type AppError, errors } from '../../lib/errors.js'
import { newId } from '../../lib/ids.js'
import type { RequestContext } from '../../lib/request-context.js'
import { deliveryJobs, type EventInput, eventRows } from '../events/outbox.js'
import type { EventType } from '../events/types.js'
import type { HoldRequest, MandateRow } from '../mandates/repository.js'
import { paymentViolation } from '../mandates/rules.js'
import { toMandate } from '../mandates/service.js'
import type { EndpointRow } from '../webhooks/repository.js'
import type { ChargeOutcome, Processor } from './processors/processor.js'
import { type Merchant, type PaymentInstrument, recurrenceFloor } from '../ap2/constraints.js'
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
    ap2: row.ap2 === null ? null : publicAp2(JSON.parse(row.ap2) as PaymentAp2Record),
  }
}

/** What a payment made with an AP2 closed mandate stores of it (payments.ap2). */
export interface PaymentAp2Record {
  /** base64url SHA-256 of the closed mandate as presented: the receipt's `reference`. */
  reference: string
  /** base64url SHA-256 of the closed mandate's signed JWT: the key that makes it pay once (ap2_closed_mandates). */
  replay_key: string
  nonce: string
  transaction_id: string
  payee: Merchant
  payment_instrument: PaymentInstrument
}

function publicAp2(record: PaymentAp2Record): NonNullable<Payment['ap2']> {
  return { reference: record.reference, transaction_id: record.transaction_id, payee: record.payee, payment_instrument: record.payment_instrument }
}

/** The row of a new payment, as the processor's charge() decided it. */
export function paymentRow(id: string, accountId: string, input: PaymentInput, mandate: MandateRow, outcome: ChargeOutcome, now: string, ap2?: PaymentAp2Record): PaymentRow {
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
    ap2: ap2 === undefined ? null : JSON.stringify(ap2),
  }
}

/**
 * What the conditional update of the mandate leaves on it, once every rule held at that instant:
 * `keep` takes the amount and one use (a charge that succeeded on a multi-use mandate, or is pending);
 * `consume` also marks a single-use mandate consumed (its charge succeeded); `release` gives both back
 * at once (a declined charge: the mandate is only checked and touched).
 */
export type MandateEffect = 'keep' | 'consume' | 'release'

/** Every write of a payment, decided before the first one is made. Both executors apply exactly this. */
export interface PaymentPlan {
  /** The conditional update that checks every rule at write time: it must take effect, or nothing else may. */
  hold: HoldRequest
  /**
   * An AP2 payment's closed mandate, recorded as used, and its nonce, used, in the hold's transaction
   * (AP2 #346). Only the general path applies such a plan.
   */
  ap2?: { record: PaymentAp2Record, agentId: string | undefined } | undefined
  /** A vault token's payment also holds the amount on the token's parent mandate, in the same transaction. */
  parentHold?: HoldRequest | undefined
  effect: MandateEffect
  payment: PaymentRow
  /** The payment as the API answers it. */
  response: Payment
  /** The payment's events: created, then succeeded or failed when the charge decided at once. */
  events: EventsTable[]
  /** Their webhook deliveries, and the settlement of a pending charge. */
  jobs: JobRow[]
  /**
   * A `consume` plan's `mandate.consumed` event and its deliveries, for the mandate as the write left it
   * (the general path passes the row the update returned; a single write, the row it expects).
   */
  consumption(mandate: MandateRow): { events: EventsTable[], jobs: JobRow[] }
}

/** A plan, or the first rule the payment breaks as last read. */
export type Planned = { plan: PaymentPlan, refusal?: undefined } | { plan?: undefined, refusal: AppError }

/** A payment request whose mandate is known: named, or a vault token's (payments/vault-token.ts). */
export type PaymentInput = CreatePaymentInput & { mandate_id: string }

export interface PlanInput {
  ctx: Pick<RequestContext, 'accountId' | 'requestId' | 'agentId'>
  input: PaymentInput
  /** As last read; the hold decides for good. */
  mandate: MandateRow | undefined
  endpoints: Pick<EndpointRow, 'id' | 'events'>[]
  processor: Processor
  now: Date
  /** The verified closed mandate of an AP2 payment (payments/ap2.ts); required on an AP2 mandate. */
  ap2?: PaymentAp2Record | undefined
  /** A vault token's parent mandate, which the payment also draws on (payments/vault-token.ts). */
  parentMandateId?: string | undefined
}

/** The refusal of a payment method the processor does not take (400, before any money rule). */
export function methodRefusal(processor: Processor, method: string): AppError | undefined {
  if (processor.paymentMethods.includes(method)) return undefined
  return errors.parameterInvalid('payment_method', `payment_method must be one of: ${processor.paymentMethods.join(', ')}`)
}

/** The mandate after a `consume` plan's write, had nothing changed it since `mandate` was read. */
export function consumedMandate(mandate: MandateRow, plan: PaymentPlan): MandateRow {
  const now = plan.hold.now
  return { ...mandate, amount_used: mandate.amount_used + plan.hold.amount, uses_count: mandate.uses_count + 1, status: 'consumed', last_payment_at: now, updated_at: now }
}

/**
 * The one place that decides what a payment writes, for every outcome a read of the mandate decides:
 * a refusal (paymentViolation, in the contract's order), or a plan: succeeded, pending (with its
 * settlement job), declined (payment failed, the hold released at once), single-use succeeded (the
 * mandate consumed, with its `mandate.consumed` event). The general path (service.ts) and the single
 * write (single-write.ts) both apply the plan; neither decides anything of its own.
 */
export function planPayment(p: PlanInput): Planned {
  const { ctx, input, mandate, processor } = p
  const unknownMethod = methodRefusal(processor, input.payment_method)
  if (unknownMethod) return { refusal: unknownMethod }
  const now = toTimestamp(p.now)
  // An agent key's hold also requires the mandate to be granted to its agent, in the database.
  const hold: HoldRequest = {
    accountId: ctx.accountId, mandateId: input.mandate_id, amount: input.amount, currency: input.currency, now,
    recurrenceFloor: recurrenceFloor(mandate?.recurrence_frequency ?? null, p.now),
    ...(ctx.agentId !== undefined ? { agentId: ctx.agentId } : {}),
  }
  const violation = paymentViolation(mandate, hold, now)
  if (violation) return { refusal: errors.payment(violation.code, violation.message, violation.param) }
  if (!mandate) throw new Error('paymentViolation refuses a missing mandate')
  // An AP2 mandate pays only with a closed mandate, verified before planning (payments/ap2.ts).
  if (mandate.ap2 !== null && p.ap2 === undefined) {
    return { refusal: errors.payment('ap2_mandate_required', 'This mandate was made from an AP2 open mandate: a payment on it needs ap2.payment_mandate', 'ap2.payment_mandate') }
  }
  if (mandate.ap2 === null && input.ap2 !== undefined) return { refusal: errors.parameterInvalid('ap2', 'ap2.payment_mandate is for mandates made from an AP2 open mandate; this one is not') }
  const id = newId('pay', p.now)
  // charge() only decides, synchronously (docs/processors.md): nothing has left the process yet.
  const outcome = processor.charge({ paymentId: id, amount: input.amount, currency: input.currency, paymentMethod: input.payment_method, protocol: mandate.protocol })
  const payment = paymentRow(id, ctx.accountId, input, mandate, outcome, now, p.ap2)
  const response = toPayment(payment)
  const event = (type: EventType, object: { id: string }): EventInput => ({ accountId: ctx.accountId, type, object, requestId: ctx.requestId, createdAt: now })
  const types: EventType[] = outcome.status === 'pending' ? ['payment.created'] : ['payment.created', outcome.status === 'succeeded' ? 'payment.succeeded' : 'payment.failed']
  const events = eventRows(types.map((type) => event(type, response)))
  const jobs = deliveryJobs(events, p.endpoints)
  if (outcome.status === 'pending') jobs.push(jobRow(settleJob(id, p.now, outcome.settleAfterMs), p.now))
  const effect: MandateEffect = outcome.status === 'failed' ? 'release' : outcome.status === 'succeeded' && mandate.usage === 'single_use' ? 'consume' : 'keep'
  const consumption = (consumed: MandateRow) => {
    const rows = eventRows([event('mandate.consumed', toMandate(consumed, now))])
    return { events: rows, jobs: deliveryJobs(rows, p.endpoints) }
  }
  const ap2 = p.ap2 === undefined ? undefined : { record: p.ap2, agentId: ctx.agentId }
  const parentHold = p.parentMandateId === undefined ? undefined : { ...hold, mandateId: p.parentMandateId, agentId: undefined, recurrenceFloor: now }
  // A single-use mandate is consumed by the hold's own update: one write to its row, on either executor.
  const mandateHold = effect === 'consume' ? { ...hold, consume: true } : hold
  return { plan: { hold: mandateHold, effect, payment, response, events, jobs, consumption, ap2, parentHold } }
}
