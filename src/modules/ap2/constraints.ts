import type { JWK } from 'jose'
import { toTimestamp } from '../../lib/clock.js'
import { normalizeCurrency } from '../../lib/currency.js'
import { isObject, refuse } from './refusal.js'

/**
 * The constraints of an AP2 open Payment Mandate mapped to a Wishpay mandate draft (open-mandate.ts
 * verifies the token and calls mapConstraints and toDraft on the disclosed mandate).
 */

export interface Merchant { id: string, name: string, website?: string }
export interface PaymentInstrument { id: string, type: string, description?: string }

export const RECURRENCE_FREQUENCIES = ['ON_DEMAND', 'DAILY', 'WEEKLY', 'BIWEEKLY', 'MONTHLY', 'QUARTERLY', 'ANNUALLY'] as const
export type RecurrenceFrequency = (typeof RECURRENCE_FREQUENCIES)[number]

/** The least time between two payments under a frequency, as an ISO 8601 duration; null: none (ON_DEMAND). */
export const FREQUENCY_WINDOW: Record<RecurrenceFrequency, string | null> = {
  ON_DEMAND: null, DAILY: 'P1D', WEEKLY: 'P7D', BIWEEKLY: 'P14D', MONTHLY: 'P1M', QUARTERLY: 'P3M', ANNUALLY: 'P1Y',
}

/** A Wishpay mandate as an open Payment Mandate describes it; amounts in integer minor units. */
export interface OpenMandateDraft {
  protocol: 'ap2'
  currency: string
  /** Per-payment cap (payment.amount_range.max; payment.budget.max when there is no range). */
  max_amount: number
  /** Least amount per payment (payment.amount_range.min), null when none. */
  min_amount: number | null
  /** Cap on the sum of payments (payment.budget.max; max_amount when there is no budget). */
  budget_amount: number
  /** payment.agent_recurrence.max_occurrences; null: no cap on the count. */
  max_uses: number | null
  /** payment.agent_recurrence; null when absent (then any number of payments within budget). */
  recurrence: { frequency: RecurrenceFrequency, max_occurrences: number | null, window: string | null } | null
  /** single_use when at most one payment may be made (max_occurrences 1), else multi_use. */
  usage: 'single_use' | 'multi_use'
  /** payment.execution_date.not_before (ISO 8601 UTC), null when none. */
  not_before: string | null
  /** The earliest of the token's `exp` and payment.execution_date.not_after (ISO 8601 UTC). */
  expires_at: string
  /** payment.allowed_payees, null when not constrained; [] (none listed or none disclosed) allows no payee. */
  allowed_payees: Merchant[] | null
  /** payment.allowed_payment_instruments, null when not constrained; [] allows no instrument. */
  allowed_payment_instruments: PaymentInstrument[] | null
  /** payment.reference.conditional_transaction_id (digest of the open Checkout Mandate), null when none. */
  payment_reference: string | null
  /** The public key that must sign the closed Payment Mandates (cnf.jwk). */
  cnf_jwk: JWK
}

const minorAmount = (value: unknown, type: string, member: string): number => {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    return refuse('constraint_invalid', `${type}.${member} must be a non-negative integer in minor units (AP2 #339)`, type)
  }
  return value
}

const currencyOf = (value: unknown, type: string): string => {
  const code = typeof value === 'string' && value.length === 3 ? normalizeCurrency(value) : undefined
  if (code === undefined || code !== value) return refuse('constraint_invalid', `${type}.currency must be an ISO 4217 code`, type)
  return code
}

