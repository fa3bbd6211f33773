import type { MandatesTable } from '../../db/schema.js'
import type { MandateStatus } from './schemas.js'

type MandateState = Pick<MandatesTable,
  'agent_id' | 'status' | 'expires_at' | 'not_before' | 'usage' | 'uses_count' | 'currency' | 'max_amount' | 'budget_amount' | 'amount_used'
  | 'min_amount' | 'max_uses' | 'recurrence_frequency' | 'last_payment_at'>

/** The status a reader sees: an active mandate past expires_at reads expired. */
export function effectiveMandateStatus(mandate: Pick<MandatesTable, 'status' | 'expires_at'>, now: string): MandateStatus {
  if (mandate.status === 'active' && mandate.expires_at <= now) return 'expired'
  return mandate.status as MandateStatus
}

export interface Violation {
  code: string
  message: string
  param?: string
}

/**
 * The first rule a payment breaks, in the contract's order (section 6), or undefined; for an agent key's
 * payment (`agentId`), a mandate not granted to that agent is not found. The database
 * enforces the same rules in one conditional update (repository.hold); this only names the failure.
 */
export function paymentViolation(
  mandate: MandateState | undefined,
  payment: { amount: number, currency: string, agentId?: string | undefined, recurrenceFloor?: string | undefined },
  now: string,
): Violation | undefined {
  // An agent key pays only with the mandates granted to its agent; any other reads as unknown, so that
  // an agent cannot learn which mandates exist.
  if (!mandate || (payment.agentId !== undefined && mandate.agent_id !== payment.agentId)) {
    return { code: 'mandate_not_found', message: 'No such mandate in this account', param: 'mandate_id' }
  }
  const status = effectiveMandateStatus(mandate, now)
  if (status === 'revoked') return { code: 'mandate_revoked', message: 'The mandate has been revoked', param: 'mandate_id' }
  if (status === 'expired') return { code: 'mandate_expired', message: 'The mandate has expired', param: 'mandate_id' }
  if (mandate.not_before !== null && mandate.not_before > now) {
    return { code: 'mandate_not_yet_valid', message: `The mandate is valid from ${mandate.not_before}`, param: 'mandate_id' }
  }
  if (status === 'consumed' || (mandate.usage === 'single_use' && mandate.uses_count > 0)) {
    return { code: 'mandate_consumed', message: 'The single-use mandate has already been used', param: 'mandate_id' }
  }
  if (payment.currency !== mandate.currency) {
    return { code: 'currency_mismatch', message: `The mandate is in ${mandate.currency}, the payment in ${payment.currency}`, param: 'currency' }
  }
  if (payment.amount > mandate.max_amount) {
    return { code: 'amount_exceeds_mandate', message: `amount exceeds the mandate's max_amount of ${mandate.max_amount}`, param: 'amount' }
  }
  if (mandate.amount_used + payment.amount > mandate.budget_amount) {
    const left = Math.max(0, mandate.budget_amount - mandate.amount_used)
    return { code: 'mandate_budget_exceeded', message: `amount exceeds what is left of the mandate's budget (${left})`, param: 'amount' }
  }
  // The AP2 terms (null on plain mandates); param names the open mandate's constraint.
  if (mandate.min_amount !== null && payment.amount < mandate.min_amount) {
    return { code: 'constraint_unsatisfied', message: `amount is below the open mandate's least amount of ${mandate.min_amount}`, param: 'payment.amount_range' }
  }
  if (mandate.max_uses !== null && mandate.uses_count >= mandate.max_uses) {
    return { code: 'constraint_unsatisfied', message: `The open mandate allows ${mandate.max_uses} payments (max_occurrences) and all are made`, param: 'payment.agent_recurrence' }
  }
  if (mandate.recurrence_frequency !== null && mandate.last_payment_at !== null && !(payment.recurrenceFloor !== undefined && mandate.last_payment_at <= payment.recurrenceFloor)) {
    return { code: 'constraint_unsatisfied', message: `The open mandate allows one payment per ${mandate.recurrence_frequency.toLowerCase()} period; the last was at ${mandate.last_payment_at}`, param: 'payment.agent_recurrence' }
  }
  return undefined
}