/** RFC 3339 date-time with Z or an explicit offset: a zone-less time would be read in the server's zone. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/i

function isoTime(value: unknown, type: string, member: string): number | undefined {
  if (value === undefined) return undefined
  const match = typeof value === 'string' ? RFC3339.exec(value) : null
  const [year, month, day] = (match ?? []).slice(1, 4).map(Number) as [number, number, number]
  // Date.parse rolls 2027-02-30 over to March; a date the calendar lacks is refused.
  const real = match !== null && month >= 1 && month <= 12 && new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day
  const at = real ? Date.parse((value as string).toUpperCase()) : Number.NaN
  if (Number.isNaN(at)) return refuse('constraint_invalid', `${type}.${member} must be an RFC 3339 date-time with Z or an offset`, type)
  return at
}

/**
 * An `allowed` list as disclosed: the holder may withhold entries (AP2's selective disclosure), so it
 * holds the disclosed ones. An empty list allows nothing; it never means "not constrained".
 */
function listOf<T>(value: unknown, type: string, required: readonly string[]): T[] {
  if (!Array.isArray(value)) return refuse('constraint_invalid', `${type}.allowed must be an array`, type)
  for (const item of value) {
    if (!isObject(item) || required.some((m) => typeof item[m] !== 'string')) {
      return refuse('constraint_invalid', `each of ${type}.allowed needs ${required.join(' and ')} (undisclosed entries are left out)`, type)
    }
  }
  return value as T[]
}

export interface Mapped {
  currency?: string
  range?: { max: number, min: number | null }
  budget?: number
  recurrence?: OpenMandateDraft['recurrence']
  notBefore?: number
  notAfter?: number
  payees?: Merchant[]
  instruments?: PaymentInstrument[]
  reference?: string
}

export function mapConstraints(mandate: Record<string, unknown>): Mapped {
  const list = mandate.constraints ?? []
  if (!Array.isArray(list)) return refuse('mandate_malformed', 'constraints must be an array', 'constraints')
  const out: Mapped = {}
  const seen = new Set<string>()
  const sameCurrency = (code: string, type: string) => {
    if (out.currency !== undefined && out.currency !== code) refuse('constraint_invalid', `${type}.currency ${code} differs from ${out.currency}`, type)
    out.currency = code
  }
  for (const c of list) {
    if (!isObject(c) || typeof c.type !== 'string') return refuse('constraint_invalid', 'Every constraint is an object with a string type', 'constraints')
    const type = c.type
    if (seen.has(type)) refuse('constraint_invalid', `${type} appears more than once`, type)
    seen.add(type)
    switch (type) {
      case 'payment.amount_range': {
        sameCurrency(currencyOf(c.currency, type), type)
        const max = minorAmount(c.max, type, 'max')
        const min = c.min === undefined ? null : minorAmount(c.min, type, 'min')
        if (max === 0) refuse('constraint_invalid', `${type}.max must be above 0`, type)
        if (min !== null && min > max) refuse('constraint_invalid', `${type}.min is above its max`, type)
        out.range = { max, min }
        break
      }
      case 'payment.budget': {
        sameCurrency(currencyOf(c.currency, type), type)
        const max = minorAmount(c.max, type, 'max')
        if (max === 0) refuse('constraint_invalid', `${type}.max must be above 0`, type)
        out.budget = max
        break
      }
      case 'payment.agent_recurrence': {
        const frequency = c.frequency
        if (typeof frequency !== 'string' || !(RECURRENCE_FREQUENCIES as readonly string[]).includes(frequency)) {
          return refuse('constraint_invalid', `${type}.frequency must be one of ${RECURRENCE_FREQUENCIES.join(', ')}`, type)
        }
        let max: number | null = null
        if (c.max_occurrences !== undefined) {
          if (typeof c.max_occurrences !== 'number' || !Number.isSafeInteger(c.max_occurrences) || c.max_occurrences < 1) {
            return refuse('constraint_invalid', `${type}.max_occurrences must be a positive integer`, type)
          }
          max = c.max_occurrences
        }
        const f = frequency as RecurrenceFrequency
        out.recurrence = { frequency: f, max_occurrences: max, window: FREQUENCY_WINDOW[f] }
        break
      }
      case 'payment.execution_date': {
        const notBefore = isoTime(c.not_before, type, 'not_before')
        const notAfter = isoTime(c.not_after, type, 'not_after')
        if (notBefore !== undefined && notAfter !== undefined && notBefore > notAfter) refuse('constraint_invalid', `${type}.not_before is after not_after`, type)
        if (notBefore !== undefined) out.notBefore = notBefore
        if (notAfter !== undefined) out.notAfter = notAfter
        break
      }
      case 'payment.allowed_payees':
        out.payees = listOf<Merchant>(c.allowed, type, ['id', 'name'])
        break
      case 'payment.allowed_payment_instruments':
        out.instruments = listOf<PaymentInstrument>(c.allowed, type, ['id', 'type'])
        break
      case 'payment.reference':
        if (typeof c.conditional_transaction_id !== 'string' || c.conditional_transaction_id.length === 0) {
          return refuse('constraint_invalid', `${type}.conditional_transaction_id must be a string`, type)
        }
        out.reference = c.conditional_transaction_id
        break
      default:
        // payment.allowed_pisps among them: Wishpay initiates no payment through a PISP, so it cannot evaluate it.
        return refuse('constraint_unsupported', `Constraint type '${type}' is not supported; AP2 requires an unknown constraint to fail`, type)
    }
  }
  return out
}

export function toDraft(m: Mapped, exp: number | undefined, cnf: JWK): OpenMandateDraft {
  const cap = m.range?.max ?? m.budget
  if (cap === undefined || m.currency === undefined) {
    return refuse('mandate_unbounded', 'The mandate bounds no amount: it needs payment.amount_range or payment.budget', 'constraints')
  }
  const ends = [exp === undefined ? undefined : exp * 1000, m.notAfter].filter((v) => v !== undefined)
  if (ends.length === 0) return refuse('mandate_unbounded', 'The mandate never ends: it needs exp or payment.execution_date.not_after', 'exp')
  const budget = m.budget ?? cap
  const maxUses = m.recurrence?.max_occurrences ?? null
  return {
    protocol: 'ap2',
    currency: m.currency,
    max_amount: Math.min(cap, budget),
    min_amount: m.range?.min ?? null,
    budget_amount: budget,
    max_uses: maxUses,
    recurrence: m.recurrence ?? null,
    usage: maxUses === 1 ? 'single_use' : 'multi_use',
    not_before: m.notBefore === undefined ? null : new Date(m.notBefore).toISOString(),
    expires_at: new Date(Math.min(...ends)).toISOString(),
    allowed_payees: m.payees ?? null,
    allowed_payment_instruments: m.instruments ?? null,
    payment_reference: m.reference ?? null,
    cnf_jwk: cnf,
  }
}

/** An ISO 8601 duration of FREQUENCY_WINDOW as calendar steps. */
const WINDOW_STEPS: Record<string, { days?: number, months?: number }> = {
  P1D: { days: 1 }, P7D: { days: 7 }, P14D: { days: 14 }, P1M: { months: 1 }, P3M: { months: 3 }, P1Y: { months: 12 },
}

/**
 * The earliest time the last payment of a recurring mandate may have been made for another to be
 * allowed now: now less one window (payment.agent_recurrence.frequency, which the AP2 SDK does not
 * check). Months are calendar months in UTC, the day clamped to the month's last (on 31 May the floor
 * is 30 April). Without a window (no recurrence, ON_DEMAND) it is now itself.
 */
export function recurrenceFloor(frequency: string | null, now: Date): string {
  const window = frequency === null ? null : FREQUENCY_WINDOW[frequency as RecurrenceFrequency] ?? null
  const step = window === null ? undefined : WINDOW_STEPS[window]
  // Now itself is formatted as every write's now is; a floor in the past keeps toISOString, not to push
  // one of toTimestamp's two minutes out.
  if (!step) return toTimestamp(now)
  if (step.days !== undefined) return new Date(now.getTime() - step.days * 86_400_000).toISOString()
  const year = now.getUTCFullYear()
  const month = now.getUTCMonth() - step.months!
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate()
  const floor = new Date(now.getTime())
  floor.setUTCFullYear(year, month, Math.min(now.getUTCDate(), lastDay))
  return floor.toISOString()
}
